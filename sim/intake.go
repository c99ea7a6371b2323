package sim

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/addinto"
	"github.com/servesim/servesim/internal/ascend"
	"github.com/servesim/servesim/internal/nextinto"
	"github.com/servesim/servesim/workload"
)

// intake is the runner's state of the requests coming in (this file):
// the source, the slots of the requests it yielded, the client-side queue
// of Config.MaxConcurrency and the backlog bound.
type intake struct {
	src workload.Source
	fb  workload.Feedback
	// paced is the source as workload.Paced, if it is: streamDue says a
	// request its Next yielded has not arrived yet; lastRef is the slot
	// schedule filled last.
	paced workload.Paced
	// fill is a built-in source's in-place Next (internal/nextinto),
	// which writes the next request into nextReq; nil for any other source
	// (or with noNextInto), whose Next's request is copied into nextReq.
	// schedule reads nextReq by pointer.
	fill    nextInto
	nextReq workload.Request
	// recycle is fill's Recycle, when a request's prefix ids may be
	// handed back at its end (recycleIDs); nil otherwise.
	recycle idRecycler
	// more is fill's More, a closed-loop source's that tells when its
	// next answer is ErrWaiting (moreReady); nil otherwise.
	more        moreReady
	recycled    int // arrays handed back (a test's count)
	streamDue   bool
	lastRef     int32
	srcDone     bool
	lastArrival time.Duration
	seen        int        // requests pulled from the source
	arrived     int        // requests that arrived
	errs        *rand.Rand // injects server errors (Config.ErrorRate)

	slots    []slot
	freeRefs []int32

	inFlight   int     // requests sent and not ended (Config.MaxConcurrency)
	clientQ    []int32 // requests waiting client-side for a slot, from clientHead
	clientHead int

	maxHeld    int  // Config.MaxBacklog resolved; 0 means no bound
	overloaded bool // the backlog passed maxHeld: the run stops
}

func newIntake(cfg Config, src workload.Source) intake {
	in := intake{src: src, errs: workload.NewStream(cfg.Seed, "sim/errors")}
	in.fb, _ = src.(workload.Feedback)
	in.paced, _ = src.(workload.Paced)
	in.fill, _ = nextinto.Of(src).(nextInto)
	if in.maxHeld = cfg.MaxBacklog; in.maxHeld == 0 {
		in.maxHeld = DefaultMaxBacklog
	} else if in.maxHeld < 0 {
		in.maxHeld = 0
	}
	return in
}

// routing is what routing each arrival keeps (route, and the View a
// router reads, fleet.go).
type routing struct {
	router Router
	// prefix is the router, when it is a PrefixAffinity: a copy of it
	// route calls directly (PrefixAffinity.route), not through Router
	// (nil with twins.routerCall, its twin).
	prefix    *PrefixAffinity
	routeRand *rand.Rand
	routed    int // requests routed so far
	routeReq  workload.Request
	heldReps  []replica // the fleet's replicas View.each points at, nil when it is nil
	// holds counts the changes of a fleet's replicas' held requests
	// (holdApart), each by one; calmUntil is the count below which
	// PrefixAffinity's balance test, read with View.each, is known to
	// fail without reading the replicas (PrefixAffinity.route's calm).
	holds, calmUntil int
	signals          []signals // each frontend's stale view (Fleet.SignalDelay)
	// routes: a send asks the router, or the gateway (several replicas,
	// a router set, or a Config.Gateway); else it goes to the one replica.
	routes bool
	// leastFresh: send takes LeastLoaded's choice itself, no request
	// built (see route), of a disaggregated fleet's two pools too
	// (placeLeast); gwOrLeast: a gateway, or leastFresh (send tests
	// one flag where it tested the gateway alone, so that other routers
	// pay nothing for leastFresh).
	leastFresh, gwOrLeast bool
	view                  View
	cache                 cacheState   // the memory of the router's CacheView; nil: the replicas' caches (ExactView)
	roots                 *lackRoots   // with ExactView, the replicas known to hold no block of a group; nil: none kept
	keys                  prefixChains // the arrival's block keys (View.CachedPrefix)
}

// newRouting is a run's routing; its view is the runner's to point at
// itself.
func newRouting(cfg Config) routing {
	rt := routing{router: cfg.Fleet.Router, routeRand: workload.NewStream(cfg.Seed, "sim/router"),
		signals: make([]signals, max(1, cfg.Fleet.Frontends))}
	if rt.router == nil {
		rt.router = RoundRobin{}
	}
	return rt
}

// slot is a request's record plus what the runner needs while it lives.
type slot struct {
	rec       Record
	gen       uint32 // bumped when the slot is reused, to expire timeouts
	live      bool
	willError bool
	queued    bool           // waiting at the gateway (Gateway.Limit)
	answerIDs bool           // prefix covers the output too (workload.Request.HashesCoverOutput)
	prefixTwo ascend.Promise // prefix is at most two runs of consecutive ids (workload.Request.PrefixTwoRuns)
	priority  int            // with its class's
	class     int            // index in the runner's classes
	prefix    []uint64       // the request's prefix hash ids, for the cache
	prefixLen int            // tokens per hash id
	stream    bool           // a paced source's Next yielded it: its arrival pulls the next
	// A disaggregated fleet's remote request (pools.go): its decode
	// replica, when its prefill ended and when its transfer started
	// (Never when none is moving).
	decoder         int32
	handoff, xferAt time.Duration
	prefillSched    time.Duration // its FirstScheduled and Cached at the prefill replica
	prefillCached   int32
	// A load from the KV tiers (tiers.go): the keys it pinned in each,
	// the blocks each part moves, the parts not yet landed, and when it
	// started.
	tierHost, tierShared []uint64
	loadHost, loadShared int32
	tierPending          uint8
	loadAt               time.Duration
}

// pull takes the next request(s) from the source: one for an open-loop
// source (the next arrival, kept in the event queue), all that are ready for
// a closed-loop one, and for a paced one (workload.Paced) the requests
// feedback released and the next that keeps its own instant.
func (r *runner) pull() error {
	if r.paced != nil {
		return r.pullPaced()
	}
	if r.fill == nil {
		return r.pullNext()
	}
	for !r.srcDone {
		if err := r.fill.NextInto(&r.nextReq); err != nil { // the usual answer, a request, asks no more
			return r.noRequest(err)
		}
		if err := r.schedule(&r.nextReq); err != nil {
			return err
		}
		if r.fb == nil || r.more != nil && !r.more.More() {
			return nil
		}
	}
	return nil
}

// moreReady is a closed-loop source on internal/nextinto's route that
// tells whether its NextInto would now write a request or answer
// io.EOF (true), not ErrWaiting (workload's chatInto.More): after a
// request, pull asks it rather than call NextInto for the ErrWaiting,
// which noRequest drops. Regime/Conversations: see docs/fastpaths.md.
// TestMoreIsEachPull holds it to the drain (twins.eachPull).
type moreReady interface{ More() bool }

// pullNext is pull's loop for a source without internal/nextinto's
// route (a user's, a trace; the route's twin): its Next's request,
// held where Next returned it, is scheduled. (Written into r.nextReq
// too, it was zeroed and copied once more: Regime/AzureReplay 8,022
// then 8,069 instructions a request.)
func (r *runner) pullNext() error {
	for !r.srcDone {
		req, err := r.src.Next()
		if err != nil {
			return r.noRequest(err)
		}
		if err := r.schedule(&req); err != nil {
			return err
		}
		if r.fb == nil {
			return nil
		}
	}
	return nil
}

// pullPaced pulls a paced source as lazily as an open-loop one: every
// request feedback released (each due at or after now), then, unless one
// is already due, the next request that keeps its own instant, whose
// arrival pulls again; after ErrWaiting, the next Finished pulls again.
func (r *runner) pullPaced() error {
	if err := r.drainReleased(); err != nil {
		return err
	}
	if r.srcDone || r.streamDue {
		return nil
	}
	if r.fill != nil {
		if err := r.fill.NextInto(&r.nextReq); err != nil {
			return r.noRequest(err)
		}
		if err := r.schedule(&r.nextReq); err != nil {
			return err
		}
	} else { // its own variable, not a pointer to one or r.nextReq, which a NextInto's argument is: it escaped, a request's allocation
		req, err := r.src.Next()
		if err != nil {
			return r.noRequest(err)
		}
		if err := r.schedule(&req); err != nil {
			return err
		}
	}
	r.slots[r.lastRef].stream, r.streamDue = true, true
	return r.drainReleased()
}

// nextInto is internal/nextinto's route: a built-in source's Next that
// writes the request into *r, every field of it.
type nextInto interface {
	NextInto(r *workload.Request) error
}

// The in-place Add's halves (internal/addinto): the engine's record of
// the next request (zero), and Engine.Add of the request written there,
// which returns the record of the next. Each replica takes its engine's
// record at its setup (stage); send writes the request into the record
// of the replica it chose. (A Next and a Commit a request through an
// interface saved nothing: RunAtlas's send and its calls 262.5 then
// 262.8 instructions a request; the record kept in the replica, found
// with the replica itself, does.)
var (
	nextInPlace, _   = addinto.Next.(func(*engine.Engine) *engine.Request)
	commitInPlace, _ = addinto.Commit.(func(*engine.Engine, time.Duration) (*engine.Request, error))
	commitRemote, _  = addinto.CommitRemote.(func(*engine.Engine, time.Duration) (*engine.Request, error))
)

// stage takes the replica's engine's record of the next request, for
// send to write in place (with noAddInto, none: send calls Engine.Add).
// send stages a replica after its first Add, not the runner's setup: a
// record is a seq (about 400 bytes), which a fleet's setup would
// allocate for each replica (TestFleetSetupAllocatesEachReplicaOnce).
func (rep *replica) stage() {
	if !noAddInto && nextInPlace != nil && commitInPlace != nil && commitRemote != nil {
		rep.staged = nextInPlace(rep.eng)
	}
}

// stage writes request ref of slot s, sent at now, into q, the zero
// record of a replica's engine (replica.staged): every field Add's
// argument would have but its Deadline and Remote, which the caller
// writes.
func (s *slot) stage(q *engine.Request, ref int32, now time.Duration) {
	q.Ref, q.Arrival, q.Input, q.Output = ref, now, s.rec.Input, s.rec.Output
	q.Priority, q.Class = s.priority, s.class
	if s.prefix != nil { // q.Prefix is nil: its store's write barrier's test spared (RunAtlas has none)
		q.Prefix = s.prefix
	}
	q.PrefixBlockTokens, q.PrefixTwoRuns, q.PrefixCoversOutput = s.prefixLen, s.prefixTwo, s.answerIDs
}

// noAddInto turns internal/addinto's route off (a test's switch): send
// calls Engine.Add, the route's twin.
var noAddInto bool

// idsInPlace tells a source on the route that can extend a request's
// prefix ids in place for a later one (a ChatSource: a conversation's
// next turn, its history's ids not copied) that it may: the runner
// keeps no request's ids past its end, where it calls the source's
// Finished (endSlot drops its slot's), and the engine none past its
// life. Not when it routes: a Router, a user's among them, must keep no
// request, but a cache view's memory of an arrival's ids (its slice,
// known by its address) is better not put to that test. Regime/
// Conversations, a turn's ids copied then extended in place: 12,274
// then 12,097 instructions a request (the budget test; servesim's own
// 11,646 then 11,614, the rest the runtime's copy and the slabs'
// allocation and clearing).
// TestIDsInPlaceAreCopied holds it to the copy (twins.noIDsInPlace).
func (r *runner) idsInPlace() {
	if ip, ok := r.fill.(interface{ IDsInPlace() }); ok && !r.routes && !r.tw.noIDsInPlace {
		ip.IDsInPlace()
	}
}

// idRecycler is a built-in source that takes back a request's prefix
// ids once no one reads them (workload's generatorInto.Recycle).
type idRecycler interface{ Recycle(ids []uint64) }

// recycleIDs has end hand a request's prefix ids back to a source on
// the route that takes them (a Generator: a later prompt of the same
// group gets the array, its group's shared ids in place, not a slab's
// new room and a copy of them), where no one reads them past the end:
// the runner drops a slot's at its end and the engine none past a
// request's life (as idsInPlace has it); a cache view copies what it
// keeps of an arrival's ids, and lackRoots' note of the arrival last
// asked about, known by its address, is forgotten at the end (end);
// the built-in routers keep none. Not with a user's Router (it may
// keep a request's ids), a prefill pool, a gateway or an autoscaler.
// Regime/Fleet8PrefixApprox 10,110 then 9,926 instructions a request,
// RunFleet64/workload=prefix/router=PrefixAffinity 10,380 then 10,157
// (the budget test). TestRecycledIDsAreFresh holds it to fresh arrays
// (twins.noRecycleIDs).
func (r *runner) recycleIDs(cfg Config) {
	rc, ok := r.fill.(idRecycler)
	if !ok || r.tw.noRecycleIDs || r.pd != nil || r.gw != nil || cfg.Fleet.Autoscale.On() || !keepsNoIDs(cfg.Fleet.Router) {
		return
	}
	r.recycle = rc
}

// keepsNoIDs reports whether rt is nil or one of this package's
// routers, which keep no request's ids past its routing.
func keepsNoIDs(rt Router) bool {
	switch rt.(type) {
	case nil, RoundRobin, Random, LeastLoaded, PowerOfTwo, ConsistentHash, PrefixAffinity:
		return true
	}
	return false
}

// noRequest is what a source's Next answered instead of a request: none
// now (ErrWaiting) or none left (EOF, which marks the source done), both
// nil, or an error. (A helper that also called Next and returned its
// request copied every request once more: 1 % of BenchmarkRunAtlas.)
//
// ErrWaiting itself, a closed-loop source's usual answer, is compared
// first, as errors.Is compares first (a wrapped one goes on to it):
// errors.Is alone cost Regime/Conversations 55 instructions a request,
// its target's comparability read through reflectlite first (10,822
// then 10,767, the budget test). TestWrappedErrWaitingWaits holds a
// wrapped one to it.
func (r *runner) noRequest(err error) error {
	switch {
	case err == workload.ErrWaiting || errors.Is(err, workload.ErrWaiting):
		return nil
	case err == io.EOF:
		r.srcDone = true
		return nil
	}
	return fmt.Errorf("sim: reading the workload: %w", err)
}

// drainReleased schedules the requests a paced source's feedback released.
func (r *runner) drainReleased() error {
	for {
		req, ok := r.paced.Released()
		if !ok {
			return nil
		}
		if err := r.schedule(&req); err != nil {
			return err
		}
	}
}

// schedule takes a request the source yielded into a slot and its arrival
// into the event queue. It reads req by pointer (r.nextReq, mostly): by
// value, its 112 bytes were copied a request.
func (r *runner) schedule(req *workload.Request) error {
	floor := r.lastArrival
	if r.fb != nil {
		floor = r.now
	}
	if req.Arrival < floor {
		return fmt.Errorf("sim: workload request %d arrives at %v, before %v: sources must yield in arrival order", req.ID, req.Arrival, floor)
	}
	ref := r.alloc()
	s := &r.slots[ref]
	// Every field written once, in place (TestScheduleWritesEveryField
	// holds it to a Record{} zeroed and filled): a composite literal was
	// built on the stack from a template and copied, 240 bytes twice;
	// zeroed in place and then filled, the fields set were written twice.
	rec := &s.rec
	rec.ID, rec.Conversation, rec.Turn, rec.Class = req.ID, req.Conversation, req.Turn, req.Class
	rec.Replica, rec.Measured, rec.Remote = 0, r.measures(req.Arrival), false
	rec.Scheduled, rec.Arrival, rec.Sent = req.Arrival, req.Arrival, false
	rec.FirstScheduled, rec.FirstToken, rec.Finish = Never, Never, Never
	rec.Input, rec.Output, rec.Emitted, rec.Cached, rec.Preemptions = req.InputTokens, req.OutputTokens, 0, 0, 0
	rec.LastToken, rec.MaxITL, rec.MaxTokenITL, rec.ITLOver = Never, 0, 0, 0
	rec.Drafted, rec.Accepted, rec.GatewayWait = 0, 0, 0
	rec.PrefillReplica, rec.KVWait, rec.Transfer = 0, 0, 0
	rec.CachedHost, rec.CachedShared, rec.TierLoad = 0, 0, 0
	rec.Tokens = rec.Tokens[:0]
	rec.Status, rec.LengthCapped, rec.Reason = 0, false, ""
	if r.perClass {
		s.class = r.classes.of(req.Class)
		s.priority = req.Priority + r.classes.list[s.class].priority
	} else { // the default class alone (classes.of's 0), of priority 0: RunAtlas's schedule 164 then 152 instructions a request (SERVESIM_BUDGET_FUNCS)
		s.class, s.priority = 0, req.Priority
	}
	if req.PrefixHashes != nil { // s.prefix is nil (a new slot, or end cleared it): a store and its write barrier's test spared
		s.prefix = req.PrefixHashes
	}
	s.prefixLen, s.prefixTwo, s.answerIDs = req.PrefixBlockTokens, req.PrefixTwoRuns, req.HashesCoverOutput
	s.willError = req.Failed
	s.stream = false
	if r.speculates {
		r.seedAcc(ref, req.ID)
	}
	r.lastRef = ref
	r.seen++
	if r.fb == nil {
		r.lastArrival = req.Arrival
		if ev := (event{at: req.Arrival, class: classArrival, ref: ref}); !r.events.pushAlone(ev) {
			r.events.push(ev)
		}
		return nil
	}
	r.events.pushOrdered(event{at: req.Arrival, class: classArrival, ref: ref})
	return nil
}

func (r *runner) measures(t time.Duration) bool {
	return t >= r.cfg.Warmup && t < r.closes && r.seen >= r.cfg.WarmupRequests
}

func (r *runner) alloc() int32 { return reuse(&r.slots, &r.freeRefs) }

// reuse is the index of an element of *items to fill: the last of *free
// (indices of elements released), or a zero element appended.
//
// The zero element is appended as make's (the compiler's append of a
// made slice: the new element cleared in place, runtime.memclrHasPointers),
// not a zero value built on the stack and then copied in: a slot is 472
// bytes, and Regime/Conversations, whose source yields every first turn
// at once (a slot each), paid 34 instructions a request more of
// servesim's own (10,455 then 10,421, the budget test), for 8 of the
// runtime's clear (cachegrind's marginal count).
func reuse[T any](items *[]T, free *[]int32) int32 {
	if n := len(*free); n > 0 {
		i := (*free)[n-1]
		*free = (*free)[:n-1]
		return i
	}
	*items = append(*items, make([]T, 1)...)
	return int32(len(*items) - 1)
}

// arrive is a request's scheduled instant: it is sent, or with every slot
// of Config.MaxConcurrency taken, it waits client-side for one.
func (r *runner) arrive(ref int32) error {
	r.events.popped(ref) // the heap's ordered run goes on (pushOrdered)
	s := &r.slots[ref]
	s.live = true
	r.arrived++
	if s.rec.Measured {
		r.measuredLive++
	}
	// Drawn for every request, so the stream does not depend on outcomes.
	// With no error rate no draw could inject one, and the stream has no
	// other reader: none is drawn.
	injected := r.cfg.ErrorRate > 0 && r.errs.Float64() < r.cfg.ErrorRate
	pullNext := r.fb == nil || s.stream
	if s.stream {
		r.streamDue = false
	}
	if s.willError { // the trace recorded it as failed: it never loads the replica
		return r.failRecorded(ref, pullNext)
	}
	s.willError = injected
	if c := r.cfg.MaxConcurrency; c > 0 && r.inFlight >= c {
		r.clientQ = append(r.clientQ, ref)
		if r.maxHeld > 0 && r.inSystem+len(r.clientQ)-r.clientHead > r.maxHeld {
			r.overloaded = true
			return nil
		}
	} else if err := r.send(ref, s); err != nil || r.overloaded {
		return err
	}
	if pullNext {
		return r.pull()
	}
	return nil
}

// failRecorded ends a request its trace recorded as failed, at its
// arrival.
func (r *runner) failRecorded(ref int32, pullNext bool) error {
	r.slots[ref].rec.Replica = Unrouted
	if err := r.end(ref, StatusErrored, "recorded as failed in the trace"); err != nil {
		return err
	}
	if pullNext {
		return r.pull()
	}
	return nil
}

// send hands a request, s its slot, to the replica the router chooses,
// now. (The slot found again here, by its ref, cost RunAtlas 13
// instructions a request: servesim's own 5,070 then 5,057, cachegrind's
// marginal count.)
func (r *runner) send(ref int32, s *slot) error {
	s.rec.Arrival, s.rec.Sent = r.now, true
	r.inFlight++
	i := 0
	if r.routes {
		switch {
		case !r.gwOrLeast: // the router asked, with the request
			var err error
			if i, err = r.route(s); err != nil {
				return err
			}
			if r.pd != nil {
				return r.place(ref, i, true)
			}
			if r.roots != nil { // here, not after the Add below, which every run reaches (8 instructions a request in RunAtlas)
				r.roots.in(i, s.prefix)
			}
		case r.gw != nil:
			return r.admit(ref)
		case r.view.idx == nil && r.pd == nil: // leastFresh: LeastLoaded's choice, no request built, of the whole fleet
			if r.keptLoads {
				i = r.leastKept()
				if r.checkEngine {
					if j := r.leastEach(); j != i {
						return fmt.Errorf("sim: the loads kept chose replica %d at %v, every engine's load replica %d (an internal error)", i, r.now, j)
					}
				}
				break
			}
			if r.mixLeast != nil {
				// leastEach's first case, without its call, and the
				// function mixedrun.Least made of the engines once, not
				// Least converting them from any at each arrival:
				// Regime/Fleet8LeastLoaded, servesim's own 10,643
				// then 10,622 instructions a request.
				i = r.mixLeast(r.now)
				break
			}
			i = r.leastEach()
		case r.pd != nil: // leastFresh, of a disaggregated fleet's two pools
			return r.placeLeast(ref)
		default: // leastFresh, of an autoscaled fleet's routable replicas
			i = r.view.at(r.view.LeastOutstanding())
		}
	}
	r.routed++ // routed, or one replica and no router to ask
	rep := &r.reps[i]
	s.rec.Replica = i
	var err error
	if q := rep.staged; q != nil { // written in place (internal/addinto), as Add's argument below
		s.stage(q, ref, r.now)
		q.Deadline = r.deadline(s.class, r.now)
		rep.staged, err = commitInPlace(rep.edit(), r.now)
	} else {
		err = rep.edit().Add(r.now, engine.Request{Ref: ref, Arrival: r.now, Input: s.rec.Input, Output: s.rec.Output,
			Priority: s.priority, Prefix: s.prefix, PrefixBlockTokens: s.prefixLen, PrefixTwoRuns: s.prefixTwo, PrefixCoversOutput: s.answerIDs,
			Class: s.class, Deadline: r.deadline(s.class, r.now)})
		rep.stage() // the replica's first request: the next are written in place
	}
	if err != nil {
		if r.roots != nil { // taken in above
			r.roots.out(i, s.prefix)
		}
		return r.end(ref, StatusRejected, err.Error())
	}
	// It joins the replica's waiting queue: a run in flight there stops
	// after its step in flight, as step by step, unless the join changes
	// none of its steps.
	if !r.joinChangesNothing(rep) {
		if err := r.interrupt(rep, false); err != nil {
			return err
		}
	}
	r.hold(rep, +1)
	r.sysIn()
	if r.maxHeld > 0 && r.inSystem+len(r.clientQ)-r.clientHead > r.maxHeld {
		r.overloaded = true
		return nil
	}
	if r.cfg.Timeout > 0 {
		r.events.push(event{at: r.now + r.cfg.Timeout, class: classTimeout, ref: ref, gen: s.gen})
	}
	return nil
}

// sendWaiting sends the requests waiting client-side while slots are free,
// in the order they were due.
func (r *runner) sendWaiting() error {
	if r.gw != nil && r.gw.woken {
		if err := r.dispatchQueued(); err != nil {
			return err
		}
	}
	for r.clientHead < len(r.clientQ) && r.inFlight < r.cfg.MaxConcurrency && !r.overloaded {
		ref := r.clientQ[r.clientHead]
		r.clientHead++
		if err := r.send(ref, &r.slots[ref]); err != nil {
			return err
		}
	}
	if r.clientHead == len(r.clientQ) {
		r.clientQ, r.clientHead = r.clientQ[:0], 0
	}
	return nil
}

// route asks the router where the request goes. The caller counts the
// arrival routed (r.routed++) once it is placed: a disaggregated fleet's
// decider and prefill router (place) read the same arrival's view, its
// keys, its frontend's signals and its cache tree.
// (send does not call it for one replica and no router: there is no one
// to ask.) A fleet behind LeastLoaded with fresh signals, no prefill
// pool (or one that leastRemote allows, placed by placeLeast: 12,249
// then 12,062 instructions a request in BenchmarkRegime/Disagg) and no
// gateway (leastFresh) takes LeastLoaded's choice in send,
// without building the request it does not read (nor a frontend, a
// cache view or a decider): about 87 instructions an arrival of
// Fleet8LeastLoaded's 13,211 a request. TestLeastFreshIsTheRouter holds
// it to the router asked.
func (r *runner) route(s *slot) (int, error) {
	req := &r.routeReq // reused: a router must not keep it
	// Every field written, one by one (a router may have changed any),
	// not a new Request built and copied over it: Regime/
	// Fleet8PrefixApprox 9,834 then 9,813 instructions a request (the
	// budget test). TestRouteWritesEveryField counts the fields.
	req.ID, req.Arrival, req.InputTokens, req.OutputTokens = s.rec.ID, s.rec.Arrival, s.rec.Input, s.rec.Output
	req.PrefixHashes, req.PrefixBlockTokens, req.PrefixTwoRuns = s.prefix, s.prefixLen, s.prefixTwo
	req.Conversation, req.Turn, req.Class, req.Priority = s.rec.Conversation, s.rec.Turn, s.rec.Class, s.priority
	req.Failed, req.HashesCoverOutput = false, false
	r.view.req = req
	var i int
	if p := r.prefix; p != nil {
		i = p.route(req, &r.view)
	} else {
		i = r.router.Route(req, &r.view)
	}
	r.view.req = nil
	if i < 0 || i >= r.view.n {
		return 0, fmt.Errorf("sim: router %T chose replica %d of a fleet of %d (indices 0 to %d)", r.router, i, r.view.n, r.view.n-1)
	}
	i = r.view.at(i)
	if r.cfg.Fleet.SignalDelay > 0 {
		r.frontend().routed(i, req)
	}
	if r.cache != nil {
		r.cache.routed(r, i, req)
	}
	return i, nil
}

// timeout abandons a request at its client deadline, wherever it is.
func (r *runner) timeout(ref int32, gen uint32) error {
	s := &r.slots[ref]
	if !s.live || s.gen != gen {
		return nil // it ended before
	}
	if s.queued { // waiting at the gateway
		r.leaveQueue(s)
		s.rec.Replica = Unrouted
		return r.end(ref, StatusTimedOut, "client deadline reached at the gateway")
	}
	return r.drop(&r.reps[s.rec.Replica], ref, StatusTimedOut, "client deadline reached")
}

// drop aborts a request its replica holds, now, and ends it with st: at
// its client deadline, or at its draining replica's deadline.
func (r *runner) drop(rep *replica, ref int32, st Status, reason string) error {
	s := &r.slots[ref]
	if err := r.interrupt(rep, true); err != nil {
		return err
	}
	r.cancelTransfer(s, ref)
	r.cancelTier(s, ref)
	if err := rep.edit().Abort(r.now, ref); err != nil {
		panic("sim: invariant abort-of-held-request broken: " + err.Error())
	}
	if r.roots != nil {
		r.roots.out(rep.idx, s.prefix)
	}
	if r.steps != nil {
		rep.aborted = append(rep.aborted, abortedRef{ref, s.rec.ID})
	}
	r.hold(rep, -1)
	r.sysOut()
	r.wakeGateway()
	return r.end(ref, st, reason)
}
