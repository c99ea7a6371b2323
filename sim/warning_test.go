package sim

import (
	"testing"
	"time"

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
	overloaded := Summary{Offered: 10, Window: 10 * time.Second, Overloaded: true, ClientHeldAtEnd: 4}
	overloaded.Samples.TTFT = []float64{100, 120, 140, 160, 180}
	overloaded.TTFT = Dist{N: 5}
	empty := Summary{Offered: 3, Window: 10 * time.Second}
	empty.Status[StatusUnfinished] = 3
	p := Sweep{Confidence: 0.95, Capacity: 1}.point(0.95, []Summary{overloaded, empty})
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
	sketched := Summary{Offered: 4, Window: 10 * time.Second}
	sketched.Status[StatusOK] = 4
	sketched.TTFT = Dist{N: 4, Median: 100, P90: 150, P99: 200, RelErr: 0.005}
	sketched.TTFTOffered = Dist{N: 4, Median: 100, P90: 300, P99: 400, RelErr: 0.005}
	p = Sweep{Confidence: 0.95}.point(1, []Summary{sketched})
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

	p = Sweep{Confidence: 0.95}.point(1, []Summary{empty})
	assert.Equal(t, []Warning{{Kind: WarnOneReplication}, {Kind: WarnNothingMeasured}}, p.TypedWarnings)
}
