package sim

import (
	"cmp"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/testlong"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzFastEqualsStepwise is the differential check of the fast path: a
// random scenario (tight KV pools, prefix sharing, priorities, timeouts,
// injected errors, windows that stop runs in flight, chunked or whole
// prompts, a context-priced model) runs once advancing runs of identical
// decode steps in one move and once step by step; every record and the
// summary must be the same bytes, and the engine's invariants must hold
// after every step of both.
//
//	go test ./sim -run '^$' -fuzz FuzzFastEqualsStepwise -fuzztime 10m
func FuzzFastEqualsStepwise(f *testing.F) {
	for seed := range uint64(16) {
		f.Add(randomScenario(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, reqs := decodeScenario(data)
		fastEqualsStepwise(t, cfg, reqs, recordsSteps(data))
	})
}

// fastEqualsStepwise runs a scenario both ways and holds them to the same
// bytes: every record, the summary, and with steps every step.
func fastEqualsStepwise(t *testing.T, cfg Config, reqs list, steps ...bool) scenarioRun {
	t.Helper()
	fast, err := runScenario(cfg, reqs, steps...)
	require.NoError(t, err)
	cfg.Stepwise = true
	slow, err := runScenario(cfg, reqs, steps...)
	require.NoError(t, err)
	sameBytes(t, slow.text, fast.text)
	return fast
}

var propertyCases = flag.Int("property.cases", 0, "random scenarios TestPropertiesOfRandomScenarios runs (0: 1,000, or 10,000 with SERVESIM_LONG=1)")

// TestPropertiesOfRandomScenarios runs seeded random scenarios, fast and
// step by step, and holds each to what must always be true: the two runs
// are the same bytes, the engine's invariants hold after every step, every
// request that arrives ends in exactly one state, the statuses add up to
// the measured requests and offered = good + exclusive misses, and the
// window is never negative. It runs 1,000 seeds, 10,000 (its full
// strength) with SERVESIM_LONG=1; run more with -property.cases=1000000.
func TestPropertiesOfRandomScenarios(t *testing.T) {
	t.Parallel()
	cases := *propertyCases
	if cases == 0 {
		cases = testlong.Int(t, 1_000, 10_000)
	}
	capped, gated, split, loaded, churned, chunked, reserved := 0, 0, 0, 0, 0, 0, 0
	defer func() {
		t.Logf("%d scenarios that ran runs of prefill chunks", chunked)
		if !t.Failed() && chunked < cases/30 {
			t.Errorf("%d of %d scenarios ran runs of prefill chunks: the scenarios no longer chunk prompts", chunked, cases)
		}
		t.Logf("%d scenarios whose autoscaled fleet served on a replica that joined and drained one that left", churned)
		if !t.Failed() && churned < cases/50 {
			t.Errorf("%d of %d scenarios had replicas join and serve and leave: the scenarios no longer draw autoscaling", churned, cases)
		}
		t.Logf("%d scenarios whose KV tiers loaded blocks", loaded)
		if !t.Failed() && loaded < cases/100 {
			t.Errorf("%d of %d scenarios had their KV tiers load blocks: the scenarios no longer draw tiers", loaded, cases)
		}
		t.Logf("%d scenarios whose prefill pool prefilled requests", split)
		t.Logf("%d scenarios whose decode replicas reserved a request's blocks inside a run", reserved)
		if !t.Failed() && reserved == 0 {
			t.Errorf("none of %d scenarios reserved blocks inside a run: the scenarios no longer exercise it", cases)
		}
		if !t.Failed() && split < cases/20 {
			t.Errorf("%d of %d scenarios had a prefill pool prefill requests: the scenarios no longer draw disaggregated fleets", split, cases)
		}
		t.Logf("%d length-capped requests in %d scenarios", capped, cases)
		if !t.Failed() && capped < cases/10 {
			t.Errorf("%d length-capped requests in %d scenarios: the scenarios no longer cut outputs at MaxModelLen", capped, cases)
		}
		t.Logf("%d scenarios whose gateway ended requests", gated)
		if !t.Failed() && gated < cases/20 {
			t.Errorf("%d of %d scenarios had a gateway end requests: the scenarios no longer draw gateways", gated, cases)
		}
	}()
	for seed := range uint64(cases) {
		data := randomScenario(seed)
		cfg, reqs := decodeScenario(data)
		ok := t.Run("", func(t *testing.T) {
			run := fastEqualsStepwise(t, cfg, reqs, recordsSteps(data))
			for _, r := range reqs {
				switch n := run.seen[r.ID]; {
				case r.Arrival < run.stop:
					require.Equal(t, 1, n, "request %d arrived at %v, before the run stopped at %v", r.ID, r.Arrival, run.stop)
				case r.Arrival > run.stop:
					require.Zero(t, n, "request %d is due at %v, after the run stopped at %v", r.ID, r.Arrival, run.stop)
				default: // due at the very instant the run stopped
					require.LessOrEqual(t, n, 1, "request %d", r.ID)
				}
			}
			if run.chunkRuns > 0 {
				chunked++
			}
			if run.runReserves > 0 {
				reserved++
			}
			sum := run.sum
			require.GreaterOrEqual(t, int64(sum.Window), int64(0))
			total := 0
			for st := range numStatus {
				total += sum.Count(st)
			}
			require.Equal(t, sum.Offered, total)
			require.Equal(t, sum.Offered, sum.Good+sum.Misses.Total())
			if sum.Misses.Gateway > 0 {
				gated++
			}
			if d := sum.Disagg; d != nil {
				if d.Remote > 0 {
					split++
				}
				require.Equal(t, countMeasured(run.recs, func(r *Record) bool { return r.Remote }), d.Remote)
				require.Equal(t, sum.Offered, d.Remote+d.Local, "the decider's split adds up to the measured requests")
			}
			if ts := sum.Tiers; ts != nil {
				if ts.Loads > 0 {
					loaded++
				}
				host, shared := 0, 0
				for _, r := range run.recs {
					require.LessOrEqual(t, r.Cached+r.CachedHost+r.CachedShared, r.Input, "request %d: prompt tokens found in HBM and the tiers", r.ID)
					if r.Measured {
						host, shared = host+r.CachedHost, shared+r.CachedShared
					}
				}
				if !cfg.DetectWarmup {
					require.Equal(t, host, ts.Host, "the tiers' tokens add up to the measured records'")
					require.Equal(t, shared, ts.Shared)
					require.Equal(t, sum.Cached, ts.HBM)
				}
				require.LessOrEqual(t, ts.TTFTMissesLoading, sum.Causes.TTFT, "loads caused no more TTFT misses than there are")
			}
			if cfg.Classes != nil {
				require.Len(t, sum.Classes, len(cfg.Classes)+1)
				offered, good := 0, 0
				for _, c := range sum.Classes {
					offered, good = offered+c.Offered, good+c.Good
				}
				require.Equal(t, sum.Offered, offered, "the classes' requests add up to the measured")
				require.Equal(t, sum.Good, good, "the classes' good requests add up to the aggregate's")
			}
			checkClientCap(t, cfg.MaxConcurrency, run.recs)
			if cfg.Fleet.Autoscale.On() && checkLives(t, cfg, run) {
				churned++
			}
			for _, r := range run.recs {
				require.LessOrEqual(t, r.Accepted, r.Drafted, "request %d", r.ID)
				require.LessOrEqual(t, r.MaxTokenITL, r.MaxITL, "request %d", r.ID)
				require.LessOrEqual(t, r.Emitted, r.Output, "request %d", r.ID)
				// Only an ok request is length-capped, and then it emitted
				// fewer tokens than asked; one cut at MaxModelLen emitted
				// exactly MaxModelLen − Input (ServedOutput).
				require.Equal(t, r.Status == StatusOK && r.Emitted < r.Output, r.LengthCapped, "request %d", r.ID)
				if r.LengthCapped {
					capped++
					require.Equal(t, replicaEngine(cfg, r.Replica).ServedOutput(r.Input, r.Output), r.Emitted, "request %d", r.ID)
				}
			}
			lc := countMeasured(run.recs, func(r *Record) bool { return r.LengthCapped })
			if cfg.DetectWarmup { // the detected warm-up leaves some measured records out
				require.LessOrEqual(t, sum.LengthCapped, lc)
			} else {
				require.Equal(t, sum.LengthCapped, lc, "the summary counts the measured length-capped records")
			}
		})
		if !ok {
			t.Fatalf("seed %d failed; replay it as the fuzz input %q", seed, data)
		}
	}
}

// replicaEngine is the engine configuration of replica i of cfg.
func replicaEngine(cfg Config, i int) engine.Config {
	if n := len(cfg.Fleet.Replicas); i >= n && cfg.Fleet.Autoscale.On() { // a replica that joined: the first's copy
		return cfg.Fleet.Replicas[0].Engine
	}
	if n := len(cfg.Fleet.Replicas); i >= n && n > 0 { // a disaggregated fleet's prefill pool
		return cfg.Fleet.Prefill.Replicas[i-n].Engine
	}
	if len(cfg.Fleet.Replicas) > 0 {
		return cfg.Fleet.Replicas[i].Engine
	}
	return cfg.Engine
}

// countMeasured counts the measured records that f holds for.
func countMeasured(recs []Record, f func(*Record) bool) int {
	n := 0
	for i := range recs {
		if recs[i].Measured && f(&recs[i]) {
			n++
		}
	}
	return n
}

// checkClientCap holds records to Config.MaxConcurrency: never more than
// cap requests sent and not ended at once, none sent before it was due,
// and the waiting sent first come first served.
func checkClientCap(t *testing.T, limit int, recs []Record) {
	t.Helper()
	type edge struct {
		at time.Duration
		d  int
	}
	var edges []edge
	for _, r := range recs {
		require.GreaterOrEqual(t, r.Arrival, r.Scheduled, "request %d sent before it was due", r.ID)
		if !r.Sent {
			if r.Status == StatusErrored && r.Replica == Unrouted {
				continue // recorded as failed in the trace
			}
			require.Equal(t, StatusUnfinished, r.Status, "request %d was never sent", r.ID)
			require.Positive(t, limit, "request %d was never sent without a cap", r.ID)
			continue
		}
		if limit == 0 {
			require.Equal(t, r.Scheduled, r.Arrival, "request %d waited without a cap", r.ID)
		}
		edges = append(edges, edge{r.Arrival, +1}, edge{r.Finish, -1})
		for _, o := range recs {
			if o.Sent && o.Scheduled < r.Scheduled {
				require.LessOrEqual(t, o.Arrival, r.Arrival, "request %d, due before %d, was sent after it", o.ID, r.ID)
			}
		}
	}
	if limit == 0 {
		return
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.d, b.d)) })
	held := 0
	for _, e := range edges {
		held += e.d
		require.LessOrEqual(t, held, limit, "more than MaxConcurrency in flight at %v", e.at)
	}
}

// Issue 8, bug 1: a run of decode steps cut short by a client deadline or
// by the end of the run keeps the tokens of every step that ended before
// it, at their own instants. A 2,000-token prompt takes 90 ms, then a token
// every 45 ms: by a 10 s deadline the k-th token at 90 + 45·(k−1) ms has
// been emitted for k <= 221 (the step in flight at 10 s is discarded); by
// a stop at Horizon + Drain = 6 s, for k <= 132. The fast path used to
// report 1 token in both cases.
func TestInterruptedRunKeepsItsTokens(t *testing.T) {
	one := list{{ID: 1, InputTokens: 2000, OutputTokens: 1000}}
	for name, c := range map[string]struct {
		cfg    Config
		tokens int
		status Status
	}{
		"timeout": {Config{Timeout: 10 * time.Second}, 221, StatusTimedOut},
		"stop":    {Config{Window: Window{Horizon: 5 * time.Second, Drain: time.Second}}, 132, StatusUnfinished},
	} {
		t.Run(name, func(t *testing.T) {
			c.cfg.KeepTokens = true
			run := fastEqualsStepwise(t, c.cfg, one)
			var rec Record
			src := append(list(nil), one...)
			_, err := Run(c.cfg, &src, ObserverFunc(func(r *Record) { rec = *r }))
			require.NoError(t, err)
			assert.Equal(t, c.status, rec.Status)
			assert.Equal(t, c.tokens, rec.Emitted)
			require.Len(t, rec.Tokens, c.tokens)
			for k, at := range rec.Tokens {
				assert.Equal(t, 90*time.Millisecond+time.Duration(k)*45*time.Millisecond, at, "token %d", k+1)
			}
			assert.Equal(t, c.tokens, run.sum.Tokens)
		})
	}
}

// checkLives holds an autoscaled run's records to its replicas' lives:
// a request was served by a replica that was ready when it was
// scheduled there and still routable when it arrived, and ended before
// its replica was gone; only a drain deadline aborts a request as
// drained; a replica that is gone holds nothing, and one that drains
// still holds something. It reports whether a joined replica served a
// request and a replica drained.
func checkLives(t *testing.T, cfg Config, run scenarioRun) bool {
	t.Helper()
	joined, left := false, false
	for _, r := range run.recs {
		if r.Replica == Unrouted || !r.Sent {
			continue
		}
		l := run.lives[r.Replica]
		require.NotEqual(t, stateWarming, l.state, "request %d ended on replica %d, still warming", r.ID, r.Replica)
		if r.FirstScheduled != Never {
			require.LessOrEqual(t, l.readyAt, r.FirstScheduled, "request %d was scheduled on replica %d before it was ready", r.ID, r.Replica)
		}
		if l.drainAt != Never {
			require.LessOrEqual(t, r.Arrival, l.drainAt, "request %d arrived after replica %d left routing", r.ID, r.Replica)
		}
		if l.goneAt != Never {
			require.LessOrEqual(t, r.Finish, l.goneAt, "request %d ended after replica %d was gone", r.ID, r.Replica)
		}
		if strings.Contains(r.Reason, "Drain.Timeout") {
			require.Positive(t, cfg.Fleet.Autoscale.Drain.Timeout, "request %d aborted by a drain without a deadline", r.ID)
		}
		joined = joined || r.Replica >= len(cfg.Fleet.Replicas)
	}
	for i, l := range run.lives {
		switch l.state {
		case stateGone:
			require.Zero(t, l.held, "replica %d is gone but holds requests", i)
			require.LessOrEqual(t, l.requested, l.goneAt)
			left = true
		case stateDraining:
			if run.stop < Unbounded {
				require.NotEqual(t, Never, l.drainAt, "replica %d", i)
			}
		}
	}
	return joined && left
}
