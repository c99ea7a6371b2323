package analysis

import (
	"testing"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/stats"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each kind of warning says what Point.Warnings said before warnings were
// typed, word for word, from its own figures.
func TestWarningSaysItsWords(t *testing.T) {
	for _, tc := range []struct {
		w    Warning
		want string
	}{
		{Warning{Kind: WarnFewTailSamples, Metrics: []string{"TPOT"}, N: 420},
			"TPOT p99 from 420 requests: fewer than 10 beyond it"},
		{Warning{Kind: WarnSketched, Metrics: []string{"TTFT", "ITL"}, RelErr: 0.005},
			"TTFT, ITL percentiles from a sketch (a replication measured more than Config.ExactSamples requests): each within 0.5 % of the exact value, the interval across replications rather than bootstrapped"},
		{Warning{Kind: WarnFailuresHideTail, OfferedP99: 30000, OKP99: 812.4},
			"TTFT p99 over every offered request, 30000 ms, against 812 ms over the successful ones: failures (timeouts, rejections, requests still waiting) hide the tail"},
		{Warning{Kind: WarnClientBacklog, Backlog: 12.6, N: 3},
			"the client queue (Config.MaxConcurrency) grew by 13 requests over the window on average, and 3 measured requests were never sent: TTFT counts from the send, as vLLM's does, so attainment and goodput here do not see that wait (Summary.ClientWait does)"},
		{Warning{Kind: WarnOverloadedRuns, N: 2, Reps: 5},
			"overloaded: 2 of 5 replications passed Config.MaxBacklog and stopped early"},
		{Warning{Kind: WarnOneReplication}, "one replication: no intervals"},
		{Warning{Kind: WarnNothingMeasured}, "no measured requests: no attainment, and no part in the knee"},
		{Warning{Kind: WarnEmptyRuns, N: 1, Reps: 3},
			"no measured requests in 1 of 3 replications: attainment from the other 2"},
		{Warning{Kind: WarnNearCapacity, Utilisation: 0.93, Capacity: 3.5, Saturation: Backlogged},
			"at 93 % of the serving capacity (3.5 req/s): queues grow as 1/(1−ρ), and a backlogged label rests on how long the window ran"},
		{Warning{}, "warning of kind WarningKind(0)"},
		{Warning{Kind: 200}, "warning of kind WarningKind(200)"},
	} {
		assert.Equal(t, tc.want, tc.w.String(), "%v", tc.w.Kind)
	}
	assert.Equal(t, "near capacity", WarnNearCapacity.String())
	assert.Equal(t, "few tail samples", WarnFewTailSamples.String())
}

// A point carries each caveat twice, in the same order: in words
// (Warnings, as before) and as a typed value with its figures
// (TypedWarnings), each value saying its words.
func TestPointWarningsAreTyped(t *testing.T) {
	// An overloaded replication whose client queue grew by 4 and that
	// pooled 5 TTFTs, beside one that measured nothing, at 95 % of the
	// serving capacity.
	overloaded := sim.Summary{Offered: 10, Window: 10 * time.Second, Overloaded: true, ClientHeldAtEnd: 4}
	overloaded.Samples.TTFT = []float64{100, 120, 140, 160, 180}
	overloaded.TTFT = stats.Dist{N: 5}
	empty := sim.Summary{Offered: 3, Window: 10 * time.Second}
	empty.Status[sim.StatusUnfinished] = 3
	p := Sweep{Confidence: 0.95, Capacity: 1}.point(0.95, []sim.Summary{overloaded, empty})
	require.Equal(t, []Warning{
		{Kind: WarnFewTailSamples, Metrics: []string{"TTFT"}, N: 5},
		{Kind: WarnClientBacklog, Backlog: 2},
		{Kind: WarnOverloadedRuns, N: 1, Reps: 2},
		{Kind: WarnEmptyRuns, N: 1, Reps: 2},
		{Kind: WarnNearCapacity, Utilisation: 0.95, Capacity: 1, Saturation: Overloaded},
	}, p.TypedWarnings)
	assert.Equal(t, []string{
		"TTFT p99 from 5 requests: fewer than 10 beyond it",
		"the client queue (Config.MaxConcurrency) grew by 2 requests over the window on average, and 0 measured requests were never sent: TTFT counts from the send, as vLLM's does, so attainment and goodput here do not see that wait (Summary.ClientWait does)",
		"overloaded: 1 of 2 replications passed Config.MaxBacklog and stopped early",
		"no measured requests in 1 of 2 replications: attainment from the other 1",
		"at 95 % of the serving capacity (1 req/s): queues grow as 1/(1−ρ), and a overloaded label rests on how long the window ran",
	}, p.Warnings)

	// One replication that kept TTFT in a sketch (0.5 %), its p99 over
	// every offered request twice that over the successful ones.
	sketched := sim.Summary{Offered: 4, Window: 10 * time.Second}
	sketched.Status[sim.StatusOK] = 4
	sketched.TTFT = stats.Dist{N: 4, Median: 100, P90: 150, P99: 200, RelErr: 0.005}
	sketched.TTFTOffered = stats.Dist{N: 4, Median: 100, P90: 300, P99: 400, RelErr: 0.005}
	p = Sweep{Confidence: 0.95}.point(1, []sim.Summary{sketched})
	require.Equal(t, []Warning{
		{Kind: WarnSketched, Metrics: []string{"TTFT", "TTFT over every offered request"}, RelErr: 0.005},
		{Kind: WarnFailuresHideTail, OfferedP99: 400, OKP99: 200},
		{Kind: WarnOneReplication},
	}, p.TypedWarnings)
	assert.Equal(t, []string{
		"TTFT, TTFT over every offered request percentiles from a sketch (a replication measured more than Config.ExactSamples requests): each within 0.5 % of the exact value, the interval across replications rather than bootstrapped",
		"TTFT p99 over every offered request, 400 ms, against 200 ms over the successful ones: failures (timeouts, rejections, requests still waiting) hide the tail",
		"one replication: no intervals",
	}, p.Warnings)

	p = Sweep{Confidence: 0.95}.point(1, []sim.Summary{empty})
	assert.Equal(t, []Warning{{Kind: WarnOneReplication}, {Kind: WarnNothingMeasured}}, p.TypedWarnings)
}

// Each curve-level kind says what Curve.Warnings said before they were
// typed, word for word, from its own figures.
func TestCurveWarningSaysItsWords(t *testing.T) {
	for _, tc := range []struct {
		w    Warning
		want string
	}{
		{Warning{Kind: WarnKneeCensored, Knee: Knee{Censored: AboveHighest, Target: 0.95, LastMet: 3.5}},
			"every measured load meets the 0.95 attainment target: the knee is above 3.5"},
		{Warning{Kind: WarnWideKneeBracket, Knee: Knee{LastMet: 1, FirstMiss: 2.5}, Unit: "req/s"},
			"the knee is interpolated between 1 and 2.5 req/s, more than a factor 2 apart: add loads between them"},
		{Warning{Kind: WarnUnsteadyMeetsTarget, Load: 2.25, Saturation: Backlogged},
			"load 2.25 meets the target but is backlogged: its window is no steady state"},
		{Warning{Kind: WarnClassBinds, Class: "chat", Target: 0.95, Load: 1.75, Unit: "req/s"},
			`class "chat" binds first: its own attainment meets the 0.95 target up to 1.75 req/s`},
		{Warning{Kind: WarnClassBindsBelow, Class: "batch", Target: 0.9, Load: 0.5, Unit: "req/s"},
			`class "batch" binds first: its own attainment misses the 0.90 target already at 0.5 req/s, the lowest load`},
		{Warning{Kind: WarnModelFragile, Declared: ModelError{Scale: 0.1}, KneeRange: Range{Lo: 0.5, Hi: 2.25, LoBelow: true}, Unit: "req/s"},
			"the knee moves across the model band (step times ±10 %) over [< 0.5, 2.25] req/s: the result rests on the cost model's step times; measure them (costmodel.Fit, Table) before trusting the knee"},
		{Warning{Kind: WarnModelFragile, Declared: ModelError{Scale: 0.1}, KneeRange: Range{Lo: 1, Hi: 2}, Unit: "req/s", LargestStep: 135 * time.Millisecond, ITLBound: 150 * time.Millisecond},
			"the knee moves across the model band (step times ±10 %) over [1, 2] req/s: the largest step this configuration can form, 135ms, is 90 % of the 150ms ITL bound, so a few percent of cost error fails every request that meets such a step; a smaller token budget or batch shrinks that step, a chunk cap makes it rare (several prompts must then prefill at once to form it)"},
	} {
		assert.Equal(t, tc.want, tc.w.String(), "%v", tc.w.Kind)
	}
	assert.Equal(t, "model fragile", WarnModelFragile.String())
	assert.Equal(t, "knee censored", WarnKneeCensored.String())
}

// A curve's own caveats are values too, in the order of its words.
func TestCurveWarningsAreTyped(t *testing.T) {
	// Two loads that both meet the target, the second backlogged: the
	// knee is above the highest.
	met := stats.Interval{Center: 1, Lo: 1, Hi: 1}
	c := Curve{Target: 0.95, Confidence: 0.95, Points: []Point{
		{Load: 1, Attainment: met, Goodput: met, Saturation: Stable, Runs: make([]sim.Summary, 2)},
		{Load: 2, Attainment: met, Goodput: met, Saturation: Backlogged, Runs: make([]sim.Summary, 2)},
	}}
	c.analyse()
	require.Equal(t, []Warning{
		{Kind: WarnKneeCensored, Knee: c.Knee},
		{Kind: WarnUnsteadyMeetsTarget, Load: 2, Saturation: Backlogged},
	}, c.TypedWarnings)
	assert.Equal(t, AboveHighest, c.Knee.Censored)
	require.Len(t, c.Warnings, 2)
	for i, w := range c.TypedWarnings {
		assert.Equal(t, w.String(), c.Warnings[i])
	}
	assert.Equal(t, "load 2 meets the target but is backlogged: its window is no steady state", c.Warnings[1])
	// Analysing again gives the same caveats, not twice as many.
	c.analyse()
	assert.Len(t, c.TypedWarnings, 2)
}
