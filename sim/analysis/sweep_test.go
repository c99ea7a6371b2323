package analysis

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

func atlasSweep() Sweep {
	return Sweep{
		Config:   sim.Config{Window: sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}},
		Workload: atlasWorkload,
		Grid:     Grid{Start: 0.5},
		Reps:     4,
	}
}

func dumpCurve(c *Curve) string {
	s := ""
	for _, p := range c.Points {
		s += fmt.Sprintf("load %.3f goodput %v attain %v ttft99 %v itl99 %v %v %v\n", p.Load, p.Goodput, p.Attainment, p.TTFT.P99, p.ITL.P99, p.Saturation, p.Warnings)
	}
	return s + fmt.Sprintf("knee %+v\npeak %+v\ncollapse %+v\nwarn %v\n", c.Knee, c.Peak, c.Collapse, c.Warnings)
}

func TestSweepAtlasFindsTheKnee(t *testing.T) {
	start := time.Now()
	c, err := atlasSweep().Run()
	require.NoError(t, err)
	t.Log(time.Since(start))
	t.Log("\n" + dumpCurve(c))
	assert.True(t, c.Knee.Found)
}

// Saturation labels follow the backlog: well below the knee the replica is
// stable; at 3.5 req/s, past the 2.69 req/s the Atlas replica can serve at
// 2,000/200 tokens (6.25·X decode steps of 45 ms plus X prefills of 90 ms a
// second), the backlog grows by ~0.8 req/s and the point is overloaded.
func TestSaturationLabels(t *testing.T) {
	s := atlasSweep()
	s.Grid = Grid{Loads: []float64{1, 3.5}}
	c, err := s.Run()
	require.NoError(t, err)
	assert.Equal(t, Stable, c.Points[0].Saturation)
	assert.Equal(t, Overloaded, c.Points[1].Saturation)
	assert.Less(t, c.Points[1].Throughput.Center, 2.8)
}

func TestSweepValidateNamesTheField(t *testing.T) {
	_, err := Sweep{}.Run()
	require.Error(t, err)
	for _, f := range []string{"Sweep.Workload", "Sweep.Grid", "Window.Horizon"} {
		assert.ErrorContains(t, err, f)
	}
	s := atlasSweep()
	s.Grid = Grid{Loads: []float64{1, -2}}
	assert.ErrorContains(t, s.Validate(), "Sweep.Grid.Loads[1]")
}

// Sweep.Observe hands every run its own observer; observing changes no
// result.
func TestSweepObservesEveryRun(t *testing.T) {
	s := atlasSweep()
	s.Grid = Grid{Loads: []float64{1, 2}}
	s.Reps = 2
	plain, err := s.Run()
	require.NoError(t, err)
	seen := map[string]int{}
	var mu sync.Mutex
	s.Observe = func(load float64, rep int) sim.Observer {
		key := fmt.Sprintf("%v/%d", load, rep)
		return sim.ObserverFunc(func(r *sim.Record) {
			mu.Lock()
			seen[key]++
			mu.Unlock()
		})
	}
	observed, err := s.Run()
	require.NoError(t, err)
	sameCurve(t, plain, observed)
	require.Len(t, seen, 4)
	for _, p := range observed.Points {
		for rep, run := range p.Runs {
			assert.GreaterOrEqual(t, seen[fmt.Sprintf("%v/%d", p.Load, rep)], run.Offered)
		}
	}
}

// Replications that fail alike report the error once, with their count.
func TestSweepReportsAnErrorOnce(t *testing.T) {
	bad := WorkloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
		return nil, errors.New("workload: absurd")
	})
	_, err := Sweep{Config: sim.Config{Window: sim.Window{Horizon: time.Minute}}, Workload: bad, Grid: Grid{Loads: []float64{1}}}.Run()
	require.Error(t, err)
	assert.Equal(t, "sim: sweep at 1 requests/s: workload: absurd (in 5 replications)", err.Error())
}
