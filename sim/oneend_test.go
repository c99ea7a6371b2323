package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// TestOneEndIsSmall holds a single replica that keeps its step end as
// the one end (stepEnds.one) to the same run with the end kept as a
// small fleet's are (twins.smallOneEnd), byte for byte, every record and
// the summary, the checked runs holding each replica's end to its
// engine's move at every event (checkEnds): over the random scenarios
// (a single replica, fleets, autoscalers adding replicas) and the
// regimes' small workloads.
func TestOneEndIsSmall(t *testing.T) {
	t.Parallel()
	endsAreTheTwin(t, twins{smallOneEnd: true}, "runs of a single replica kept as the one end",
		func(fast, slow *runner) bool {
			require.False(t, slow.ends.one)
			return fast.ends.one
		})
}

// TestThirdEndIsTheScan holds a small fleet that keeps its third
// earliest step end (stepEnds.ok3) to the same run that finds a second
// it lost by a scan (twins.noThirdEnd), as TestOneEndIsSmall does.
// TestStepEndsIsAnOrderedSet holds the kept second and third to a map.
func TestThirdEndIsTheScan(t *testing.T) {
	t.Parallel()
	endsAreTheTwin(t, twins{noThirdEnd: true}, "runs of a small fleet of three or more",
		func(fast, slow *runner) bool {
			require.True(t, slow.ends.noThird)
			return fast.ends.small && !fast.ends.one && len(fast.reps) > 2
		})
}

// endsAreTheTwin runs the random scenarios and the regimes' small
// workloads as they run and with tw, and holds the two to the same
// bytes, every record and the summary; took tells whether a run took
// the path, which some must.
func endsAreTheTwin(t *testing.T, tw twins, what string, took func(fast, slow *runner) bool) {
	t.Helper()
	n := 0
	check := func(name string, cfg Config, src func() workload.Source) {
		t.Helper()
		if took(sameAsTwin(t, tw, name, cfg, src)) {
			n++
		}
	}
	scenariosAndRegimes(t, check)
	t.Logf("%d %s", n, what)
	require.Positive(t, n)
}

// sameAsTwin runs cfg on src as it runs and with tw, holds the two to the
// same bytes, every record and the summary, and returns the two runners.
func sameAsTwin(t *testing.T, tw twins, name string, cfg Config, src func() workload.Source) (fast, slow *runner) {
	t.Helper()
	a, ar, err := runSourceScenario(cfg, src())
	require.NoError(t, err, name)
	b, br, err := runSourceScenarioWith(cfg, src(), tw)
	require.NoError(t, err, name)
	sameBytes(t, b.text, a.text)
	return ar, br
}
