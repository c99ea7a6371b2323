package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// TestAddIntoEqualsAdd holds internal/addinto's route (send writes each
// request into the engine's record of it in place, the engine of the
// replica it chose, and the engine's commit adds it; a disaggregated
// fleet's prefill replicas take their requests so too) to its twin,
// Engine.Add of a Request built and copied: the Atlas default and each
// regime at its small size (single replicas, fleets behind LeastLoaded
// and PrefixAffinity, a disaggregated fleet, tiers, an autoscaled fleet)
// give the same bytes, the summary and every record, with the route off
// (noAddInto). (The engine's TestAddIntoEqualsAdd and FuzzEngine hold the
// commit to Add request by request.)
func TestAddIntoEqualsAdd(t *testing.T) {
	type run struct {
		name  string
		build func(t *testing.T) (Config, func() workload.Source)
	}
	runs := []run{{"Atlas", func(t *testing.T) (Config, func() workload.Source) {
		return Config{Seed: 7, Timeout: 90e9}, func() workload.Source {
			g, err := workload.NewPoisson(7, 3, 600, workload.Fixed(2000, 200))
			require.NoError(t, err)
			return g
		}
	}}}
	for _, rg := range regimes {
		runs = append(runs, run{rg.name, func(t *testing.T) (Config, func() workload.Source) { return rg.build(t, rg.small) }})
	}
	routed, fleets := 0, 0
	for _, rn := range runs {
		t.Run(rn.name, func(t *testing.T) {
			cfg, src := rn.build(t)
			a, ra, err := runSourceScenario(cfg, src())
			require.NoError(t, err)
			staged := 0
			for i := range ra.reps {
				if ra.reps[i].staged != nil {
					staged++
				}
			}
			require.Positive(t, staged, "a replica that took a request takes the route")
			routed++
			if staged > 1 {
				fleets++
			}
			noAddInto = true
			defer func() { noAddInto = false }()
			b, rb, err := runSourceScenario(cfg, src())
			require.NoError(t, err)
			for i := range rb.reps {
				require.Nil(t, rb.reps[i].staged, "the switch turns the route off")
			}
			sameBytes(t, b.text, a.text)
		})
	}
	assert.GreaterOrEqual(t, routed, 10, "the runs take the route")
	assert.GreaterOrEqual(t, fleets, 5, "the fleets' replicas take the route")
}
