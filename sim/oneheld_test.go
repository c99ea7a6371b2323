package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// TestOneHeldIsItsOwn holds a single replica that takes the runner's
// integral of the requests in the system for its own (oneHeld) to the
// same run with the replica integrating what it holds itself
// (twins.ownHeldArea), byte for byte, every record and the summary (its
// Replicas' MeanHeld and Imbalance.Held), and the summaries Summarize
// recomputes from the records both ways: over the random scenarios of a
// single replica (windows with and without a horizon, drains, a detected
// warm-up, overloads with MaxBacklog, a concurrency cap, a gateway,
// timeouts, errors, speculation, classes) and the regimes' small
// workloads. A fleet integrates each replica's own (checked).
func TestOneHeldIsItsOwn(t *testing.T) {
	t.Parallel()
	one, held := 0, 0
	check := func(name string, cfg Config, src func() workload.Source) {
		t.Helper()
		a, ar, err := runSourceScenario(cfg, src())
		require.NoError(t, err, name)
		b, br, err := runSourceScenarioWith(cfg, src(), twins{ownHeldArea: true})
		require.NoError(t, err, name)
		require.False(t, br.oneHeld, name)
		require.Equal(t, !ar.fleet, ar.oneHeld, name)
		sameBytes(t, b.text, a.text)
		if !ar.oneHeld {
			return
		}
		one++
		if a.sum.Replicas[0].MeanHeld > 0 {
			held++
		}
		summarizedAlike(t, name, cfg, a.recs, twins{ownHeldArea: true})
	}
	scenariosAndRegimes(t, check)
	t.Logf("%d runs of a single replica, %d of them holding requests in the window", one, held)
	require.Positive(t, held)
}

// runTwinsAlike runs cfg's workload (a source made new by src) with the
// twins fast, then slow, and requires both runs to end without error and
// to write the same bytes.
func runTwinsAlike(t *testing.T, name string, cfg Config, src func() workload.Source, fast, slow twins) (a scenarioRun, ar, br *runner) {
	t.Helper()
	a, ar, err := runSourceScenarioWith(cfg, src(), fast)
	require.NoError(t, err, name)
	b, br, err := runSourceScenarioWith(cfg, src(), slow)
	require.NoError(t, err, name)
	sameBytes(t, b.text, a.text)
	return a, ar, br
}

// summarizedAlike requires Summarize of a run's records (of cfg, its
// tokens' instants not kept) to give the same summary with the twins tw
// on, its steps aside.
func summarizedAlike(t *testing.T, name string, cfg Config, recs []Record, tw twins) {
	t.Helper()
	cfg.KeepTokens = false // the records keep no instants
	fast, err := Summarize(cfg, recs)
	require.NoError(t, err, name)
	slow, err := summarizeWith(cfg, recs, tw)
	require.NoError(t, err, name)
	require.Equal(t, stepless(slow), stepless(fast), name)
}

// scenariosAndRegimes calls check with the random scenarios, 400 (100
// with -short), and every regime's small workload: a source made new
// for each call of src.
func scenariosAndRegimes(t *testing.T, check func(name string, cfg Config, src func() workload.Source)) {
	t.Helper()
	seeds := uint64(400)
	if testing.Short() {
		seeds = 100
	}
	for seed := range seeds {
		cfg, reqs := decodeScenario(randomScenario(seed))
		check("scenario", cfg, func() workload.Source { src := append(list(nil), reqs...); return &src })
	}
	for _, rg := range regimes {
		cfg, src := rg.build(t, rg.small)
		check(rg.name, cfg, src)
	}
}
