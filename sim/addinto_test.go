package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// TestAddIntoEqualsAdd holds internal/addinto's route (send writes each
// request into the single replica's engine's record of it in place, and
// the engine's commit adds it) to its twin, Engine.Add of a Request built
// and copied: the Atlas default and each regime at its small size give
// the same bytes, the summary and every record, with the route off
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
	routed := 0
	for _, rn := range runs {
		t.Run(rn.name, func(t *testing.T) {
			cfg, src := rn.build(t)
			r, err := newRunner(cfg, src(), nil)
			require.NoError(t, err)
			if r.staged != nil {
				routed++
			} else {
				require.True(t, r.fleet, "a single replica takes the route")
			}
			a, _, err := runSourceScenario(cfg, src())
			require.NoError(t, err)
			noAddInto = true
			defer func() { noAddInto = false }()
			r, err = newRunner(cfg, src(), nil)
			require.NoError(t, err)
			require.Nil(t, r.staged, "the switch turns the route off")
			b, _, err := runSourceScenario(cfg, src())
			require.NoError(t, err)
			sameBytes(t, b.text, a.text)
		})
	}
	assert.GreaterOrEqual(t, routed, 4, "the single replicas take the route")
}
