package sim

import (
	"testing"

	"github.com/servesim/servesim/engine"
	"time"

	"github.com/servesim/servesim/workload"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// studyRequests is the routing study's workload (examples/routing's
// requests): Poisson arrivals, each request its group's shared prefix
// (when the preset draws one) and 500 tokens of its own, 200 out.
func studyRequests(t *testing.T, p workload.PrefixReuse, rate float64, d time.Duration, seed uint64) list {
	t.Helper()
	src, err := workload.NewSynthetic(workload.Synthetic{Seed: seed, Duration: d, Arrival: workload.Arrival{Rate: rate},
		Lengths: workload.Fixed(500, 200), Prefix: p})
	require.NoError(t, err)
	var l list
	for {
		r, err := src.Next()
		if err != nil {
			return l
		}
		l = append(l, r)
	}
}

func viewConfig(v CacheView, replicas, frontends int) Config {
	return Config{Fleet: Fleet{Replicas: Copies(replicas, ReplicaConfig{}), Router: PrefixAffinity{View: v}, Frontends: frontends}}
}

// runView runs reqs behind PrefixAffinity reading view v, checking the
// engines' invariants after every step, and returns the run and the
// runner (for the view's memory).
func runView(t *testing.T, cfg Config, reqs list) (scenarioRun, *runner) {
	t.Helper()
	var out scenarioRun
	var r *runner
	var err error
	out, r, err = runScenarioRunner(cfg, reqs)
	require.NoError(t, err)
	return out, r
}

// Issue 37, check 1: with no lag, the events view is the cache, so
// PrefixAffinity routes every request of the routing study's workload as
// with the exact view, and every record and the summary are the same
// bytes; so does the approximate tree of one router instance, none of
// whose trees is ever pruned, where no replica evicts and each routed
// prefix is computed before a request that could match it arrives (the
// tree holds what was routed, the cache what was computed). At low reuse
// (64 prompts of 512 tokens, 32,768 tokens, fit every replica) at 6
// req/s on 4 replicas, and at high reuse at 2 req/s (the Zipf-popular
// prompts that reach a replica in 60 s fit it), both hold; at high reuse
// and 6 req/s with replicas of 8,192 blocks (131,072 tokens, 32 of the
// 4,096-token prompts), which evict, the events view still answers as the
// exact one (the tree does not: it routes to prompts being computed, and
// to prompts evicted). The hits and the evictions are counted, so that the
// equality is not that of routers that never found anything.
func TestCacheViewsRouteAsExact(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		prefix workload.PrefixReuse
		rate   float64
		kv     int  // KV blocks a replica; 0: the Atlas's 28,672
		approx bool // the tree too: no replica evicts
	}{
		{"low reuse, 6 req/s", workload.FleetLowReuse, 6, 0, true},
		{"high reuse, 2 req/s", workload.FleetHighReuse, 2, 0, true},
		{"high reuse, 6 req/s, 8,192 blocks: replicas evict", workload.FleetHighReuse, 6, 8192, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			reqs := studyRequests(t, c.prefix, c.rate, 60*time.Second, 1)
			cfg := func(v CacheView) Config {
				cfg := viewConfig(v, 4, 0)
				cfg.Fleet.Replicas = Copies(4, ReplicaConfig{Engine: engine.Config{KVBlocks: c.kv}})
				return cfg
			}
			exact, _ := runView(t, cfg(nil), reqs)
			hits := 0
			for _, rec := range exact.recs {
				if rec.Cached > 0 {
					hits++
				}
			}
			require.Greater(t, hits, len(reqs)/10, "requests that found a cached prefix")
			events, r := runView(t, cfg(EventsView{}), reqs)
			sameBytes(t, exact.text, events.text)
			removed := 0
			for _, x := range r.cache.(*eventsState).reps {
				removed += x.removed
			}
			if !c.approx {
				assert.Positive(t, removed, "blocks the replicas evicted")
				return
			}
			assert.Zero(t, removed, "blocks the replicas evicted")
			approx, r := runView(t, cfg(ApproxView{}), reqs)
			sameBytes(t, exact.text, approx.text)
			assert.Zero(t, r.cache.(*approxState).evicted, "the tree was never pruned")
		})
	}
}

// prompt is a request of input tokens whose first prefix*16 are the
// shared units ids (16 tokens each), the rest its own.
func prompt(id uint64, at time.Duration, input, output int, ids ...uint64) workload.Request {
	return workload.Request{ID: id, Arrival: at, InputTokens: input, OutputTokens: output, PrefixHashes: ids, PrefixBlockTokens: 16}
}

// units16 is n prefix ids from base: a prompt of n·16 shared tokens.
func units16(base uint64, n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = base + uint64(i)
	}
	return ids
}

// Issue 37, check 2: the approximate tree believes what it routed, after
// the replica evicted it. Two replicas, the second with 200 KV blocks
// (3,200 tokens). Y (no prefix, 2,000 tokens out: 90 s of decoding) keeps
// replica 0 busy from t = 0. A, whose 1,524-token prompt begins with a
// 1,024-token shared prefix P (64 blocks), goes to the idle replica 1 at
// 1 s and leaves its blocks cached. B, 3,184 tokens of its own, goes to
// replica 1 at 5 s (the less loaded) and needs all 200 blocks: every
// block of P is evicted. Z, at 19 s, goes to replica 1 too (still the
// less loaded), so at 20 s both replicas hold one request. D, with A's
// prompt, arrives then: the exact view finds P nowhere and sends it to the
// least loaded, replica 0 on the tie; the tree still holds P for replica
// 1, 1,024 of 1,524 tokens (67 % > the 50 % threshold), and sends it
// there, where its record shows the miss: 0 tokens cached, the whole
// prompt computed again. The events view, which saw the removals, routes
// as the exact one.
func TestApproximateTreeOverbelievesAfterEviction(t *testing.T) {
	p := units16(1000, 64)
	reqs := list{
		prompt(1, 0, 100, 2000),
		prompt(2, 1*time.Second, 1524, 10, p...),
		prompt(3, 5*time.Second, 3184, 10),
		prompt(4, 19*time.Second, 100, 2000),
		prompt(5, 20*time.Second, 1524, 10, p...),
	}
	small := ReplicaConfig{Engine: engine.Config{KVBlocks: 200}}
	cfg := func(v CacheView) Config {
		return Config{Fleet: Fleet{Replicas: []ReplicaConfig{{}, small}, Router: PrefixAffinity{View: v}}}
	}
	byID := func(run scenarioRun) map[uint64]Record {
		m := map[uint64]Record{}
		for _, r := range run.recs {
			m[r.ID] = r
		}
		return m
	}
	for _, v := range []CacheView{nil, EventsView{}, ApproxView{}} {
		run, _ := runView(t, cfg(v), reqs)
		recs := byID(run)
		require.Equal(t, 1, recs[2].Replica, "A, %T", v)
		require.Equal(t, 1, recs[3].Replica, "B, %T", v)
		require.Equal(t, 1, recs[4].Replica, "Z, %T", v)
		d := recs[5]
		assert.Equal(t, StatusOK, d.Status)
		assert.Zero(t, d.Cached, "D finds nothing of P cached anywhere, %T", v)
		if _, tree := v.(ApproxView); tree {
			assert.Equal(t, 1, d.Replica, "the tree still believes replica 1 holds P")
		} else {
			assert.Equal(t, 0, d.Replica, "%T: P is cached nowhere: the least loaded, on the tie the lower index", v)
		}
	}
}

// Issue 37, check 4: a block stored at t is seen from t + Lag on. A (a
// 1,024-token prefix P, 200 tokens out: busy until about 9 s) goes to
// replica 0 at t = 0, whose step at 0 caches P. With Lag 1 s, D1 with
// the same prefix at 999 ms does not see it: replica 0 is the more
// loaded, so D1 goes to replica 1 (and caches P there at 999 ms, seen from
// 1.999 s). D2 at exactly 1 s sees replica 0's P, and goes there,
// finding all 1,024 tokens cached; replica 1's copy is not seen yet. The
// exact view sends D1 to replica 0 already.
func TestEventsViewSeesABlockLagAfter(t *testing.T) {
	p := units16(1000, 64)
	reqs := list{
		prompt(1, 0, 1524, 200, p...),
		prompt(2, 999*time.Millisecond, 1524, 10, p...),
		prompt(3, time.Second, 1524, 10, p...),
	}
	cfg := func(v CacheView) Config {
		return Config{Fleet: Fleet{Replicas: Copies(2, ReplicaConfig{}), Router: PrefixAffinity{View: v}}}
	}
	run, _ := runView(t, cfg(EventsView{Lag: time.Second}), reqs)
	rep := map[uint64]Record{}
	for _, r := range run.recs {
		rep[r.ID] = r
	}
	assert.Equal(t, 0, rep[1].Replica)
	assert.Equal(t, 1, rep[2].Replica, "D1 at 999 ms: replica 0's P is seen from 1 s")
	assert.Zero(t, rep[2].Cached)
	assert.Equal(t, 0, rep[3].Replica, "D2 at 1 s sees it")
	assert.Equal(t, 1024, rep[3].Cached)

	run, _ = runView(t, cfg(nil), reqs)
	for _, r := range run.recs {
		if r.ID == 2 {
			assert.Equal(t, 0, r.Replica, "the exact view sees P at once")
			assert.Equal(t, 1024, r.Cached)
		}
	}
}

// Each router instance's tree knows only what it routed: with two
// frontends, the arrivals are dealt to them in turn. A (prefix P) is the
// first instance's, to replica 0 (the tie); B, the second instance's,
// with the same prefix, finds nothing in its own trees and goes to the
// least loaded, replica 1 (A is still running); C, the first instance's
// again, finds P in its tree of replica 0 and goes there. With one
// instance B goes to replica 0.
func TestApproximateTreePerFrontend(t *testing.T) {
	p := units16(1000, 64)
	reqs := list{
		prompt(1, 0, 1524, 200, p...),
		prompt(2, time.Second, 1524, 10, p...),
		prompt(3, 2*time.Second, 1524, 10, p...),
	}
	for _, c := range []struct {
		frontends int
		want      []int
	}{{2, []int{0, 1, 0}}, {1, []int{0, 0, 0}}} {
		cfg := Config{Fleet: Fleet{Replicas: Copies(2, ReplicaConfig{}), Router: PrefixAffinity{View: ApproxView{}}, Frontends: c.frontends}}
		run, _ := runView(t, cfg, reqs)
		got := make([]int, 3)
		for _, r := range run.recs {
			got[r.ID-1] = r.Replica
		}
		assert.Equal(t, c.want, got, "%d frontends", c.frontends)
	}
}

// The tree's pruning, by hand: P (4 units of 16 tokens) inserted at 1 s,
// Q (P's first 2 units, then 2 of its own) at 2 s, R (4 units of its own)
// at 3 s: 4 + 2 + 4 = 10 nodes, 160 tokens. Pruned to 96 tokens, the
// least recently used leaves go first: P's last unit, then its third
// (a leaf once the last is gone: 32 tokens), then Q's last two (stamped
// at 2 s, before R), leaving P's first two (Q refreshed them) and R: 6
// nodes, 96 tokens, 64 removed.
func TestApproximateTreeEvictsLeastRecentlyUsedLeaves(t *testing.T) {
	s, err := ApproxView{MaxTreeSize: 96, EvictionInterval: 10 * time.Second}.state(&runner{replicas: replicas{reps: make([]replica, 1)}, routing: routing{signals: make([]signals, 1)}})
	require.NoError(t, err)
	a := s.(*approxState)
	r := &runner{}
	for i, ids := range [][]uint64{{1, 2, 3, 4}, {1, 2, 5, 6}, {7, 8, 9, 10}} {
		r.now = time.Duration(i+1) * time.Second
		a.routed(r, 0, &workload.Request{InputTokens: 100, PrefixHashes: ids, PrefixBlockTokens: 16})
	}
	tr := &a.trees[0][0]
	require.Equal(t, 160, tr.size)
	r.now = 9 * time.Second // before the first eviction, at 10 s
	a.evictDue(r.now)
	require.Equal(t, 160, tr.size)
	r.now = 10 * time.Second
	a.evictDue(r.now)
	assert.Equal(t, 96, tr.size)
	assert.Equal(t, 64, a.evicted)
	held := func(ids ...uint64) int { return tr.match(anyChain(ids)) }
	assert.Equal(t, 2, held(1, 2, 3, 4), "P's first two units, which Q refreshed")
	assert.Equal(t, 2, held(1, 2, 5, 6), "Q's own two units are gone")
	assert.Equal(t, 4, held(7, 8, 9, 10), "R, the most recent")
}

func TestCacheViewsValidate(t *testing.T) {
	err := PrefixAffinity{View: ApproxView{MaxTreeSize: -1, EvictionInterval: -time.Second}}.Validate()
	require.Error(t, err)
	assert.ErrorContains(t, err, "PrefixAffinity.View: ApproxView.MaxTreeSize must be >= 0")
	assert.ErrorContains(t, err, "ApproxView.EvictionInterval must be >= 0")
	err = Config{Fleet: Fleet{Replicas: Copies(2, ReplicaConfig{}), Router: PrefixAffinity{View: EventsView{Lag: -1, Jitter: -2}}}}.Validate()
	assert.ErrorContains(t, err, "Fleet.Router: PrefixAffinity.View: EventsView.Lag must be >= 0")
	assert.ErrorContains(t, err, "EventsView.Jitter must be >= 0")
	assert.NoError(t, PrefixAffinity{View: ExactView{}}.Validate())
	assert.Equal(t, ApproxView{MaxTreeSize: 1 << 26, EvictionInterval: 120 * time.Second}, ApproxView{}.WithDefaults())
}
