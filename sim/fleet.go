package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/ascend"
	"github.com/servesim/servesim/workload"
)

// Fleet is the replicas a run drives and how arrivals are routed among
// them. The zero value is one replica configured by Config.Engine and
// Config.Model, which is what Run simulated before fleets existed: a fleet
// of one gives the same bytes under any router.
type Fleet struct {
	// Replicas configures each replica: its engine and cost model, so an
	// old and a new accelerator generation may serve side by side. nil
	// means one replica configured by Config.Engine and Config.Model; an
	// empty, non-nil slice is refused, and so are more than MaxReplicas.
	Replicas []ReplicaConfig
	// Router chooses a replica for each arrival; nil means RoundRobin{}.
	Router Router
	// SignalDelay is how stale the load a router reads may be, as in real
	// control planes: the replicas' counts are refreshed when a router
	// reads them at least SignalDelay after its last refresh, and between
	// refreshes it sees those counts plus only its own decisions since.
	// The cached prefix a router reads is the replica's own cache unless
	// the router reads it through another CacheView (View.CachedPrefix).
	// 0 means fresh signals at every arrival.
	SignalDelay time.Duration
	// Frontends is the number of router instances (gateway replicas)
	// arrivals are dealt to in turn. Each keeps its own stale view: with a
	// SignalDelay, none sees the others' decisions until its next refresh,
	// which is how stale load signals make routers herd. 0 means 1; it
	// changes nothing without a SignalDelay. At most MaxFrontends.
	Frontends int
	// Prefill is a prefill pool (pools.go): with one, the fleet is
	// disaggregated, Replicas are its decode pool and Router routes among
	// them. The zero value is none: a co-located fleet.
	Prefill PrefillPool
	// HostTier is each replica's KV offload to host memory, SharedStore
	// a KV store every replica reaches over one link (tiers.go): evicted
	// prefix blocks survive there and load back on a hit. Their zero
	// values are none.
	HostTier    HostTier
	SharedStore SharedStore
	// Autoscale lets replicas join and leave while the run goes on
	// (autoscale.go): Replicas are then the replicas it starts with. The
	// zero value is a fixed fleet.
	Autoscale Autoscale
}

// MaxReplicas bounds len(Fleet.Replicas): ten thousand replicas, 40,000
// accelerators of the Atlas kind, beyond the fleet one router fronts.
// Every replica is allocated when the run starts, about 6 KB each (its
// engine and its share of the summary), whatever it will hold: 10,000
// replicas allocate about 60 MB, in about 0.2 s, before the first
// arrival. (Before the fleet was one allocation, each replica cost
// 14-16 KB of allocation: 100,000 took 1.1 GB and 16 s for a single
// request, and a million (examples/routing -replicas 1000000) ran 70 s
// to 1.84 GB without a result.) At the bound, a router
// that reads every replica's load (LeastLoaded) costs about 1 ms an
// arrival: 20,000 requests in 20 s.
const MaxReplicas = 10_000

// MaxFrontends bounds Fleet.Frontends: each frontend keeps its own stale
// view of every replica's load (32 bytes a replica), so 256 frontends of
// MaxReplicas replicas keep 82 MB; a thousand billion allocated them all
// at once and ran out of memory.
const MaxFrontends = 256

// ReplicaConfig is one replica of a fleet. Its zero value is the Atlas TP4
// replica: engine.Config{} priced by costmodel.Frozen{}.
type ReplicaConfig struct {
	Engine engine.Config
	// Model prices its steps; nil means costmodel.Frozen{}.
	Model costmodel.Model
	// Speculation is its speculative decoding; the zero value is none.
	Speculation Speculation
}

// Copies returns n replicas configured alike: a homogeneous fleet. For
// n <= 0 it returns an empty fleet, which Validate refuses.
func Copies(n int, r ReplicaConfig) []ReplicaConfig {
	out := make([]ReplicaConfig, max(n, 0))
	for i := range out {
		out[i] = r
	}
	return out
}

func (f Fleet) validate(c Config) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("sim: "+format, a...)) }
	if f.Replicas != nil && len(f.Replicas) == 0 {
		bad("Fleet.Replicas is empty: a fleet needs at least one replica (leave it nil for one replica configured by Engine and Model)")
	}
	if f.Replicas != nil && (!reflect.ValueOf(c.Engine).IsZero() || c.Model != nil) {
		bad("Config.Engine and Config.Model configure the single replica; with Fleet.Replicas set, configure each replica there")
	}
	reps := f.Replicas
	if len(reps) > MaxReplicas {
		bad("Fleet.Replicas has %d replicas, more than MaxReplicas (%d): every replica is allocated when the run starts, about 6 KB each, whatever it holds", len(reps), MaxReplicas)
		reps = nil // one error, not one per replica
	}
	for i, r := range reps {
		if err := r.Engine.Validate(); err != nil {
			bad("Fleet.Replicas[%d]: %w", i, err)
		}
		if err := validateModel(r.Model); err != nil {
			bad("Fleet.Replicas[%d]: %w", i, err)
		}
	}
	if f.SignalDelay < 0 {
		bad("Fleet.SignalDelay must be >= 0 (0 means fresh signals), got %v", f.SignalDelay)
	}
	if f.Frontends < 0 {
		bad("Fleet.Frontends must be >= 0 (0 means one router), got %d", f.Frontends)
	}
	if f.Frontends > MaxFrontends {
		bad("Fleet.Frontends must be <= MaxFrontends (%d): each keeps its own view of every replica, got %d", MaxFrontends, f.Frontends)
	}
	if v, ok := f.Router.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			bad("Fleet.Router: %w", err)
		}
	}
	if err := f.Prefill.validate(c); err != nil {
		errs = append(errs, err)
	}
	if err := f.validateTiers(c); err != nil {
		errs = append(errs, err)
	}
	if err := f.Autoscale.validate(f, c); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Router chooses the replica an arriving request goes to. It is called once
// per arrival, in arrival order, with the request and a read-only view of
// every replica, and returns a replica index in [0, v.Replicas()); neither
// the request nor the view may be kept after the call. A
// router is configuration (a value with its parameters, safe to share
// between the runs of a sweep): whatever it must remember between
// arrivals it derives from the view (Routed, Rand), so one run's decisions
// never leak into another's. A new router is one type with this method,
// in a file of its own.
type Router interface {
	Route(r *workload.Request, v *View) int
}

// Load is what a real router reads of a replica's load.
type Load struct {
	Waiting, Running int
	// Outstanding is the work the replica holds, in tokens: prompt tokens
	// not yet in KV plus output tokens not yet emitted, over every request
	// it holds.
	Outstanding int
	// FreeBlocks is the KV blocks no request holds (cached or not).
	FreeBlocks int
}

// Held is the requests the replica holds, waiting or running.
func (l Load) Held() int { return l.Waiting + l.Running }

// View is a router's read-only view of the fleet at one arrival. Reading
// it never changes a replica: no cache entry is touched and no scratch
// state kept by the engine is written.
type View struct {
	r   *runner
	req *workload.Request
	// The pool it shows: the fleet's replicas lo to lo+n-1 (the whole
	// fleet, or a disaggregated fleet's decode or prefill pool), or, when
	// idx is set, the replicas it lists (an autoscaled fleet's routable
	// replicas, in index order: n = len(*idx)); and the count of requests
	// its router routed.
	lo, n  int
	idx    *[]int32
	routed *int
	// each is the fleet's replicas when heldRange reads them one by one
	// (heldRangeEach) at every arrival, known at the start: fresh
	// signals, the whole fleet (no prefill pool, no autoscaler) and no
	// lackRoots; nil otherwise (and with twins.noHeldEach). A pointer
	// (to runner.heldReps), so that a View stays comparable.
	each *[]replica
}

// Replicas is the number of replicas.
func (v *View) Replicas() int { return v.n }

// at is the fleet index of the view's replica i.
func (v *View) at(i int) int {
	if v.idx != nil {
		return int((*v.idx)[i])
	}
	return i + v.lo
}

// Load returns replica i's load, as fresh as Fleet.SignalDelay allows.
func (v *View) Load(i int) Load {
	i = v.at(i)
	if d := v.r.cfg.Fleet.SignalDelay; d > 0 {
		return v.r.frontend().load(v.r, i, d)
	}
	return v.r.reps[i].load(v.r.now)
}

// Outstanding is Load(i).Outstanding, the one figure LeastLoaded and
// PowerOfTwo weigh, read without the rest of the load: with fresh
// signals it is the engine's count alone, which counts a run's steps
// that ended by now itself (engine.Engine.Outstanding), so the run's
// blocks need not be taken first, as Load's SyncTo takes them for
// FreeBlocks (SyncTo changes nothing a step-by-step engine would not
// have done by now: the differential tests, which draw both routers,
// hold the runs without it to the stepwise ones). A disaggregated fleet
// of 6 behind LeastLoaded read 6 loads an arrival at about 90
// instructions each.
func (v *View) Outstanding(i int) int {
	if v.r.cfg.Fleet.SignalDelay > 0 {
		return v.Load(i).Outstanding
	}
	return v.r.reps[v.at(i)].eng.Outstanding(v.r.now)
}

// held is Load(i).Held(), the one figure PrefixAffinity weighs, read
// without the rest of the load: with fresh signals the engine's waiting
// and running requests, which a run's blocks taken by now (SyncTo) do
// not change, so, as for Outstanding, the run is not synced first (a
// view that reads a replica's cache syncs it itself). A fleet of 8
// behind PrefixAffinity with ApproxView spent about 130 instructions a
// replica an arrival on the whole Load. TestHeldIsTheLoads holds it to
// the whole Load.
func (v *View) held(i int) int {
	if v.r.cfg.Fleet.SignalDelay > 0 {
		return v.Load(i).Held()
	}
	e := v.r.reps[v.at(i)].eng
	return e.Waiting() + e.Running()
}

// heldRange is the replica holding the fewest requests (held), ties to
// the lowest index, with that count and the most any replica holds:
// PrefixAffinity's balance test. With fresh signals and the view's
// replicas in one block of the fleet it reads each engine's counts in
// one loop, as LeastOutstanding does; otherwise replica by replica
// through held (TestHeldIsTheLoads holds both to the whole Load).
func (v *View) heldRange() (least, lo, hi int) {
	if v.each != nil { // the tests below, made once (View.each): Regime/Fleet8PrefixApprox 9,813 then 9,792 a request
		return heldRangeEach(*v.each)
	}
	if v.r.cfg.Fleet.SignalDelay > 0 || v.idx != nil {
		lo = v.held(0)
		hi = lo
		for i := 1; i < v.n; i++ {
			h := v.held(i)
			if h < lo {
				least, lo = i, h
			}
			hi = max(hi, h)
		}
		return least, lo, hi
	}
	if m := v.r.roots; m != nil && v.n == len(m.count) {
		// The whole fleet's counts kept by lackRoots as requests come
		// and go, not read replica by replica: BenchmarkRunFleet64/
		// workload=prefix/router=PrefixAffinity 15,022 then 14,414
		// instructions a request (SERVESIM_BUDGET_FUNCS; heldRange 734 then 30,
		// lackRoots.in and out about 90 more). Kept there, in the
		// calls a fleet of ExactView already makes, not in hold, which
		// every run reaches (that cost RunAtlas 26 a request).
		return m.heldRange()
	}
	return heldRangeEach(v.r.reps[v.lo : v.lo+v.n])
}

// heldRangeEach is heldRange of replicas reps read one by one: the
// run's own count of each replica's requests (replica.held: the
// engine's waiting and running requests at every arrival, which
// checkedPrefixes holds them to) rather than the engine's (1,309 then
// 734 instructions a request in BenchmarkRunFleet64/workload=prefix/
// router=PrefixAffinity); lackRoots.heldRange's twin.
func heldRangeEach(reps []replica) (least, lo, hi int) {
	lo = reps[0].held
	hi = lo
	for i := 1; i < len(reps); i++ {
		h := reps[i].held
		if h < lo {
			least, lo = i, h
		}
		hi = max(hi, h)
	}
	return least, lo, hi
}

// heldBounds is heldRangeEach's lo and hi alone (PrefixAffinity.route).
func heldBounds(reps []replica) (lo, hi int) {
	lo = reps[0].held
	hi = lo
	for i := 1; i < len(reps); i++ {
		h := reps[i].held
		lo, hi = min(lo, h), max(hi, h)
	}
	return lo, hi
}

// leastHeld is least, or when it is -1 (not found: heldBounds) the
// first of the kept replicas (View.each) that holds lo requests, the
// fewest: heldRangeEach's least.
func (v *View) leastHeld(least, lo int) int {
	if least >= 0 {
		return least
	}
	reps := *v.each
	for i := range reps {
		if reps[i].held == lo {
			return i
		}
	}
	panic("sim: no replica holds the fewest requests")
}

// LeastOutstanding is the replica with the fewest outstanding tokens
// (Outstanding), ties to the lowest index: LeastLoaded's choice, and a
// read any router may make. With fresh signals and the view's replicas
// in one block of the fleet (no routable list: a fleet that does not
// autoscale) it reads each engine's count in one loop; otherwise
// replica by replica through Outstanding, the loop's twin
// (TestOutstandingIsTheLoads holds both to the whole Load). A router's
// own loop over Outstanding cost about 40 instructions a replica of the
// 60 a replica LeastLoaded spent; a loop testing which way to read at
// each replica, 16 more.
func (v *View) LeastOutstanding() int {
	if v.r.cfg.Fleet.SignalDelay > 0 || v.idx != nil {
		best, least := 0, v.Outstanding(0)
		for i := 1; i < v.n; i++ {
			if o := v.Outstanding(i); o < least {
				best, least = i, o
			}
		}
		return best
	}
	return leastOutstanding(v.r.engs[v.lo:v.lo+v.n], v.r.now)
}

// leastOutstanding is LeastOutstanding's loop: the index in engs (one or
// more; runner.engs or a part of it) of the replica whose engine holds the fewest outstanding tokens
// at now, ties to the lowest. send calls it on the whole fleet for
// leastFresh, without the view's tests and slicing (about 20
// instructions an arrival of Fleet8LeastLoaded).
func leastOutstanding(engs []*engine.Engine, now time.Duration) int {
	best, least := 0, engs[0].Outstanding(now)
	for i := 1; i < len(engs); i++ {
		if o := engs[i].Outstanding(now); o < least {
			best, least = i, o
		}
	}
	return best
}

// leastKept is leastEach's choice of the whole fleet read off the loads
// the replicas keep (loadOut): a replica's engine is read again
// (engine.Engine.OutstandingUntil) only once its move has lowered its
// load (loadUntil passed) or the engine has changed (run and edit clear
// loadUntil), about ten of the 64 an arrival of
// BenchmarkRunFleet64/workload=atlas/router=LeastLoaded, whose engines
// leastOutstanding read at every arrival. Its twin, with twins.eachLoad,
// is leastEach (TestKeptLoadsAreEachLoad).
func (r *runner) leastKept() int {
	now, reps := r.now, r.reps
	best, least := 0, math.MaxInt
	for i := range reps {
		rep := &reps[i]
		if now >= rep.loadUntil {
			rep.loadOut, rep.loadUntil = rep.eng.OutstandingUntil(now)
		}
		if rep.loadOut < least {
			best, least = i, rep.loadOut
		}
	}
	return best
}

// leastEach is leastKept's twin: every engine's load read, through
// mixedrun.Least in a fleet of mixed moves (fleetMixed), else
// leastOutstanding.
func (r *runner) leastEach() int {
	if r.mixLeast != nil {
		return r.mixLeast(r.now)
	}
	return leastOutstanding(r.engs, r.now)
}

// CachedPrefix is how many of the request's leading prompt tokens replica
// i holds in its prefix cache (shared content only: what the workload's
// prefix ids make common to requests), as the router's CacheView knows
// it (a PrefixAware router's; ExactView otherwise). ExactView reads the
// replica's cache itself: SGLang's cache-aware router approximates each
// worker's cache with a radix tree of the prompts it routed there
// (ApproxView), llm-d's scorer with the worker's KV events (EventsView),
// and this is the ideal of both.
//
// ExactView's keys for the request are computed once per arrival
// (prefixKeys), not once per replica asked, and a request without prefix
// ids (so without keys) is answered without touching the replica.
func (v *View) CachedPrefix(i int) int {
	if v.r.cache == nil && len(v.req.PrefixHashes) == 0 {
		return 0
	}
	return v.cachedAt(i)
}

// longestCached is the view's replica whose CachedPrefix is the
// longest, ties to the one holding fewer requests (held), then to the
// lower index, with that length; least and 0 when none holds any: what
// PrefixAffinity routes by. With ApproxView the arrival's trees are
// matched in one loop, only those whose root holds its first unit
// (approxState.longestEach); with EventsView the indexes are walked in
// one loop (eventsState.longestEach); else it asks CachedPrefix of each
// replica in turn (longestOfEach, their twin: TestCachedPrefixesAreEach).
func (v *View) longestCached(least int) (best, longest int) {
	if a, ok := v.r.cache.(*approxState); ok {
		return a.longestEach(v, least)
	}
	if e, ok := v.r.cache.(*eventsState); ok {
		return e.longestEach(v, least)
	}
	if m := v.r.roots; m != nil {
		return v.exactLongest(m, least)
	}
	if v.r.cache == nil && len(v.req.PrefixHashes) == 0 {
		// Every replica's CachedPrefix is 0 (its first test), so
		// longestOfEach would answer least and 0 after asking each
		// (exactLongest answers so too): RunFleet64
		// atlas/PrefixAffinity (budget test), 1,938 instructions a
		// request in longestOfEach of 9,471. TestCachedPrefixesAreEach
		// holds both to longestOfEach.
		return least, 0
	}
	return longestOfEach(v, least)
}

// longestOfEach is longestCached asking CachedPrefix of each replica.
func longestOfEach(v *View, least int) (best, longest int) {
	best = least
	for i := range v.n {
		if c := v.CachedPrefix(i); c > longest || (c == longest && c > 0 && v.held(i) < v.held(best)) {
			best, longest = i, c
		}
	}
	return best, longest
}

// cachedAt is CachedPrefix past its first test, out of line: the test
// alone inlines into a router's loop over the replicas (mapping the
// position inline made CachedPrefix too big to inline, 6 % more
// instructions for PrefixAffinity on requests without prefix ids).
//
//go:noinline
func (v *View) cachedAt(i int) int { return v.cachedPrefix(v.at(i)) }

// cachedPrefix is CachedPrefix but for ExactView's request without
// prefix ids, of the fleet's replica i.
func (v *View) cachedPrefix(i int) int {
	if v.r.cache != nil {
		return v.r.cache.cached(v.r, i, v.req)
	}
	return v.cachedPath(i, v.prefixPath(i))
}

// cachedPath is engine.CachedPath of path p at the fleet's replica i,
// its run synced to the instant first.
func (v *View) cachedPath(i int, p *engine.PrefixPath) int {
	if p.Blocks() == 0 {
		return 0
	}
	rep := &v.r.reps[i]
	rep.run().SyncTo(v.r.now)
	return rep.eng.CachedPath(p)
}

// prefixPath is the arriving request's prefix path at replica i's block
// size (engine.PrefixPath), made at the first question of an arrival,
// one for each block size in the fleet, as prefixKeys' chains are.
// ExactView asks each engine with it (engine.CachedPath): unlike a chain
// of keys (CachedKeys), it lets the engine keep its prefix cache by
// runs, which holds no keys, and a prompt of one run of ids is one
// lookup an engine, not one a block.
func (v *View) prefixPath(i int) *engine.PrefixPath {
	k := &v.r.keys
	if k.chains == nil {
		k.init(v.r.reps)
	}
	if k.pathArrival != v.r.routed+1 {
		k.pathArrival = v.r.routed + 1
		if len(k.paths) < len(k.chains) {
			k.paths = make([]engine.PrefixPath, len(k.chains))
		}
		for c := range k.chains {
			k.paths[c].ResetPromised(v.req.PrefixHashes, v.req.PrefixBlockTokens, v.req.InputTokens, k.chains[c].blockSize, v.req.PrefixTwoRuns)
		}
	}
	if k.chainOf == nil {
		return &k.paths[0]
	}
	return &k.paths[k.chainOf[i]]
}

// prefixKeys is the arriving request's chain of block keys at replica i's
// block size (engine.PrefixKeys). A key depends on the replica only
// through its block size (no salt, no seed), so the chains are computed
// at the first question of an arrival, one for each block size in the
// fleet, and every replica of that size walks its cache's index along
// the same chain: asking 64 replicas costs one chain, not 64.
func (v *View) prefixKeys(i int) []uint64 {
	k := &v.r.keys
	c := v.chainOf(i)
	k.fill(c)
	return k.chains[c].keys
}

// chainOf is the index of replica i's chain of the arriving request
// (prefixChains.chains), computed at the first question of the arrival
// (prefixChains.compute: the leading keys its memo knows, the rest when
// asked for, extend or fill).
func (v *View) chainOf(i int) int {
	k := &v.r.keys
	if k.arrival != v.r.routed+1 {
		k.compute(v.r, v.req)
	}
	if k.chainOf == nil { // one block size
		return 0
	}
	return int(k.chainOf[i])
}

// prefixChains are the arriving request's block-key chains, one for each
// block size in the fleet (View.prefixKeys), in buffers kept across
// arrivals. They are set up at the first arrival a router asks about the
// cache, so a fleet whose router never does pays nothing for them.
type prefixChains struct {
	arrival int // the arrival the chains are for (routed + 1); 0 before the first
	chains  []keyChain
	chainOf []uint16 // replica → its block size's chain; nil when the fleet has one block size
	// memo holds the chains of recent prompts, a slot for each first
	// prefix id (chainSlot): prompts of a shared prefix key it once,
	// their own units each (a chain is 2 mixes a block).
	memo []chainMemo
	cur  int // the memo slot of the arrival's chains; -1: none (no prefix units)
	// paths are the arrival's prefix paths, by chain (View.prefixPath),
	// made for the arrival pathArrival (routed + 1; 0 before the first).
	paths       []engine.PrefixPath
	pathArrival int
	// The arrival's prompt, whose chains extend computes further, and
	// its leading units numbered first, first+1, … (a shared prefix, as
	// workloads number it): their blocks' keys are the fleet's memo's
	// (engine.Engine.RunKeys), which the engines' KV events read too.
	prefix   []uint64
	p, input int
	asc      int
	two      ascend.Guess // where the last prompt of two runs of ids parted them (ascOf's)
}

// chainMemo is the chains of one prompt's prefix units (ids, of p
// tokens each) at each block size. Another prompt whose leading units
// are the same has the keys of the blocks within them (engine.PrefixKeys
// reads no unit past a block's last token).
type chainMemo struct {
	ids  []uint64
	p    int
	asc  int        // ids's leading units first, first+1, … (prefixChains.asc)
	keys [][]uint64 // by chain
	gen  uint64     // the prompts keyed in this slot, ever
	// A prompt of two runs is kept by its first run alone, not in ids
	// (run): first, first+1, …, first+asc−1, and then end when ended
	// (the prompt goes on past its run). See compute.
	run        bool
	ended      bool
	first, end uint64
}

// sameRun is lcp.Len of the memo's prompt kept by its run (run) and
// ids (not empty), as far as the memo knows the prompt: its run and
// the unit that ends it. two says ids are at most two runs
// (ascend.CommonTwo's shortcut: their first lim agree with the run when
// the first and the lim-th do).
func (m *chainMemo) sameRun(ids []uint64, two bool) int {
	if ids[0] != m.first {
		return 0
	}
	lim := min(m.asc, len(ids))
	n := lim
	if !two || ids[lim-1] != m.first+uint64(lim-1) {
		n = ascend.Len(ids[:lim])
	}
	if n == m.asc && m.ended && len(ids) > n && ids[n] == m.end {
		n++
	}
	return n
}

// memoSlots is the number of chains prefixChains remembers: a workload
// of more distinct first ids computes some prefixes again, as before the
// memo.
const memoSlots = 512

// keyChain is the arrival's chain at one block size: its first keys,
// as many as were asked for (extend), all of them once full. With a memo
// slot, keys is the slot's buffer (chainMemo.keys), which holds the
// arrival's chain as far as it is computed.
type keyChain struct {
	blockSize int
	eng       *engine.Engine // an engine of that block size, whose memo (its fleet's) keys runs of ids; nil: none asked
	keys      []uint64
	full      bool // keys is the whole chain (engine.PrefixKeys's)
	known     int  // leading keys shared with the chain its memo slot held before (prefixChains.cur)
}

// compute makes the chains those of req, the arrival being routed.
func (k *prefixChains) compute(r *runner, req *workload.Request) {
	if k.chains == nil {
		k.init(r.reps)
	}
	k.arrival = r.routed + 1
	p, ids := req.PrefixBlockTokens, req.PrefixHashes
	k.prefix, k.p, k.input = ids, p, req.InputTokens
	if p > 0 {
		ids = ids[:min(len(ids), req.InputTokens/p)] // the units a key may read
	}
	if len(ids) == 0 { // no unit: no key (engine.PrefixKeys)
		for c := range k.chains {
			k.chains[c] = keyChain{blockSize: k.chains[c].blockSize, eng: k.chains[c].eng, full: true}
		}
		k.cur = -1
		return
	}
	k.cur = chainSlot(ids)
	m := &k.memo[k.cur]
	same := 0 // leading units shared with the memo's prompt
	switch {
	case m.p != p:
	case m.run:
		same = m.sameRun(ids, req.PrefixTwoRuns.Two())
	case req.PrefixTwoRuns.Two(): // m.ids[:m.asc] run on from the first: two ids tell (Regime/Fleet8PrefixEvents: 18,887 then 18,396 instructions a request)
		same = ascend.CommonTwo(m.ids, ids, m.asc)
	default:
		same = ascend.Common(m.ids, ids, m.asc) // a prompt of the memo's group parts from it where its run ends
	}
	asc := k.ascOf(ids, m.asc, same, req.PrefixTwoRuns.Two())
	k.asc = asc
	// The memo keeps a prompt of two runs (a group's shared ids, then
	// fresh ones of its own) by its first run and the id that ends it
	// (run, sameRun), not its ids: the next prompt of its slot shares no
	// more unless it repeats the prompt's own ids, and then finds fewer
	// keys known and computes them again, the same keys. The ids copied,
	// a slot's first prompt allocated them (Regime/Fleet8PrefixEvents:
	// growslice 150 instructions a request, and memmove 27 for the 32
	// ids of each prompt's own). TestPrefixChainsEqualPrefixKeys holds
	// the chains to PrefixKeys, over prompts of two runs and others
	// sharing slots.
	if req.PrefixTwoRuns.Two() {
		m.run, m.first, m.ended = true, ids[0], asc < len(ids)
		if m.ended {
			m.end = ids[asc]
		}
		m.ids = m.ids[:0]
	} else {
		cut := same
		if m.run {
			cut = 0 // not in m.ids: ids[:same] agree with the run's
		}
		m.run, m.ids = false, append(m.ids[:cut], ids[cut:]...) // the first same agree
	}
	m.p, m.asc = p, asc
	m.gen++
	for c := range k.chains {
		ch := &k.chains[c]
		ch.keys, ch.full = m.keys[c][:min(len(m.keys[c]), same*p/ch.blockSize)], false
		known := len(ch.keys)
		if k.extended(c) {
			m.keys[c] = ch.keys // as extend leaves it
		} else {
			k.extend(c, known) // no further than the chain goes, but for the keys of its run of ids
		}
		ch.known = min(known, len(ch.keys)) // not those: they may be the prompt's own
	}
}

// ascOf is ascend.Len(ids): how far ids run on from the first, of a
// prompt that shares its first same units with the memo slot's, whose
// ids ran on for memoAsc. They run on as far as the memo's did, within
// the units shared with it. Where they reach the end of those, a
// request that promises at most two runs (two, its PrefixTwoRuns) has
// its first run's end found by bisection (ascend.Two, tried first where
// the last such prompt's ended: a workload's shared prefixes end at one
// place), when its ids pass Two's check; else they are looked at from
// there on (sixteen a pass: a group's first prompt in the slot, hundreds
// of ids; Regime/Fleet8PrefixEvents spent 197 instructions a request in
// ascend.Len so). TestAscOfIsLen holds it to ascend.Len.
func (k *prefixChains) ascOf(ids []uint64, memoAsc, same int, two bool) int {
	asc := min(memoAsc, same)
	if asc != same {
		return asc
	}
	if same > 0 && same < len(ids) && ids[same] != ids[same-1]+1 {
		// ids[:same] run on and the next does not follow: the run ends
		// where the memo's prompt parts (a group's prompt, its own ids
		// after the group's): without Two's bisection,
		// Regime/Fleet8PrefixEvents 14,144 then 14,060 instructions a
		// request (SERVESIM_BUDGET_FUNCS's marginal count).
		return same
	}
	if two {
		if n, ok := k.two.Two(ids); ok {
			return n
		}
	}
	from := max(asc-1, 0) // ids[:asc] run on from the first
	return from + ascend.Len(ids[from:])
}

// extend computes chain c's keys up to at least its first n (all of them
// if it has fewer). engine.ExtendPrefixKeys computes the chain of a
// prompt cut to the units the first n keys read, and one token more
// (a key reads no unit past its block's last token, so the chain of the
// cut prompt is the first keys of the whole one; at most n·b + p + 1
// tokens, it holds n keys and perhaps a unit's more), or of the whole
// prompt when that is shorter (then the chain is full).
//
// The keys of the prompt's leading units numbered on from the first
// (runKeys) come all at once: the fleet's memo keys them once, and the
// engines that cache the prompt key them all for their KV events, so a
// lookup past a replica's held blocks finds them computed.
func (k *prefixChains) extend(c, n int) {
	ch := &k.chains[c]
	k.runKeys(ch, math.MaxInt)
	n = max(n, len(ch.keys))
	in, b := k.input, ch.blockSize
	if cut := (n*b+k.p-1)/k.p*k.p + 1; cut < in {
		in = cut
	}
	ch.keys = engine.ExtendPrefixKeys(ch.keys, k.prefix, k.p, in, b)
	ch.full = in == k.input || len(ch.keys) < n // fewer than n: the prompt's units end sooner
	k.memo[k.cur].keys[c] = ch.keys
}

// fill computes the rest of chain c.
func (k *prefixChains) fill(c int) {
	if ch := &k.chains[c]; !ch.full {
		k.runKeys(ch, math.MaxInt)
		ch.keys = engine.ExtendPrefixKeys(ch.keys, k.prefix, k.p, k.input, ch.blockSize)
		ch.full = true
		k.memo[k.cur].keys[c] = ch.keys
	}
}

// runKeys takes ch's keys up to its first n from the fleet's memo, as
// far as they lie within the prompt's leading units numbered first,
// first+1, … (asc): the keys engine.ExtendPrefixKeys would compute, which
// then computes the rest and cuts the chain where the prompt ends.
func (k *prefixChains) runKeys(ch *keyChain, n int) {
	if to := min(k.asc*k.p/ch.blockSize, n); ch.eng != nil && len(ch.keys) < to {
		if cap(ch.keys) < to+chainStep {
			// Room for the keys a walk computes past the run (nextKey's
			// first, then extend's chainStep), in the buffer the memo
			// keeps: RunKeys's append made it the run's size, and the
			// next key's grew it again (a group's first prompt in a
			// slot: Regime/Fleet8PrefixEvents, growslice 288
			// instructions a request in nextKey).
			ch.keys = slices.Grow(ch.keys, to+chainStep-len(ch.keys))
		}
		ch.keys = ch.eng.RunKeys(ch.keys, k.prefix[0], k.p, to)
	}
}

// chainSlot is the memo slot of a prompt of units ids (not empty): its
// first id's.
func chainSlot(ids []uint64) int {
	return int((ids[0]*keyMul)>>32) % memoSlots
}

// init finds the fleet's block sizes, in the order replicas name them.
func (k *prefixChains) init(reps []replica) {
	chainOf := make([]uint16, len(reps)) // MaxReplicas < 65,536
	of := map[int]uint16{}               // block size → chain
	for i := range reps {
		b := reps[i].eng.Config().BlockSize
		c, ok := of[b]
		if !ok {
			c = uint16(len(k.chains))
			of[b] = c
			k.chains = append(k.chains, keyChain{blockSize: b, eng: reps[i].eng})
		}
		chainOf[i] = c
	}
	if len(k.chains) > 1 {
		k.chainOf = chainOf
	}
	k.initMemo()
}

// initMemo makes the memo's slots, for the chains found.
func (k *prefixChains) initMemo() {
	k.memo = make([]chainMemo, memoSlots)
	for i := range k.memo {
		k.memo[i].keys = make([][]uint64, len(k.chains))
	}
}

// Routed is the number of requests routed before this one in the run
// (in a disaggregated fleet, by this pool's router).
func (v *View) Routed() int { return *v.routed }

// Rand is the run's routing stream ("sim/router" of the run's seed): a
// router that draws from it is seeded like everything else.
func (v *View) Rand() *rand.Rand { return v.r.routeRand }

// signals is the stale view of Fleet.SignalDelay: the loads read at the
// last refresh plus the router's own decisions since.
type signals struct {
	loads []Load
	at    time.Duration
	fresh bool // read at least once
}

func (s *signals) load(r *runner, i int, delay time.Duration) Load {
	if !s.fresh || r.now-s.at >= delay {
		s.grow(len(r.reps))
		for p := range r.routableLen() {
			j := r.routableAt(p)
			s.loads[j] = r.reps[j].load(r.now)
		}
		s.at, s.fresh = r.now, true
	}
	s.grow(i + 1) // a replica that began serving since the refresh: it held nothing then
	return s.loads[i]
}

// grow makes room for n replicas' loads (an autoscaled fleet's joins).
func (s *signals) grow(n int) {
	if len(s.loads) < n {
		s.loads = append(s.loads, make([]Load, n-len(s.loads))...)
	}
}

// routed records the router's own decision in the stale view: the request
// waits at replica i with all its work outstanding.
func (s *signals) routed(i int, req *workload.Request) {
	if s.fresh {
		s.grow(i + 1)
		s.loads[i].Waiting++
		s.loads[i].Outstanding += req.InputTokens + req.OutputTokens
	}
}
