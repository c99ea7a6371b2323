package sim

import (
	"errors"
	"fmt"

	"github.com/servesim/servesim/workload"
)

// PrefixAffinity is SGLang's cache-aware router (sgl-router's
// cache_aware policy): it sends a request to the replica that holds the
// longest cached prefix of its prompt, unless the fleet is out of balance,
// in which case it sends it to the least loaded replica.
//
//  1. Imbalanced: if max load − min load > BalanceAbs and max load >
//     min load × BalanceRel, the least loaded replica (load: requests
//     held, waiting or running).
//  2. Otherwise, if the best cached fraction of the prompt exceeds
//     CacheThreshold, the replica with the longest cached prefix (ties:
//     the less loaded, then the lower index).
//  3. Otherwise the least loaded replica.
//
// The zero value is SGLang's defaults: CacheThreshold 0.5, BalanceAbs 32,
// BalanceRel 1.0001.
//
// Which SGLang mode it mirrors: sgl-router's cache-aware policy has two.
// Without KV events it keeps an approximate radix tree of the prompts it
// routed to each worker, routes to the best match above CacheThreshold,
// and otherwise to the worker with the smallest tree (the most cache
// room). With KV events from the workers it routes on their actual cache
// and falls back to the least loaded worker. PrefixAffinity reads each
// replica's actual cache (View.CachedPrefix), so it falls back as the
// KV-event mode does (step 3), while keeping the tree mode's threshold
// (step 2).
//
// View is what it knows of the caches (View.CachedPrefix through it):
// nil, the zero value, is ExactView, each replica's cache as it is;
// ApproxView is the tree mode's own memory of what it routed, EventsView
// the KV-event mode's index, late by the events' delay.
type PrefixAffinity struct {
	CacheThreshold float64   // fraction of the prompt; default 0.5
	BalanceAbs     int       // requests; default 32
	BalanceRel     float64   // ratio; default 1.0001
	View           CacheView // nil means ExactView{}
}

// CacheView is the view it reads the caches through (PrefixAware).
func (p PrefixAffinity) CacheView() CacheView { return p.View }

// Default thresholds of SGLang's cache-aware router.
const (
	DefaultCacheThreshold = 0.5
	DefaultBalanceAbs     = 32
	DefaultBalanceRel     = 1.0001
)

// WithDefaults returns p with its zero fields set to SGLang's defaults,
// and a nil View set to ExactView{}.
func (p PrefixAffinity) WithDefaults() PrefixAffinity {
	p.CacheThreshold, p.BalanceAbs, p.BalanceRel = p.cacheThreshold(), p.balanceAbs(), p.balanceRel()
	if p.View == nil {
		p.View = ExactView{}
	}
	return p
}

// cacheThreshold, balanceAbs and balanceRel are the thresholds
// WithDefaults sets: each field, or its default when zero. route reads
// them one by one, where it tests them, rather than copying p. Their
// receivers are pointers: route's p is one, and an inlined method of a
// value receiver copied all of *p to read one field (three copies of
// 40 bytes an arrival).
func (p *PrefixAffinity) cacheThreshold() float64 {
	if p.CacheThreshold == 0 {
		return DefaultCacheThreshold
	}
	return p.CacheThreshold
}

func (p *PrefixAffinity) balanceAbs() int {
	if p.BalanceAbs == 0 {
		return DefaultBalanceAbs
	}
	return p.BalanceAbs
}

func (p *PrefixAffinity) balanceRel() float64 {
	if p.BalanceRel == 0 {
		return DefaultBalanceRel
	}
	return p.BalanceRel
}

// Validate refuses thresholds outside their ranges, naming the field.
func (p PrefixAffinity) Validate() error {
	var errs []error
	if !(p.CacheThreshold >= 0 && p.CacheThreshold <= 1) {
		errs = append(errs, fmt.Errorf("PrefixAffinity.CacheThreshold must be in [0, 1], got %v", p.CacheThreshold))
	}
	if p.BalanceAbs < 0 {
		errs = append(errs, fmt.Errorf("PrefixAffinity.BalanceAbs must be >= 0, got %d", p.BalanceAbs))
	}
	if p.BalanceRel != 0 && !(p.BalanceRel >= 1) {
		errs = append(errs, fmt.Errorf("PrefixAffinity.BalanceRel must be >= 1 (0 means the default), got %v", p.BalanceRel))
	}
	if p.View != nil {
		if err := p.View.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("PrefixAffinity.View: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Route picks the replica with the longest cached prefix, or the least
// loaded when the fleet is out of balance or nothing useful is cached.
func (p PrefixAffinity) Route(r *workload.Request, v *View) int { return p.route(r, v) }

// route is Route. The runner calls it on its own copy of its
// PrefixAffinity router (routing.prefix), not through the Router
// interface, whose call of a value method went through the method's
// pointer wrapper, which copied p and called again. It reads each
// threshold with its default (WithDefaults) where it tests it, rather
// than copying p with all of them set at every arrival.
//
// With the fleet's replicas kept (View.each) it reads their range
// alone, without the least loaded (heldBounds, inlined: heldRange's
// first read without its call, Regime/Fleet8PrefixApprox servesim's
// own 9,415 then 9,404 a request; the least left out, 9,633 then 9,619–9,623), and
// finds the least only where it answers with it (leastHeld): a replica
// with a cached prefix is the longest one whoever the least is, as
// longestCached takes the least's place only while none has one (its
// least, -1 then, stands for none found yet).
//
// With the replicas kept, it reads them only when the fleet may be out
// of balance: a read that finds their range hi − lo at most BalanceAbs
// short of it (calm) knows the test fails until that many more changes
// of one replica's count by one (runner.holds, counted by holdApart)
// may have widened the range past it, and the arrivals until then skip
// the read (twins.balanceEach reads at every arrival, its twin).
func (p *PrefixAffinity) route(r *workload.Request, v *View) int {
	least, lo, hi := -1, 0, 0
	if v.each != nil {
		if rr := v.r; rr.holds < rr.calmUntil {
			return p.balanced(r, v)
		}
		lo, hi = heldBounds(*v.each)
		v.r.calm(hi-lo, p.balanceAbs())
	} else {
		least, lo, hi = v.heldRange()
	}
	if hi-lo > p.balanceAbs() && float64(hi) > float64(lo)*p.balanceRel() {
		return v.leastHeld(least, lo)
	}
	best, longest := v.longestCached(least)
	if r.InputTokens > 0 && p.cachedOver(longest, r.InputTokens) {
		return best
	}
	return v.leastHeld(least, lo)
}

// balanced is route past a balance test known to fail (calm), with the
// replicas kept (View.each): the least loaded is found only where it
// answers with it, as route finds it.
func (p *PrefixAffinity) balanced(r *workload.Request, v *View) int {
	best, longest := v.longestCached(-1)
	if r.InputTokens > 0 && p.cachedOver(longest, r.InputTokens) {
		return best
	}
	least, _, _ := heldRangeEach(*v.each)
	return least
}

// calm notes, at a read of the kept replicas' range (spread, hi − lo),
// how many more changes of the counts by one leave PrefixAffinity's
// balance test, at BalanceAbs abs, failing: abs − spread, none when it
// is negative (the test may pass now). With twins.balanceEach none.
func (r *runner) calm(spread, abs int) {
	if r.tw.balanceEach || spread > abs {
		r.calmUntil = 0
		return
	}
	r.calmUntil = r.holds + min(abs-spread, 1<<30) + 1
}

// cachedOver says whether longest cached tokens of a prompt of input
// tokens (> 0) are more than the cache threshold of it: the quotient
// longest/input, in floats, above the threshold. At the default
// threshold, one half, it asks 2·longest > input in integers, the same
// answer without the divide: the quotient of integers up to 2^52 is
// more than one half by 1/(2·input) at least when it is more at all,
// above half an ulp there (2^−54), so it never rounds down to one
// half. TestCachedOverIsTheQuotient holds it to cachedOverQuotient, the
// quotient always.
func (p *PrefixAffinity) cachedOver(longest, input int) bool {
	if p.CacheThreshold == 0 && input <= 1<<52 {
		return 2*longest > input
	}
	return cachedOverQuotient(longest, input, p.cacheThreshold())
}

// cachedOverQuotient is cachedOver by the quotient, at threshold t.
func cachedOverQuotient(longest, input int, t float64) bool {
	return float64(longest)/float64(input) > t
}
