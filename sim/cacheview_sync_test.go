package sim

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/testlong"
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
	t                         *testing.T
	skipped, published, noted *int
	// loud drops the indexes' probes of their engines' quiet moves
	// (KVQuietProbe's quiet): every replica mustSync names is synced,
	// inside mixed moves too, whose later steps are quiet in the
	// scenarios here.
	loud bool
}

// wrappedAffinity lets the runner plan mixed moves behind c as behind
// the router it holds (affinityOf).
func (c checkedSyncs) wrappedAffinity() PrefixAffinity { return c.PrefixAffinity }

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
	s, ok := v.r.cache.(*eventsState)
	if !ok {
		return c.PrefixAffinity.Route(req, v)
	}
	if c.loud {
		for i := range v.n {
			s.reps[v.at(i)].quiet = nil
		}
	}
	type noted struct{ move, next time.Duration }
	before := make([]noted, v.n)
	for i := range v.n {
		x := s.reps[v.at(i)]
		before[i] = noted{x.syncMove, x.syncNext}
	}
	to := c.PrefixAffinity.Route(req, v)
	for i := range v.n {
		// A replica synced now notes its plan's first step start at or
		// after now (the engine's nextStart: a mixed move's later steps
		// start lead after its grid), the first whose blocks the SyncTo
		// left untaken.
		x := s.reps[v.at(i)]
		if (noted{x.syncMove, x.syncNext}) != before[i] && x.syncNext != math.MaxInt64 {
			require.Equal(c.t, x.next(v.r.now), x.syncNext, "arrival %d, replica %d: the next step start noted at its sync", v.Routed(), v.at(i))
			*c.noted++
		}
	}
	return to
}

// TestSkippedSyncsHideNothing holds longestEach's SyncTo left out
// (mustSync) to the SyncTo at every question (checkedSyncs), on the
// random scenarios routed by PrefixAffinity, over EventsView whatever
// view they drew (lags of 0 to 60 ms, jitters; prefill pools among
// them), and on Regime/Fleet8PrefixEvents and a
// tight-pool variant of it, whose replicas evict. It requires syncs
// left out that would have published events, and runs of mixed moves
// (the fleets plan them behind the check as behind PrefixAffinity:
// affinityOf, wrappedAffinity), whose later steps start lead after their grid.
func TestSkippedSyncsHideNothing(t *testing.T) {
	t.Parallel()
	skipped, published, noted, runs, mixedRuns := 0, 0, 0, 0, 0
	check := func(cfg Config, src workload.Source) {
		if pa, ok := cfg.Fleet.Router.(PrefixAffinity); ok {
			cfg.Fleet.Router = checkedSyncs{PrefixAffinity: pa, t: t, skipped: &skipped, published: &published, noted: &noted}
		}
		if pa, ok := cfg.Fleet.Prefill.Router.(PrefixAffinity); ok && cfg.Fleet.Prefill.On() {
			cfg.Fleet.Prefill.Router = checkedSyncs{PrefixAffinity: pa, t: t, skipped: &skipped, published: &published, noted: &noted}
		}
		_, r, err := runSourceScenario(cfg, src)
		require.NoError(t, err)
		runs++
		if r.mixes > 0 {
			mixedRuns++
		}
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
			// Its fleet of mixed moves over other lags, jitters and
			// pools: every third of the 24 (each combination's pool
			// and lag among them) unless long.
			for k := 0; k < 24; k += testlong.Int(t, 3, 1) {
				cfg, src := rg.build(t, 100)
				cfg.Fleet.Router = PrefixAffinity{View: EventsView{Lag: time.Duration(k%4) * 23 * time.Millisecond, Jitter: time.Duration(k/4%2) * 7 * time.Millisecond}}
				for i := range cfg.Fleet.Replicas {
					cfg.Fleet.Replicas[i].Engine.KVBlocks = []int{0, 1_200, 2_000}[k/8]
				}
				check(cfg, src())
			}
		}
	}
	// Its fleet long enough to plan mixed moves (from about its 200th
	// arrival on, its groups cached: 300 requests, 400 when long), with
	// every sync made (loud), and when long once more with syncs left
	// out: the step starts noted inside them (synced) are the engine's,
	// a mixed move's later steps lead after its grid. synced's old grid
	// fails it at arrival 222 either way.
	mixedNoted := noted
	for _, rg := range regimes {
		if rg.name != "Fleet8PrefixEvents" {
			continue
		}
		for k := 2 - testlong.Int(t, 1, 2); k < 2; k++ { // the loud run alone unless long
			cfg, src := rg.build(t, testlong.Int(t, 300, 400))
			pa := PrefixAffinity{View: EventsView{Lag: time.Duration(k) * 50 * time.Millisecond}}
			cfg.Fleet.Router = checkedSyncs{PrefixAffinity: pa, t: t, skipped: &skipped, published: &published, noted: &noted, loud: k%2 == 1}
			_, r, err := runSourceScenario(cfg, src())
			require.NoError(t, err)
			require.Positive(t, r.mixes, "run %d: mixed moves", k)
			runs++
		}
	}
	mixedNoted = noted - mixedNoted
	t.Logf("%d runs, %d syncs left out, %d of them publishing events (seen later); %d runs of mixed moves; %d noted syncs checked, %d of them synced loud", runs, skipped, published, mixedRuns, noted, mixedNoted)
	require.Positive(t, published)
	require.Greater(t, mixedRuns, testlong.Int(t, 5, 12))
}
