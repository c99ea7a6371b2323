package sim

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
)

// keep collects every record a run hands its observer (the pointer is
// valid only during the call, so each is copied with its token instants).
type keep []Record

func (k *keep) Observe(r *Record) {
	c := *r
	c.Tokens = slices.Clone(r.Tokens)
	*k = append(*k, c)
}

// stepless prints a summary without the fields records cannot give
// (Summarize's doc lists them), NaN as NaN, so that two summaries compare
// field for field.
func stepless(s Summary) string {
	s.Steps = StepMix{}
	s.Speculation = SpecSummary{}
	s.Imbalance.Busy = 0
	s.Replicas = slices.Clone(s.Replicas)
	for i := range s.Replicas {
		s.Replicas[i].Busy, s.Replicas[i].KVOccupancy = 0, 0
	}
	return fmt.Sprintf("%+v", s)
}

// summarizeCase runs cfg on src and returns the run's summary and the one
// Summarize computes from its records.
func summarizeCase(t *testing.T, cfg Config, src workload.Source) (run, replayed Summary) {
	t.Helper()
	var recs keep
	run, err := Run(cfg, src, &recs)
	require.NoError(t, err)
	// Records in any order give the same summary.
	slices.Reverse(recs)
	replayed, err = Summarize(cfg, recs)
	require.NoError(t, err)
	return run, replayed
}

// A summary recomputed from a run's records equals the run's own field
// for field, percentiles included, across windows, overload, warm-up
// detection, fleets, classes, a concurrency cap, timeouts and
// speculation; only what comes from steps differs.
func TestSummarizeEqualsTheRunsSummary(t *testing.T) {
	atlas := Config{KeepTokens: true, Window: Window{Warmup: 30 * time.Second, Horizon: 4 * time.Minute}}
	fleet := atlas
	fleet.Fleet = Fleet{Replicas: Copies(3, ReplicaConfig{}), Router: LeastLoaded{}}
	fleet.Classes = []Class{{Name: "chat", SLO: SLO{TTFT: 300 * time.Millisecond}}}
	capped := atlas
	capped.MaxConcurrency, capped.Timeout = 20, 20*time.Second
	detect := atlas
	detect.DetectWarmup = true
	open := Config{KeepTokens: true, Window: Window{Warmup: 10 * time.Second}, Timeout: 40 * time.Second}
	overload := atlas
	overload.MaxBacklog = 150
	spec := atlas
	spec.Speculation = Speculation{Tokens: 4, Acceptance: 0.7, DraftStep: 2 * time.Millisecond}
	empirical := atlas
	empirical.Percentiles = stats.InvertedCDF
	gated := fleet
	gated.Timeout = 30 * time.Second
	gated.Gateway = Gateway{Bucket: TokenBucket{MaxTokens: 30, TokensPerFill: 5, FillInterval: time.Second},
		Limit: ConcurrencyLimit{PerReplica: 12, Queue: 20, TTL: 5 * time.Second}, Shed: Saturation{QueueDepth: 4}}
	for _, c := range []struct {
		name string
		cfg  Config
		rate float64
		n    int
	}{
		{"below the knee", atlas, 1.5, 1200},
		{"past the knee, unfinished at the drain", atlas, 3.2, 1600},
		{"fleet with classes", fleet, 6, 3000},
		{"concurrency cap and timeouts", capped, 4, 2000},
		{"detected warm-up", detect, 2.4, 1200},
		{"open window with timeouts", open, 2.8, 300},
		{"overloaded", overload, 4, 1500},
		{"speculation", spec, 2, 900},
		{"empirical percentiles", empirical, 2.2, 1000},
		{"behind a gateway, past the knee", gated, 12, 3000},
	} {
		t.Run(c.name, func(t *testing.T) {
			lengths := workload.Fixed(2000, 200)
			src, err := workload.NewSynthetic(workload.Synthetic{Seed: 7, Count: c.n, Arrival: workload.Arrival{Rate: c.rate},
				Lengths: lengths, Prefix: workload.FleetLowReuse, Class: "chat"})
			require.NoError(t, err)
			run, replayed := summarizeCase(t, c.cfg, src)
			assert.Equal(t, stepless(run), stepless(replayed))
			assert.Positive(t, run.Offered)
			assert.Equal(t, c.cfg.MaxBacklog > 0, run.Overloaded, "only the bounded backlog overloads")
			if c.cfg.Gateway.On() {
				assert.Positive(t, run.Misses.Gateway, "the gateway ended some")
				assert.Positive(t, run.GatewayQueue, "and queued some")
			}
		})
	}
}

// Without token instants, Summarize leaves out what needs them and keeps
// everything else.
func TestSummarizeWithoutTokens(t *testing.T) {
	cfg := Config{Window: Window{Warmup: 30 * time.Second, Horizon: 3 * time.Minute}}
	src, err := workload.NewPoisson(3, 2, 600, workload.Fixed(2000, 200))
	require.NoError(t, err)
	run, replayed := summarizeCase(t, cfg, src)
	assert.Zero(t, replayed.ITL.N)
	assert.Zero(t, replayed.WindowTokens)
	assert.True(t, math.IsNaN(replayed.OutputThroughput))
	run.ITL, run.ITLRetokenized, run.Samples.ITL, run.Samples.ITLRetokenized = replayed.ITL, replayed.ITLRetokenized, nil, nil
	run.WindowTokens, run.OutputThroughput = 0, replayed.OutputThroughput
	run.Replicas = slices.Clone(run.Replicas)
	run.Replicas[0].ITL = replayed.Replicas[0].ITL
	assert.Equal(t, stepless(run), stepless(replayed))
}

// Records no run could have written are refused, naming the record.
func TestSummarizeRefusesImpossibleRecords(t *testing.T) {
	ok := Record{ID: 1, Arrival: time.Second, Scheduled: time.Second, Finish: 2 * time.Second, FirstToken: Never, LastToken: Never, FirstScheduled: Never}
	bad := func(f func(r *Record)) []Record { r := ok; f(&r); return []Record{ok, r} }
	for _, c := range []struct {
		cfg  Config
		recs []Record
		want string
	}{
		{Config{}, bad(func(r *Record) { r.Replica = 2 }), "record 1 (ID 1) has Replica 2"},
		{Config{}, bad(func(r *Record) { r.Finish = 0 }), "not in time order"},
		{Config{KeepTokens: true}, bad(func(r *Record) { r.Emitted = 3 }), "emitted 3 tokens and keeps 0 instants"},
		{Config{}, []Record{{Status: StatusUnfinished, Finish: 1}, {Status: StatusUnfinished, Finish: 2}}, "a run stops once"},
		{Config{Timeout: -1}, nil, "Timeout"},
	} {
		_, err := Summarize(c.cfg, c.recs)
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
	}
}
