package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// PrefillPool makes a fleet disaggregated (prefill/decode, P/D): a pool
// of replicas that prefill prompts for the fleet's other replicas, which
// become its decode pool. Its zero value (no Replicas) is none: the fleet
// is co-located, every replica prefilling its own requests, as before.
//
// A request's way through a disaggregated fleet mirrors llm-d's (the
// inference scheduler's P/D profile handler and the decode pod's routing
// sidecar) over vLLM's KV connectors:
//
//  1. At its send, the fleet's Router chooses a decode replica among
//     Fleet.Replicas (the decode pool), then the Decider says whether a
//     prefill replica prefills it (remote) or the decode replica does
//     (local, exactly as in a co-located fleet).
//  2. A remote request goes to the prefill replica the pool's Router
//     chooses, as a request of one output token: its prefill there ends
//     with its first token, which is its TTFT (DistServe and Splitwise
//     stream the first token from the prefill instance; vLLM's NIXL
//     connector recomputes the prompt's last token on the decode side
//     instead, scheduler.py _update_waiting_for_remote_kv, so its first
//     token comes one decode step later).
//  3. Then its decode replica takes it as an engine.Request with Remote
//     set: the engine reserves blocks for its prompt when its waiting
//     queue reaches it (the full-sequence gate applies: a request that
//     cannot find blocks waits, engine.Plan.Reserved), and the KV moves
//     over the prefill replica's Link from that instant; when it lands
//     (engine.Engine.Land) the request decodes its remaining tokens. The
//     wait for blocks and the transfer are both in the gap between its
//     first and second tokens, the first ITL its user sees.
//
// The prefill replica frees the request's blocks when its prefill ends
// (a push of the KV); vLLM's NIXL connector keeps them until the decode
// side's read completes (delay_free_blocks), which this does not model.
type PrefillPool struct {
	// Replicas configures each prefill replica (engine and cost model:
	// the pool may run other hardware than the decode pool). nil or
	// empty: no prefill pool. At most MaxReplicas with the decode pool.
	Replicas []ReplicaConfig
	// Router chooses the prefill replica of a remote request, reading a
	// View of the prefill pool; nil means RoundRobin{}.
	Router Router
	// Decider chooses which requests the pool prefills; nil means
	// AlwaysRemote{} (vLLM's disaggregated proxy sends every request
	// through a prefill instance).
	Decider Decider
	// Link is each prefill replica's path to the decode pool: a
	// transfer from prefill replica p shares p's link with p's other
	// transfers in flight (Link.Sharing says how). The zero value is an
	// instantaneous link.
	Link Link
	// KVBytesPerToken is the KV one token takes on each accelerator of a
	// replica, the bytes a transfer moves per prompt token over each
	// accelerator's path (a tensor-parallel replica's ranks move their
	// shards in parallel, as NIXL transfers per rank), as
	// costmodel.ModelSpec.KVBytesPerToken declares it. 0 means Atlas's,
	// costmodel.AtlasKVBytesPerToken (80 KiB).
	KVBytesPerToken float64
}

// On reports whether the fleet has a prefill pool.
func (p PrefillPool) On() bool { return len(p.Replicas) > 0 }

// kvBytes is KVBytesPerToken with its default.
func (p PrefillPool) kvBytes() float64 {
	if p.KVBytesPerToken == 0 {
		return costmodel.AtlasKVBytesPerToken
	}
	return p.KVBytesPerToken
}

func (p PrefillPool) validate(c Config) error {
	if !p.On() {
		if p.Replicas != nil {
			return errors.New("sim: Fleet.Prefill.Replicas is empty: a prefill pool needs at least one replica (leave it nil for a co-located fleet)")
		}
		return nil
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("sim: "+format, a...)) }
	if n := len(p.Replicas) + len(c.replicas()); n > MaxReplicas {
		bad("Fleet.Prefill.Replicas and Fleet.Replicas hold %d replicas, more than MaxReplicas (%d)", n, MaxReplicas)
	} else {
		for i, r := range p.Replicas {
			if err := r.Engine.Validate(); err != nil {
				bad("Fleet.Prefill.Replicas[%d]: %w", i, err)
			}
			if err := validateModel(r.Model); err != nil {
				bad("Fleet.Prefill.Replicas[%d]: %w", i, err)
			}
			if r.Speculation.On() {
				bad("Fleet.Prefill.Replicas[%d].Speculation: a prefill replica emits one token a request and never decodes; declare speculation on the decode pool", i)
			}
		}
	}
	if err := p.Link.Validate(); err != nil {
		bad("Fleet.Prefill.Link: %w", err)
	}
	if kv := p.KVBytesPerToken; !(kv >= 0 && kv <= MaxKVBytesPerToken) {
		bad("Fleet.Prefill.KVBytesPerToken must be a number of bytes in [0, MaxKVBytesPerToken = 2³⁰] (0 means Atlas's 80 KiB), got %v", kv)
	}
	for _, x := range []struct {
		name string
		v    any
	}{{"Router", p.Router}, {"Decider", p.Decider}} {
		if v, ok := x.v.(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				bad("Fleet.Prefill.%s: %w", x.name, err)
			}
		}
	}
	if c.DetectWarmup {
		bad("Window.DetectWarmup is not supported with a prefill pool: the disaggregated summary counts records as they end, before the warm-up is known; declare Window.Warmup")
	}
	if c.Gateway.Limit.On() || c.Gateway.Shed.On() {
		bad("Gateway.Limit and Gateway.Shed are not modelled with a prefill pool (their counts read every replica alike); Gateway.Bucket is")
	}
	return errors.Join(errs...)
}

// Decider says whether a request is prefilled by the prefill pool
// (remote) or by the decode replica the fleet's router chose for it
// (local). It is called once per send in a disaggregated fleet, after
// the router, with the request, that decode replica's index d and a
// read-only view of the decode pool (v.CachedPrefix(d) is what d's cache
// holds of the prompt, as the router's CacheView knows it). Like a
// Router it is configuration, safe to share between runs; a new decider
// is one type with this method, in a file of its own.
type Decider interface {
	Remote(r *workload.Request, d int, v *View) bool
}

// disagg is a disaggregated fleet's state in the runner: the pools'
// bounds in the replica list, the prefill pool's router and view, the
// links and the tallies of what moved.
type disagg struct {
	decoders int // the decode pool is reps[:decoders], the prefill pool reps[decoders:]
	decider  Decider
	router   Router
	view     View // the prefill pool's
	routed   int  // remote requests routed to the prefill pool
	kvBytes  float64
	link     Link
	atOnce   bool    // a transfer may land at the instant it starts (Link.landsAtOnce)
	links    []link  // one per prefill replica
	landed   []int32 // scratch for transfers, reused
	// idleLanded counts the landings that left their link idle, not
	// armed again (land; tests read it).
	idleLanded int
	// resJoins counts the requests handed to a decode replica that a
	// reservation pending inside its run took too (handoff; tests read
	// it).
	resJoins int

	// Measured requests the prefill pool prefilled, and the waits of
	// those that reached their decode replica: the reservation, the
	// transfer (when it lands) and the first gap (at the plan of the
	// decode replica's first step, which ends it).
	remote   int
	kvWait   sample
	transfer sample
	firstGap sample
	// waitShift is what most first gaps added exceed their requests'
	// KVWaits by, and odd the others' first gaps and KVWaits (noteShift):
	// the summary then sorts the first gaps alone, and reads the KVWaits
	// off them (shiftedDists). It is noShift until chosen, from the
	// first oddMax pairs, and shiftOff once more than oddMax differ. (A
	// first gap and a KVWait are each the difference of two instants,
	// within MaxDuration, so that their difference is never noShift or
	// shiftOff.) sortEach (twins.sortEachWait) sorts each sample, as
	// before; shifted reports whether the summary did not (tests read
	// it).
	waitShift         time.Duration
	odd               []waitPair
	sortEach, shifted bool
}

// waitPair is a request's first gap and its KVWait.
type waitPair struct{ gap, wait time.Duration }

// oddMax is how many first gaps disagg.odd holds: those of the first
// requests, until the shift is chosen, then those that differ from it.
const oddMax = 64

// noShift and shiftOff are disagg.waitShift before it is chosen, and
// once the first gaps that differ from it outnumber oddMax: no gap is
// that long.
const (
	noShift  = time.Duration(math.MinInt64)
	shiftOff = noShift + 1
)

// link is a prefill replica's link to the decode pool: its transfers,
// and the landing event the runner keeps queued for it (armLink): its
// instant (Never when none is) and generation. (Three slices indexed by
// the link, each read with its bounds check, cost Regime/Disagg 22
// instructions a request more: servesim's own 10,274 then 10,252, the
// budget test.)
type link struct {
	transfers
	armed time.Duration
	gen   uint32
}

// newDisagg is the runner's state of cfg's prefill pool, nil without
// one; reps holds the decode pool then the prefill pool.
func newDisagg(cfg Config, r *runner) *disagg {
	p := cfg.Fleet.Prefill
	if !p.On() {
		return nil
	}
	d := &disagg{decoders: len(r.reps) - len(p.Replicas), decider: p.Decider, router: p.Router,
		kvBytes: p.kvBytes(), link: p.Link, atOnce: p.Link.landsAtOnce(p.kvBytes()),
		waitShift: noShift, odd: make([]waitPair, 0, oddMax), sortEach: r.tw.sortEachWait}
	if d.decider == nil {
		d.decider = AlwaysRemote{}
	}
	if d.router == nil {
		d.router = RoundRobin{}
	}
	d.view = View{r: r, lo: d.decoders, n: len(p.Replicas), routed: &d.routed}
	for i := d.decoders; i < len(r.reps); i++ {
		r.reps[i].prefill = true
	}
	d.links = make([]link, len(p.Replicas))
	for i := range d.links {
		d.links[i] = link{transfers: newTransfers(p.Link, r.opens, r.closes), armed: Never}
	}
	return d
}

// place sends a request its router sent to decode replica dec: to a
// prefill replica if the decider says so, else to dec itself. It counts
// the arrival routed once both are decided, so that the decider and the
// prefill router read this arrival's view as the decode router did: its
// block keys (View.CachedPrefix), its frontend's signals (View.Load with
// several frontends) and its frontend's cache tree (ApproxView).
func (r *runner) place(ref int32, dec int, timeout bool) error {
	d := r.pd
	req := &r.routeReq // route filled it for this send
	d.view.req, r.view.req = req, req
	remote := d.decider.Remote(req, dec, &r.view)
	if !remote {
		r.view.req, d.view.req = nil, nil
		r.routed++
		return r.enter(ref, dec, timeout)
	}
	p := d.router.Route(req, &d.view)
	r.view.req, d.view.req = nil, nil
	if p < 0 || p >= d.view.n {
		return fmt.Errorf("sim: prefill router %T chose replica %d of a prefill pool of %d (indices 0 to %d)", d.router, p, d.view.n, d.view.n-1)
	}
	d.routed++
	i := d.decoders + p
	if r.cfg.Fleet.SignalDelay > 0 {
		r.frontend().routed(i, req)
	}
	if r.cache != nil {
		r.cache.routed(r, i, req)
	}
	r.routed++ // the arrival is placed: its view, keys and frontend were this arrival's until now
	return r.placeRemote(ref, dec, i, timeout)
}

// leastRemote reports whether both pools route by LeastLoaded and every
// request goes remote (AlwaysRemote): send then places an arrival itself
// (placeLeast) when the runner's signals are fresh and it has no cache
// view (runner.leastFresh).
func (d *disagg) leastRemote() bool {
	_, least := d.router.(LeastLoaded)
	_, always := d.decider.(AlwaysRemote)
	return least && always
}

// placeLeast is place for a leastFresh disaggregated fleet (leastRemote):
// LeastLoaded's choice of each pool, read off the engines without the
// request built for the routers, nor the decider's call, which says
// remote. TestLeastFreshIsTheRouter holds it to the routers and the
// decider asked through their interfaces.
func (r *runner) placeLeast(ref int32) error {
	d := r.pd
	dec := leastOutstanding(r.engs[:d.decoders], r.now)
	i := d.decoders + leastOutstanding(r.engs[d.decoders:], r.now)
	d.routed++
	r.routed++
	return r.placeRemote(ref, dec, i, true)
}

// placeRemote sends a request placed remote, decoded at decode replica
// dec, to prefill replica i.
func (r *runner) placeRemote(ref int32, dec, i int, timeout bool) error {
	s := &r.slots[ref]
	s.rec.Remote, s.rec.PrefillReplica, s.decoder = true, i, int32(dec)
	s.xferAt = Never
	if s.rec.Measured {
		r.pd.remote++
	}
	return r.enterPrefill(ref, i, timeout)
}

// enterPrefill adds a remote request to prefill replica i's engine: its
// prompt and one output token.
func (r *runner) enterPrefill(ref int32, i int, timeout bool) error {
	s := &r.slots[ref]
	rep := &r.reps[i]
	s.rec.Replica = i
	var err error
	if q := rep.staged; q != nil { // written in place (internal/addinto), as send writes it, as Add's argument below
		q.Ref, q.Arrival, q.Input, q.Output = ref, r.now, s.rec.Input, 1
		q.Priority, q.Class, q.Deadline = s.priority, s.class, r.deadline(s.class, r.now)
		if s.prefix != nil {
			q.Prefix = s.prefix
		}
		q.PrefixBlockTokens, q.PrefixTwoRuns = s.prefixLen, s.prefixTwo
		rep.staged, err = commitInPlace(rep.edit(), r.now)
	} else {
		err = rep.edit().Add(r.now, engine.Request{Ref: ref, Arrival: r.now, Input: s.rec.Input, Output: 1,
			Priority: s.priority, Prefix: s.prefix, PrefixBlockTokens: s.prefixLen, PrefixTwoRuns: s.prefixTwo,
			Class: s.class, Deadline: r.deadline(s.class, r.now)})
		rep.stage()
	}
	if err != nil {
		return r.end(ref, StatusRejected, "prefill replica: "+err.Error())
	}
	if r.roots != nil {
		r.roots.in(i, s.prefix)
	}
	if err := r.interrupt(rep, false); err != nil {
		return err
	}
	r.joined(rep, ref, timeout)
	return nil
}

// handoff is a remote request's prefill ending at prefill replica rep
// with its first token: it moves to its decode replica, which decodes
// the rest once its KV has landed. It reports whether the request goes
// on (false: it had nothing left to decode, and finish ends it).
func (r *runner) handoff(rep *replica, ref int32) (bool, error) {
	s := &r.slots[ref]
	dec := &r.reps[s.decoder]
	s.rec.Replica = dec.idx // where it ends, whatever happens now
	if dec.served(s.rec.Input, s.rec.Output) == 1 {
		// Its one token is all it asked, or all its decode replica's
		// MaxModelLen leaves: it ends with it (a longer prompt than the
		// decode replica takes is refused by Add below).
		return false, nil
	}
	r.hold(rep, -1)
	s.handoff = r.now
	s.prefillSched, s.prefillCached = s.rec.FirstScheduled, int32(s.rec.Cached)
	var err error
	if q := dec.staged; q != nil { // written in place (internal/addinto), as send writes it, as Add's argument below
		s.stage(q, ref, r.now)
		q.Remote = true
		dec.staged, err = commitRemote(dec.edit(), r.now)
	} else {
		err = dec.edit().Add(r.now, engine.Request{Ref: ref, Arrival: r.now, Input: s.rec.Input, Output: s.rec.Output,
			Priority: s.priority, Prefix: s.prefix, PrefixBlockTokens: s.prefixLen, PrefixTwoRuns: s.prefixTwo, PrefixCoversOutput: s.answerIDs,
			Class: s.class, Remote: true}) // no Deadline: its first token, which one is for, is out
		dec.stage()
	}
	if err != nil {
		r.sysOut()
		return true, r.end(ref, StatusRejected, "decode replica: "+err.Error())
	}
	if r.roots != nil {
		r.roots.in(dec.idx, s.prefix)
	}
	r.hold(dec, +1)
	if dec.eng.Busy() && r.now < dec.stepDone && r.steps == nil && !r.pd.atOnce {
		// Inside a run, the plan of its next step would reserve the
		// request's blocks and change nothing else of it: the run goes
		// on, and reserves at that step's start (reserveInRun). Not
		// over a link whose transfer may land at the instant it starts
		// (an instantaneous one, or one so fast that a transfer's end
		// rounds to its start: Link.landsAtOnce): the landing, after
		// the reservation at that instant, would cut the run there,
		// where Truncate drops the very step that reserved and took
		// its blocks (engine.Runner.ReserveInRun); step by step that
		// step runs and its end's plan weighs the landed request.
		// A reservation already pending at that step (its event
		// queued: resAt) takes this request too, not a cut and the
		// plan at the step's end (twins.reserveAlone: the cut).
		if at, ok := dec.run().ReserveLater(r.now); ok && (at != dec.resAt || !r.tw.reserveAlone) {
			if at != dec.resAt {
				dec.resAt = at
				r.events.push(event{at: at, class: classReserve, ref: int32(dec.idx)})
			} else {
				r.pd.resJoins++
			}
			return true, nil
		}
	}
	return true, r.interrupt(dec, false)
}

// reserveInRun is the plan, at the start of a step of decode replica
// rep's run in flight, that reserves a request handed to it inside the
// run (engine.Runner.ReserveInRun): the run goes on, and the reserved
// request's transfer starts now, as a plan of this step would start it.
// The run ends after this step if its later steps no longer find their
// blocks.
func (r *runner) reserveInRun(rep *replica) error {
	rep.resAt = Never
	res, end, ok := rep.run().ReserveInRun(r.now)
	if !ok {
		return nil
	}
	if end != rep.stepDone {
		r.ends.set(rep.idx, end)
		rep.stepDone = end
	}
	if len(res) > 0 {
		if r.checkEngine {
			r.runReserves++
		}
		rep.reservedAt = r.now
		r.startTransfers(r.now, res)
	}
	return nil
}

// plannedRemote notes what planned did not of the plan p of a decode
// replica: the remote requests it started (their first decode: each
// keeps its prefill's first schedule and cache hits, and its second
// token comes at the step's end), and the transfers of the remote requests whose blocks it
// reserved, from its start.
func (r *runner) plannedRemote(rep *replica, p *engine.Plan) {
	d := r.pd
	if len(p.Reserved) > 0 {
		rep.reservedAt = p.Start
	}
	// The loop, and startTransfers' call, only when they have something:
	// most plans here continue a run, starting and reserving nothing
	// (Regime/Disagg 11,081 then 11,052 instructions a request of
	// servesim's own; startTransfers 91 then 65, SERVESIM_BUDGET_FUNCS).
	if len(p.Started) > 0 {
		for _, ref := range p.Started {
			s := &r.slots[ref]
			if !s.rec.Remote {
				continue
			}
			// planned wrote this replica's first schedule and cache hits:
			// its prefill's stand.
			s.rec.FirstScheduled, s.rec.Cached = s.prefillSched, int(s.prefillCached)
			if s.rec.Measured { // its first step's end: a run's first step started it
				g := p.Start + p.StepTime - s.rec.FirstToken
				d.firstGap.add(g, r.col.limit())
				if g-s.rec.KVWait != d.waitShift {
					d.noteShift(g, s.rec.KVWait)
				}
			}
		}
	}
	if len(p.Reserved) > 0 {
		r.startTransfers(p.Start, p.Reserved)
	}
}

// noteShift notes a first gap g whose request's KVWait, k, it exceeds
// by other than waitShift: among the first oddMax, until the shift is
// chosen (chooseShift), then among those that differ from it.
func (d *disagg) noteShift(g, k time.Duration) {
	if d.waitShift == shiftOff {
		return
	}
	if len(d.odd) == oddMax {
		if d.waitShift == noShift {
			d.chooseShift()
		}
		if len(d.odd) == oddMax {
			d.waitShift, d.odd = shiftOff, nil
			return
		}
	}
	d.odd = append(d.odd, waitPair{g, k})
}

// chooseShift makes waitShift the difference most of odd's pairs have
// (the first of the most common), and keeps the others in odd, in their
// order.
func (d *disagg) chooseShift() {
	best, most := noShift, 0
	for i, p := range d.odd {
		w, n := p.gap-p.wait, 0
		for _, q := range d.odd[i:] {
			if q.gap-q.wait == w {
				n++
			}
		}
		if n > most {
			best, most = w, n
		}
	}
	if most == 0 {
		return
	}
	d.waitShift = best
	d.odd = slices.DeleteFunc(d.odd, func(p waitPair) bool { return p.gap-p.wait == best })
}

// startTransfers starts at instant at the transfers of the remote
// requests whose blocks a decode replica reserved then.
func (r *runner) startTransfers(at time.Duration, reserved []engine.Reservation) {
	d := r.pd
	for i := range reserved {
		res := &reserved[i]
		s := &r.slots[res.Ref]
		s.rec.KVWait = at - s.handoff
		s.xferAt = at
		k := s.rec.PrefillReplica - d.decoders
		l := &d.links[k]
		l.start(at, res.Ref, int64(math.Ceil(float64(res.Tokens)*d.kvBytes)))
		r.armLink(l, k)
	}
}

// armLink keeps one landing event queued for link l, the k-th, at its
// next landing.
func (r *runner) armLink(l *link, k int) {
	at, ok := l.next()
	if !ok {
		at = Never
	}
	if at == l.armed {
		return
	}
	l.armed = at
	l.gen++
	if ok {
		r.events.push(event{at: at, class: classLand, ref: int32(k), gen: l.gen})
	}
}

// aloneAt reports whether decode replica rep may continue its run at
// its step end, once a request landed there (landWait): nothing waits
// on it but reservations, or nothing but its step end happens at the
// runner's instant: no event is left at now, and no other replica's
// step end (a finish there may send a request here). On a remote-KV
// engine only a landed request lets Continue plan while one waits (the
// engine's continueLanded), and that plan
// admits it in its first step, which a later event at this instant
// could not cut (Truncate refuses it). Otherwise the replica is planned
// after the instant's events, as step by step.
func (r *runner) aloneAt(rep *replica) bool {
	if rep.eng.Waiting() <= rep.eng.Reserved() {
		rep.landWait = false // none landed waits (nor anything queued)
		return true
	}
	if r.events.len() > 0 && r.events.peek().at == r.now {
		r.notAlone++
		return false
	}
	if h := &r.ends; h.small && h.ok2 && int(h.first.rep) == rep.idx {
		if h.second.at > r.now { // the others' earliest end, kept (stepEnds)
			return true
		}
		r.notAlone++
		return false
	}
	for i := range r.reps {
		if at, ok := r.ends.end(i); ok && at == r.now && i != rep.idx {
			r.notAlone++
			return false
		}
	}
	return true
}

// land applies link k's landings due now: each request's decode replica
// learns its KV arrived.
func (r *runner) land(k int32, gen uint32) error {
	d := r.pd
	l := &d.links[k]
	if l.gen != gen {
		return nil // the link's landings moved since
	}
	l.armed = Never
	d.landed = l.land(r.now, d.landed[:0])
	for _, ref := range d.landed {
		s := &r.slots[ref]
		s.rec.Transfer = r.now - s.xferAt
		s.xferAt = Never
		if s.rec.Measured {
			d.kvWait.add(s.rec.KVWait, r.col.limit())
			d.transfer.add(s.rec.Transfer, r.col.limit())
		}
		rep := &r.reps[s.rec.Replica]
		rep.landWait = true // stepEnd asks aloneAt before Continue
		if rep.eng.Busy() {
			// The steps of a run in flight that started before now have
			// taken their blocks, as step by step, before the landing
			// caches the request's.
			rep.run().SyncTo(r.now)
		}
		if err := rep.edit().Land(r.now, ref); err != nil {
			return fmt.Errorf("sim: replica %d, landing request %d: %w", rep.idx, s.rec.ID, err)
		}
		// The landed request is weighed by the decode replica's next
		// plan, as an arrival is: a run in flight stops after its step
		// in flight (interrupt), as step by step; idle, the replica is
		// planned once everything at this instant is handled. A move
		// that reserved blocks at this instant (planned after its
		// events: an instantaneous transfer it reserved) is one step (a
		// plan that reserves is), which step by step does not weigh it
		// either; a run continued at a step end at this instant
		// (engine.Runner.Continue, before its events) reserves nothing
		// and is cut whole, as by an arrival.
		if rep.eng.Busy() && rep.moveAt == r.now && rep.reservedAt == r.now {
			continue
		}
		if err := r.interrupt(rep, false); err != nil {
			return err
		}
	}
	// A link left idle, as mostly (one transfer in flight at a time),
	// has no next landing, and none is armed (Never, above): armLink
	// would ask next and find none (Regime/Disagg 10,904 -> 10,847
	// instructions a request, servesim's own, the budget test). The
	// twin asks it every time (armEachLanding).
	if r.tw.armEachLanding || l.qh < len(l.q) || len(l.act) > 0 || len(l.landed) > 0 {
		r.armLink(l, int(k))
	} else {
		d.idleLanded++
	}
	return nil
}

// cancelTransfer stops the transfer of a request that left while its KV
// was moving.
func (r *runner) cancelTransfer(s *slot, ref int32) {
	if r.pd == nil || s.xferAt == Never || !s.rec.Remote {
		return
	}
	k := s.rec.PrefillReplica - r.pd.decoders
	l := &r.pd.links[k]
	l.cancel(r.now, ref)
	s.xferAt = Never
	r.armLink(l, k)
}
