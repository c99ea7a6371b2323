package analysis

import (
	"testing"
	"time"

	"github.com/servesim/servesim/internal/testlong"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Poisson thinning: arrivals of rate λ routed uniformly at random to N
// replicas are N independent Poisson streams of rate λ/N, so each replica
// behaves as one alone at λ/N and the fleet's knee is N times one
// replica's. Round robin gives each replica Erlang-N gaps, smoother than
// Poisson: its knee is at least Random's.
func TestRandomRoutingThinsPoisson(t *testing.T) {
	testlong.Skip(t, "three sweeps of 5 loads × 5 replications")
	sweep := func(n int, r sim.Router) *Curve {
		loads := []float64{1.6, 1.8, 2.0, 2.2, 2.4}
		for i := range loads {
			loads[i] *= float64(n)
		}
		s := Sweep{
			Config:   sim.Config{Window: sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}},
			Workload: Poisson(workload.Fixed(2000, 200)),
			Grid:     Grid{Loads: loads}, Reps: 5,
		}
		if n > 1 {
			s.Config.Fleet = sim.Fleet{Replicas: sim.Copies(n, sim.ReplicaConfig{}), Router: r}
		}
		c, err := s.Run()
		require.NoError(t, err)
		require.True(t, c.Knee.Found, "%d replicas, %T: %s", n, r, c.Knee.Reason())
		return c
	}
	one := sweep(1, nil).Knee.Load
	random := sweep(4, sim.Random{}).Knee.Load
	rr := sweep(4, sim.RoundRobin{}).Knee.Load
	t.Logf("knee: one replica %v; 4 × Random %v (÷4 = %.3f); 4 × RoundRobin %v", one, random, random.Center/4, rr)
	assert.True(t, random.Center/4 >= one.Lo && random.Center/4 <= one.Hi,
		"4 replicas under Random: knee/4 %.3f outside one replica's interval %v", random.Center/4, one)
	assert.GreaterOrEqual(t, rr.Center, random.Center, "round robin smooths each replica's arrivals")
}
