package sim

import (
	"errors"
	"time"

	"github.com/servesim/servesim/engine"
)

// Gateway is admission in front of the fleet (or the single replica):
// what stands between the clients and the replicas and sheds load past
// the knee, where without it every curve falls to goodput 0. Each policy
// is a type of its own file: a token bucket (gateway_bucket.go, Envoy's
// local rate limit), a concurrency limit per replica with a bounded
// gateway queue and a time-to-live (gateway_limit.go), and shedding by a
// saturation signal read as stale as Fleet.SignalDelay makes it
// (gateway_shed.go, llm-d's saturation detector). A request sent
// (Record.Arrival) meets them in that order: the bucket, then the
// detector, then the concurrency limit; one refused ends at once with its
// own status (StatusThrottled, StatusShed, StatusQueueFull), one that
// waits past the TTL with StatusExpired, never having reached a replica
// (Record.Replica Unrouted). Every one stays in the denominator, its miss
// attributed to the gateway (Misses.Gateway).
//
// The zero value is no gateway: every request goes straight to the
// router, and a run is the same bytes as before gateways existed.
type Gateway struct {
	Bucket TokenBucket
	Limit  ConcurrencyLimit
	Shed   Saturation
}

// On reports whether any policy is set.
func (g Gateway) On() bool { return g.Bucket.On() || g.Limit.On() || g.Shed.On() }

// Validate joins every problem of the gateway's policies, naming each
// field.
func (g Gateway) Validate() error {
	return errors.Join(g.Bucket.validate("Gateway.Bucket"), g.Limit.validate("Gateway.Limit"), g.Shed.validate("Gateway.Shed"))
}

// gateway is a run's admission state (nil without a Gateway).
type gateway struct {
	bucket bucket
	limit  ConcurrencyLimit
	shed   Saturation

	queue   []int32 // requests waiting for a replica slot, from head (some may have left: slot.queued says)
	head    int
	waiting int  // requests in queue still waiting
	woken   bool // a replica slot freed at this event: dispatch after it

	waitingAt   time.Duration // queue integrated up to here
	waitingArea wide          // ∫ waiting dt over the window, request·ns
}

func newGateway(g Gateway) *gateway {
	if !g.On() {
		return nil
	}
	return &gateway{bucket: newBucket(g.Bucket), limit: g.Limit, shed: g.Shed}
}

// gatewayWake is the mark a freed replica slot leaves in the client
// queue, so that the loop's existing check of that queue dispatches the
// gateway's queue after the event, at no cost to a run without a gateway
// (see wakeGateway).
const gatewayWake int32 = -1

// admit is a request's way through the gateway, at its send: it is
// throttled, shed, refused for a full queue, queued, or dispatched now.
func (r *runner) admit(ref int32) error {
	g := r.gw
	s := &r.slots[ref]
	if g.bucket.on && !g.bucket.take(r.now) {
		return r.refuse(ref, StatusThrottled, "no token in the gateway's bucket (Envoy local rate limit: 429)")
	}
	if g.shed.On() && r.saturated() {
		return r.refuse(ref, StatusShed, "every replica saturated (llm-d saturation detector: 429)")
	}
	if !g.limit.On() {
		return r.dispatch(ref, true)
	}
	if g.waiting == 0 {
		if _, ok := r.freeReplica(); ok {
			return r.dispatch(ref, true)
		}
	}
	if g.waiting >= g.limit.Queue {
		return r.refuse(ref, StatusQueueFull, "every replica at the gateway's concurrency limit and its queue full")
	}
	r.gwHold(+1)
	s.queued, s.rec.Replica = true, Unrouted
	g.queue = append(g.queue, ref)
	if g.limit.TTL > 0 {
		r.events.push(event{at: r.now + g.limit.TTL, class: classExpire, ref: ref, gen: s.gen})
	}
	if r.cfg.Timeout > 0 {
		r.events.push(event{at: r.now + r.cfg.Timeout, class: classTimeout, ref: ref, gen: s.gen})
	}
	return nil
}

// refuse ends a request at the gateway, at once.
func (r *runner) refuse(ref int32, st Status, reason string) error {
	r.slots[ref].rec.Replica = Unrouted
	return r.end(ref, st, reason)
}

// gwHold changes the requests waiting at the gateway, integrating them
// over the window first.
func (r *runner) gwHold(d int) {
	r.gw.integrate(r.now, r.opens, r.closes)
	r.gw.waiting += d
}

// integrate adds what waited at the gateway from its last change to t,
// clipped to the window [opens, closes), to its integral.
func (g *gateway) integrate(t, opens, closes time.Duration) {
	lo, hi := max(g.waitingAt, opens), min(t, closes)
	if hi > lo {
		g.waitingArea.add(uint64(g.waiting), uint64(hi-lo))
	}
	g.waitingAt = max(g.waitingAt, t)
}

// leaveQueue takes a queued request out of the gateway's queue (it is
// dispatched, expired or timed out): its entry is skipped when reached.
func (r *runner) leaveQueue(s *slot) {
	s.queued = false
	r.gwHold(-1)
	s.rec.GatewayWait = r.now - s.rec.Arrival
}

// wakeGateway notes that a replica slot freed: the gateway's queue is
// dispatched once the event is handled (sendWaiting).
func (r *runner) wakeGateway() {
	if g := r.gw; g != nil && g.waiting > 0 && !g.woken {
		g.woken = true
		r.clientQ = append(r.clientQ, gatewayWake)
	}
}

// dispatchQueued sends the gateway's queued requests, first come first
// served, while a replica has a free slot.
func (r *runner) dispatchQueued() error {
	g := r.gw
	g.woken = false
	if n := len(r.clientQ); n > r.clientHead && r.clientQ[n-1] == gatewayWake {
		r.clientQ = r.clientQ[:n-1]
	}
	for g.head < len(g.queue) && !r.overloaded {
		ref := g.queue[g.head]
		if !r.slots[ref].queued {
			g.head++
			continue
		}
		if _, ok := r.freeReplica(); !ok {
			break
		}
		g.head++
		r.leaveQueue(&r.slots[ref])
		if err := r.dispatch(ref, false); err != nil {
			return err
		}
	}
	if g.head == len(g.queue) {
		g.queue, g.head = g.queue[:0], 0
	}
	return nil
}

// expire ends a request that waited at the gateway for its TTL.
func (r *runner) expire(ref int32, gen uint32) error {
	s := &r.slots[ref]
	if !s.live || s.gen != gen || !s.queued {
		return nil // dispatched or ended before
	}
	r.leaveQueue(s)
	return r.refuse(ref, StatusExpired, "waited at the gateway for its time-to-live")
}

// dispatch hands an admitted request to a replica, now: the router's
// choice, or under a concurrency limit the first replica with a free
// slot from it on. A request queued at the gateway had its timeout
// set when it was queued (timeout false).
func (r *runner) dispatch(ref int32, timeout bool) error {
	s := &r.slots[ref]
	i := 0
	if r.fleet || r.cfg.Fleet.Router != nil {
		var err error
		if i, err = r.route(s); err != nil {
			return err
		}
		if r.pd != nil {
			return r.place(ref, i, timeout)
		}
	}
	r.routed++
	if lim := r.gw.limit.PerReplica; lim > 0 && r.reps[i].held >= lim {
		n, p := r.routableLen(), r.routablePos(i)
		for k := 1; k < n; k++ {
			if j := r.routableAt((p + k) % n); r.reps[j].held < lim {
				i = j
				break
			}
		}
	}
	return r.enter(ref, i, timeout)
}

// freeReplica is a replica with a slot free under the concurrency
// limit.
func (r *runner) freeReplica() (int, bool) {
	lim := r.gw.limit.PerReplica
	for p := range r.routableLen() {
		if i := r.routableAt(p); r.reps[i].held < lim {
			return i, true
		}
	}
	return 0, false
}

// enter adds a dispatched request to replica i's engine (send's own
// copy of it stays inline: a call there costs every request).
func (r *runner) enter(ref int32, i int, timeout bool) error {
	s := &r.slots[ref]
	rep := &r.reps[i]
	s.rec.Replica = i
	err := rep.edit().Add(r.now, engine.Request{Ref: ref, Arrival: r.now, Input: s.rec.Input, Output: s.rec.Output,
		Priority: s.priority, Prefix: s.prefix, PrefixBlockTokens: s.prefixLen, PrefixTwoRuns: s.prefixTwo, PrefixCoversOutput: s.answerIDs,
		Class: s.class, Deadline: r.deadline(s.class, r.now)})
	if err != nil {
		return r.end(ref, StatusRejected, err.Error())
	}
	if r.roots != nil {
		r.roots.in(i, s.prefix)
	}
	if !r.joinChangesNothing(rep) {
		if err := r.interrupt(rep, false); err != nil {
			return err
		}
	}
	r.joined(rep, ref, timeout)
	return nil
}

// joined counts a request a replica took (enter, enterPrefill): the
// replica holds it, the backlog bound is checked, and with timeout its
// client deadline is queued.
func (r *runner) joined(rep *replica, ref int32, timeout bool) {
	r.hold(rep, +1)
	r.sysIn()
	if r.maxHeld > 0 && r.inSystem+len(r.clientQ)-r.clientHead > r.maxHeld {
		r.overloaded = true
		return
	}
	if timeout && r.cfg.Timeout > 0 {
		r.events.push(event{at: r.now + r.cfg.Timeout, class: classTimeout, ref: ref, gen: r.slots[ref].gen})
	}
}

// gatewayQueue is the time-average number of requests waiting at the
// gateway over the declared window of length declared (0 without a
// gateway or a window).
func (r *runner) gatewayQueue(declared time.Duration) float64 {
	if r.gw == nil || declared <= 0 {
		return 0
	}
	r.gw.integrate(r.cfg.Warmup+declared, r.opens, r.closes)
	return r.gw.waitingArea.seconds() / declared.Seconds()
}
