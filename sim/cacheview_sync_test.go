package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// checkedSyncs is PrefixAffinity that, at every arrival, before it
// routes, brings each replica whose SyncTo eventsState.longestEach would
// leave out (mustSync false) to the instant and requires that none of
// the events this publishes is seen by then: the question answers as if
// the replica had been synced (cachedOf, which syncs at every question).
// It counts the syncs left out, and those that published events (seen
// later).
type checkedSyncs struct {
	PrefixAffinity
	t                  *testing.T
	skipped, published *int
}

func (c checkedSyncs) Route(req *workload.Request, v *View) int {
	if s, ok := v.r.cache.(*eventsState); ok {
		r := v.r
		by := r.now - s.cfg.Lag
		for i := range v.n {
			j := v.at(i)
			x, rep := s.reps[j], &r.reps[j]
			if x.mustSync(rep, by) && x.loud(rep, by) {
				continue
			}
			*c.skipped++
			n, nc := len(x.keys), len(x.qchains) // events by key, and runs by name (KVStoredChain)
			rep.run().SyncTo(r.now)
			if len(x.keys) == n && len(x.qchains) == nc {
				continue
			}
			*c.published++
			k := len(x.runs) - 1 // the run of the first event published, which may have joined the last queued
			for x.runs[k].start > n {
				k--
			}
			if len(x.qchains) > nc { // a run by name first?
				k = min(k, int(x.qchains[nc].run))
			}
			require.Greater(c.t, x.runs[k].seen, r.now, "arrival %d, replica %d: an event the SyncTo left out is seen by now", v.Routed(), j)
		}
	}
	return c.PrefixAffinity.Route(req, v)
}

// TestSkippedSyncsHideNothing holds longestEach's SyncTo left out
// (mustSync) to the SyncTo at every question (checkedSyncs), on the
// random scenarios routed by PrefixAffinity, over EventsView whatever
// view they drew (lags of 0 to 60 ms, jitters; prefill pools among
// them), and on Regime/Fleet8PrefixEvents and a
// tight-pool variant of it, whose replicas evict. It requires syncs
// left out that would have published events.
func TestSkippedSyncsHideNothing(t *testing.T) {
	skipped, published, runs := 0, 0, 0
	check := func(cfg Config, src workload.Source) {
		if pa, ok := cfg.Fleet.Router.(PrefixAffinity); ok {
			cfg.Fleet.Router = checkedSyncs{PrefixAffinity: pa, t: t, skipped: &skipped, published: &published}
		}
		if pa, ok := cfg.Fleet.Prefill.Router.(PrefixAffinity); ok && cfg.Fleet.Prefill.On() {
			cfg.Fleet.Prefill.Router = checkedSyncs{PrefixAffinity: pa, t: t, skipped: &skipped, published: &published}
		}
		_, _, err := runSourceScenario(cfg, src)
		require.NoError(t, err)
		runs++
	}
	for seed := range uint64(1_500) {
		cfg, reqs := decodeScenario(randomScenario(seed))
		if pa, ok := cfg.Fleet.Router.(PrefixAffinity); ok { // over EventsView, whatever view it drew
			pa.View = EventsView{Lag: time.Duration(seed%4) * 20 * time.Millisecond, Jitter: time.Duration(seed/4%3) * 7 * time.Millisecond}
			cfg.Fleet.Router = pa
			src := append(list(nil), reqs...)
			check(cfg, &src)
		}
	}
	for _, rg := range regimes {
		if rg.name == "Fleet8PrefixEvents" {
			cfg, src := rg.build(t, 100)
			check(cfg, src())
			for i := range cfg.Fleet.Replicas {
				cfg.Fleet.Replicas[i].Engine.KVBlocks = 2_000
			}
			check(cfg, src())
		}
	}
	t.Logf("%d runs, %d syncs left out, %d of them publishing events (seen later)", runs, skipped, published)
	require.Positive(t, published)
}
