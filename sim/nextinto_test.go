package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// TestNextIntoEqualsNext holds internal/nextinto's route (a built-in
// source writes each request into the runner's slot in place) to its
// twin, the source's Next by value, which every other Source takes:
// each regime at its small size gives the same bytes, the summary and
// every record, with the route off (noNextInto). The regimes whose
// source is a Generator take the route (checked, so that the test
// compares two paths).
func TestNextIntoEqualsNext(t *testing.T) {
	t.Parallel()
	routed := 0
	for _, rg := range regimes {
		t.Run(rg.name, func(t *testing.T) {
			cfg, src := rg.build(t, rg.small)
			if in := newIntake(cfg, src()); in.fill != nil {
				routed++
			}
			a, _, err := runSourceScenario(cfg, src())
			require.NoError(t, err)
			b, br, err := runSourceScenarioWith(cfg, src(), twins{noNextInto: true})
			require.NoError(t, err)
			require.Nil(t, br.fill, "the switch turns the route off")
			sameBytes(t, b.text, a.text)
		})
	}
	assert.Positive(t, routed, "some regime's source takes the route")
}

// TestNextIntoOnlyBuiltIn: a Generator has the route; the same generator
// behind a Source of the user's (which hides it) has not, and the runner
// calls its Next, giving the same bytes.
func TestNextIntoOnlyBuiltIn(t *testing.T) {
	gen := func() *workload.Generator {
		g, err := workload.NewPoisson(7, 20, 300, workload.Fixed(500, 50))
		require.NoError(t, err)
		return g
	}
	cfg := Config{Seed: 7}
	require.NotNil(t, newIntake(cfg, gen()).fill)
	require.Nil(t, newIntake(cfg, hidden{gen()}).fill)
	a, _, err := runSourceScenario(cfg, gen())
	require.NoError(t, err)
	b, _, err := runSourceScenario(cfg, hidden{gen()})
	require.NoError(t, err)
	sameBytes(t, b.text, a.text)
}

// hidden is a user's Source: it hides the built-in source it wraps.
type hidden struct{ src workload.Source }

func (h hidden) Next() (workload.Request, error) { return h.src.Next() }
