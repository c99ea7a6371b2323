package engine

import (
	"errors"
	"fmt"
	"slices"
)

// Check verifies the engine's invariants and returns every violation:
//   - every request is in exactly one place (waiting queue, running list,
//     or, for a Remote request, reserved or landed) and the lookup table
//     holds exactly those;
//   - a Remote request holds no block until reserved, then the blocks of
//     its whole known sequence (counted as used), and is scheduled only
//     after its KV landed; a request loading from the tier holds the
//     blocks of its hits and of what it loads; the landed wait in policy
//     order;
//   - KV blocks: each request holds ceil(tokens / BlockSize) blocks for the
//     tokens computed or scheduled, waiting requests hold none, every
//     block's reference count is the number of requests holding it, the
//     free queue holds exactly the blocks nobody holds, and
//     blocks held + free = KVBlocks;
//   - the prefix cache maps each key to a block carrying that key, and
//     counts its cached and evictable blocks right;
//   - token accounting: known = Input + emitted, computed <= known,
//     emitted < Output for every request still held, the running list
//     respects MaxSeqs.
//
// Each invariant is one method of checker below, named for it, with the
// invariant as its doc comment; Check runs them in this order and joins
// what they found. It is O(requests + blocks); tests call it after every
// step.
func (e *Engine) Check() error {
	if m := e.specMembers(); m > 0 { // the speculative cohort's members, as the walk writes them (speccohort.go)
		e.specFields(true)
		defer e.specFields(false)
	}
	c := e.newChecker()
	// Where each request is.
	c.eachRequestInOnePlace()
	c.cohortMembersMarkedRunning()
	c.runningMarkedRunning()
	c.waitingMarkedWaiting()
	c.waitingHoldNothing()
	c.remoteInTheirLists()
	c.remoteHoldTheirSequence()
	c.remoteNotScheduledBeforeLanded()
	c.landedInPolicyOrder()
	// The waiting queue's order.
	c.waitingHeapKeyed()
	c.waitingHeapOrdered()
	c.waitingRunOnlyUnderFCFS()
	c.waitingRunHeadLive()
	c.waitingRunInKeyOrder()
	c.waitingRunCounted()
	// Each request's tokens and blocks.
	c.knownIsInputPlusEmitted()
	c.computedWithinKnown()
	c.outputNotDone()
	c.blocksCoverTokens()
	c.outstandingCounted()
	c.lazyOnlyInFlight()
	// The decode cohort's aggregates.
	if c.cohortKept() {
		c.cohortOnWhileMembers()
		c.membersIndexed()
		c.membersRanked()
		c.membersCounted()
		c.membersFinishOnTime()
		c.cohortContextsSummed()
		c.cohortResiduesCounted()
		c.cohortSuffixSums()
		c.finishQueueHoldsMembers()
		c.finishQueueOrdered()
	} else {
		c.neverKeptIsEmpty()
	}
	c.noStepsAheadIdle()
	// KV blocks and the prefix cache.
	c.freeQueuesLinked()
	c.freeQueuesSplit()
	c.freeQueuesCounted()
	if c.e.pool.runs != nil {
		c.segmentsChecked() // runpool.go
	} else {
		c.indexFindsItsBlocks()
		c.indexedBlocksCached()
		c.copiesBehindIndex()
		c.refsCountHolders()
		c.queuedIffUnheld()
		c.blocksHeldPlusFreeIsTotal()
		c.cacheCounted()
	}
	c.runningWithinMaxSeqs()
	return errors.Join(c.errs...)
}

// checker is one Check's state: the violations found, the generation it
// marks the requests and nodes it visits with (no map: tests call Check
// after every step), and the tallies several invariants compare against,
// taken before any of them runs.
type checker struct {
	e    *Engine
	gen  uint32
	errs []error

	refs []int32 // holders of each node, counted from the requests' ids
	anon int     // anonymous blocks the requests hold

	// From the walk of the free queues (freeQueuesLinked).
	walked [2]struct {
		blocks int   // blocks walked
		last   int32 // the last node walked
	}
	free, evict int // blocks walked, cached blocks walked
}

// checkScratch is what Check keeps from one call to the next.
type checkScratch struct {
	checkGen  uint32  // generation of the last Check
	checkRefs []int32 // holders per block
}

func (e *Engine) newChecker() *checker {
	e.checkGen++
	c := &checker{e: e, gen: e.checkGen}
	p := &e.pool
	if cap(e.checkRefs) < len(p.nodes) {
		e.checkRefs = make([]int32, len(p.nodes))
	}
	c.refs = e.checkRefs[:len(p.nodes)]
	clear(c.refs)
	for _, s := range e.co.members {
		if s == nil {
			continue
		}
		v := e.memberView(s)
		c.anon += v.anon
		for _, id := range s.ids {
			c.refs[id]++
		}
	}
	for _, s := range e.running {
		c.anon += e.anonOf(s)
		for _, id := range s.ids {
			c.refs[id]++
		}
	}
	for _, list := range [...][]*seq{e.reserved, e.landed} { // they hold blocks too
		for _, s := range list {
			c.anon += s.anon
			for _, id := range s.ids {
				c.refs[id]++
			}
		}
	}
	return c
}

func (c *checker) bad(format string, a ...any) {
	c.errs = append(c.errs, fmt.Errorf("engine: "+format, a...))
}

func (c *checker) badRequest(s *seq, format string, a ...any) {
	c.errs = append(c.errs, fmt.Errorf("engine: request %d: "+format, append([]any{s.req.Ref}, a...)...))
}

func (c *checker) badCohort(format string, a ...any) {
	c.errs = append(c.errs, fmt.Errorf("engine: decode cohort: "+format, a...))
}

func (c *checker) badBlocks(format string, a ...any) {
	c.errs = append(c.errs, fmt.Errorf("engine: KV blocks: "+format, a...))
}

// eachHeld calls f with every request the queues hold, in the order the
// cohort, the running list, the waiting heap and the waiting run hold
// them, a cohort member as its fields would read now (memberView).
func (c *checker) eachHeld(f func(s *seq)) {
	e := c.e
	for _, s := range e.co.members {
		if s != nil {
			v := e.memberView(s)
			f(&v)
		}
	}
	for _, s := range e.running {
		f(s)
	}
	for _, it := range e.waiting.items {
		f(it.s)
	}
	q := &e.waiting
	for i := q.head; i < len(q.run); i++ {
		if s := q.run[i].s; s != nil {
			f(s)
		}
	}
	for _, s := range e.reserved {
		f(s)
	}
	for _, s := range e.landed {
		f(s)
	}
}

// eachRequestInOnePlace: every request held is in exactly one place (the
// decode cohort, the running list, or the waiting queue's heap or run),
// and the lookup table holds exactly those, each under its own Ref.
func (c *checker) eachRequestInOnePlace() {
	e := c.e
	where := [...]string{1: "running", 2: "waiting", 3: "reserved", 4: "landed"}
	seen := 0
	visit := func(s *seq, in uint8, twice func(s *seq)) {
		if s.checkGen == c.gen {
			twice(s)
		} else {
			seen++
		}
		s.checkGen, s.checkIn = c.gen, in
	}
	for _, s := range e.co.members {
		if s != nil {
			visit(s, 1, func(s *seq) { c.bad("member %d of the decode cohort twice", s.req.Ref) })
		}
	}
	for _, s := range e.running {
		visit(s, 1, func(s *seq) { c.bad("request %d in the running list twice (also %s)", s.req.Ref, where[s.checkIn]) })
	}
	waiting := func(s *seq) { c.bad("request %d in the waiting queue and %s", s.req.Ref, where[s.checkIn]) }
	for _, it := range e.waiting.items {
		visit(it.s, 2, waiting)
	}
	q := &e.waiting
	for i := q.head; i < len(q.run); i++ {
		if s := q.run[i].s; s != nil {
			visit(s, 2, waiting)
		}
	}
	for _, s := range e.reserved {
		visit(s, 3, func(s *seq) { c.bad("request %d reserved and %s", s.req.Ref, where[s.checkIn]) })
	}
	for _, s := range e.landed {
		visit(s, 4, func(s *seq) { c.bad("request %d landed and %s", s.req.Ref, where[s.checkIn]) })
	}
	if seen != e.reqs.len() {
		c.bad("%d requests in queues but %d in the lookup table", seen, e.reqs.len())
	}
	for ref, s := range e.reqs.all() {
		if s.req.Ref != ref {
			c.bad("lookup table maps %d to request %d", ref, s.req.Ref)
		}
		if s.checkGen != c.gen {
			c.bad("request %d is in no queue", ref)
		}
	}
}

// cohortMembersMarkedRunning: a member of the decode cohort is marked
// running and a member.
func (c *checker) cohortMembersMarkedRunning() {
	for i, s := range c.e.co.members {
		if s != nil && (s.phase != phaseRunning || !s.member) {
			c.bad("request %d in the decode cohort at index %d is marked phase %d, member %v", s.req.Ref, i, s.phase, s.member)
		}
	}
}

// runningMarkedRunning: a request in the running list is marked running.
func (c *checker) runningMarkedRunning() {
	for i, s := range c.e.running {
		if s.phase != phaseRunning {
			c.bad("request %d in the running list at index %d is not marked running", s.req.Ref, i)
		}
	}
}

// waitingMarkedWaiting: a waiting request is marked waiting, with its
// index in the heap (or runIdx of its index in the run).
func (c *checker) waitingMarkedWaiting() {
	q := &c.e.waiting
	for i, it := range q.items {
		if s := it.s; s.phase != phaseWaiting || int(s.heapIdx) != i {
			c.bad("request %d in the waiting queue at %d is marked phase %d, index %d", s.req.Ref, i, s.phase, s.heapIdx)
		}
	}
	for i := q.head; i < len(q.run); i++ {
		if s := q.run[i].s; s != nil && (s.phase != phaseWaiting || int(s.heapIdx) != runIdx(i)) {
			c.bad("request %d in the waiting queue's run at %d is marked phase %d, index %d", s.req.Ref, i, s.phase, s.heapIdx)
		}
	}
}

// waitingHoldNothing: a waiting request holds no KV block and has no
// token computed.
func (c *checker) waitingHoldNothing() {
	q := &c.e.waiting
	check := func(s *seq) {
		if s.blocks() != 0 || s.computed != 0 {
			c.bad("waiting request %d holds %d blocks and %d computed tokens", s.req.Ref, s.blocks(), s.computed)
		}
	}
	for _, it := range q.items {
		check(it.s)
	}
	for i := q.head; i < len(q.run); i++ {
		if s := q.run[i].s; s != nil {
			check(s)
		}
	}
}

// remoteInTheirLists: a reserved request is marked reserved and is
// Remote, or marked as loading from the tier, which the engine has; a
// landed one likewise; every request in the waiting queue or running has
// no reserved or landed stage.
func (c *checker) remoteInTheirLists() {
	e := c.e
	for _, s := range e.reserved {
		if s.phase != phaseReserved || !(s.rstate == remoteReserved && s.req.Remote || s.rstate == tierReserved && e.tier != nil) {
			c.badRequest(s, "reserved but marked phase %d, stage %d, Remote %v, tier %v", s.phase, s.rstate, s.req.Remote, e.tier != nil)
		}
	}
	for _, s := range e.landed {
		if s.phase != phaseLanded || !(s.rstate == remoteLanded && s.req.Remote || s.rstate == tierLanded && e.tier != nil) {
			c.badRequest(s, "landed but marked phase %d, stage %d, Remote %v, tier %v", s.phase, s.rstate, s.req.Remote, e.tier != nil)
		}
	}
	c.eachHeld(func(s *seq) {
		if (s.phase == phaseWaiting || s.phase == phaseRunning) && s.rstate != remoteNone && s.rstate != remoteWaiting {
			c.badRequest(s, "phase %d with the Remote stage %d", s.phase, s.rstate)
		}
		if s.rstate != remoteNone && s.rstate < tierReserved && (!s.req.Remote || !e.cfg.RemoteKV) {
			c.badRequest(s, "Remote stage %d, Remote %v, Config.RemoteKV %v", s.rstate, s.req.Remote, e.cfg.RemoteKV)
		}
	})
}

// remoteHoldTheirSequence: a Remote request not yet reserved holds no
// block, has its first output token (emitted 1) and nothing computed; a
// reserved one holds the blocks of its whole known sequence (counted as
// used, so held + free = total still holds) with only its prefix-cache
// hits computed; a landed one holds them with its prompt computed; none
// of them has started. A request loading from the tier holds the blocks
// of what its admission's gate counts (more than its HBM hits and the
// tokens it loads, a whole number of blocks and at least one loaded),
// with its hits computed; landed, with the loaded tokens too.
func (c *checker) remoteHoldTheirSequence() {
	e := c.e
	c.eachHeld(func(s *seq) {
		switch s.rstate {
		case remoteNone:
			return
		case tierReserved, tierLanded:
			b := e.cfg.BlockSize
			hit, load := int(s.tierHit), int(s.tierLoad)
			want := hit
			if s.rstate == tierLanded {
				want += load
			}
			if hit%b != 0 || load%b != 0 || load < b || s.computed != want ||
				hit+load >= s.known || s.blocks() != (hit+load)/b || s.sched != 0 {
				c.badRequest(s, "tier stage %d: %d computed, %d hit, %d loaded, %d blocks, %d known, %d scheduled",
					s.rstate, s.computed, hit, load, s.blocks(), s.known, s.sched)
			}
			return
		case remoteWaiting:
			if s.blocks() != 0 || s.computed != 0 {
				c.badRequest(s, "Remote, not reserved, holds %d blocks, %d computed", s.blocks(), s.computed)
			}
		case remoteReserved:
			if s.computed != int(s.cached) || s.computed >= s.req.Input {
				c.badRequest(s, "reserved with %d computed, %d cached of its prompt of %d", s.computed, s.cached, s.req.Input)
			}
		case remoteLanded:
			if s.computed != s.req.Input {
				c.badRequest(s, "landed with %d of its prompt of %d computed", s.computed, s.req.Input)
			}
		}
		if s.rstate != remoteWaiting && s.blocks() != e.blocksFor(s.known) {
			c.badRequest(s, "Remote, stage %d, holds %d blocks for its %d known tokens", s.rstate, s.blocks(), s.known)
		}
		if s.started || s.emitted != 1 || s.sched != 0 {
			c.badRequest(s, "Remote, stage %d, started %v, emitted %d, scheduled %d", s.rstate, s.started, s.emitted, s.sched)
		}
	})
}

// remoteNotScheduledBeforeLanded: no request in the step in flight is a
// Remote request waiting for its blocks or its KV; a Remote request
// admitted had its KV landed (computed its prompt) and was scheduled as a
// decode.
func (c *checker) remoteNotScheduledBeforeLanded() {
	if !c.e.inFlight {
		return // sched is the last step's, its requests maybe recycled since
	}
	for _, s := range c.e.sched {
		if s.rstate != remoteNone {
			c.badRequest(s, "scheduled at the Remote stage %d, before its KV landed", s.rstate)
		}
	}
}

// landedInPolicyOrder: the landed requests wait in policy order (Add
// order under FCFS).
func (c *checker) landedInPolicyOrder() {
	e := c.e
	for i := 1; i < len(e.landed); i++ {
		a, b := e.landed[i-1], e.landed[i]
		if e.landedBefore(b.queued(), b, a) {
			c.bad("landed request %d waits after %d, which the policy admits later", a.req.Ref, b.req.Ref)
		}
	}
}

// waitingHeapKeyed: the heap keeps one key per request off FCFS, and each
// request waits in it with its own key (ownKey) and, off FCFS, its own
// Queued value.
func (c *checker) waitingHeapKeyed() {
	q := &c.e.waiting
	if !q.fcfs && len(q.keys) != len(q.items) {
		c.bad("the waiting queue holds %d requests and %d keys", len(q.items), len(q.keys))
		return // the keys cannot be read
	}
	for i, it := range q.items {
		s := it.s
		if !c.ownKey(s, it.key) {
			c.bad("request %d waits in the heap with the key %d (Add order %d, preempted %d times)", s.req.Ref, it.key, s.order, s.preempts)
		}
		if !q.fcfs && q.keys[i] != s.queued() {
			c.bad("request %d waits with the key %+v, not its own %+v", s.req.Ref, q.keys[i], s.queued())
		}
	}
}

// ownKey reports whether k is s's key in the waiting queue. Off FCFS it is
// s's Add order. Under FCFS, a request never preempted is keyed by its Add
// order (Add, unreserve); a request preempted re-entered the queue at its
// last preemption (an FCFS request leaves the running list only so, and
// only a Remote request never admitted is reserved), so it is keyed below
// every Add order (k < 0) by the queue's preemption counter (k >= front),
// ahead of every request waiting, the last preempted first.
func (c *checker) ownKey(s *seq, k int64) bool {
	q := &c.e.waiting
	if !q.fcfs || s.preempts == 0 {
		return k == int64(s.order)
	}
	return k < 0 && k >= q.front
}

// waitingHeapOrdered: no request in the heap comes before its parent.
func (c *checker) waitingHeapOrdered() {
	q := &c.e.waiting
	if !q.fcfs && len(q.keys) != len(q.items) {
		return // waitingHeapKeyed says so; the order cannot be read
	}
	for i, it := range q.items {
		if i > 0 && q.less(i, (i-1)/2) {
			c.bad("request %d in the waiting queue at %d comes before its parent", it.s.req.Ref, i)
		}
	}
}

// waitingRunOnlyUnderFCFS: the waiting queue keeps a run outside its heap
// only under FCFS.
func (c *checker) waitingRunOnlyUnderFCFS() {
	if q := &c.e.waiting; !q.fcfs && len(q.run) > 0 {
		c.bad("the waiting queue keeps a run of %d under a policy other than FCFS", len(q.run))
	}
}

// waitingRunHeadLive: the run's head, when it has one, is a request, not
// a hole.
func (c *checker) waitingRunHeadLive() {
	if q := &c.e.waiting; q.head < len(q.run) && q.run[q.head].s == nil {
		c.bad("the waiting queue's run has a hole at its head %d", q.head)
	}
}

// waitingRunInKeyOrder: the run is in increasing key order from its head
// (the Add order but for preempted requests, ahead of it), each request in
// it with its own key (ownKey).
func (c *checker) waitingRunInKeyOrder() {
	q := &c.e.waiting
	for i := q.head; i < len(q.run); i++ {
		it := q.run[i]
		if i > q.head && it.key <= q.run[i-1].key {
			c.bad("the waiting queue's run is out of key order at %d (%d after %d)", i, it.key, q.run[i-1].key)
		}
		if s := it.s; s != nil && !c.ownKey(s, it.key) {
			c.bad("request %d waits in the run with the key %d (Add order %d, preempted %d times)", s.req.Ref, it.key, s.order, s.preempts)
		}
	}
}

// waitingRunCounted: the run counts the requests it holds from its head.
func (c *checker) waitingRunCounted() {
	q := &c.e.waiting
	live := 0
	for i := q.head; i < len(q.run); i++ {
		if q.run[i].s != nil {
			live++
		}
	}
	if live != q.live {
		c.bad("the waiting queue's run counts %d requests and holds %d", q.live, live)
	}
}

// knownIsInputPlusEmitted: a request's tokens that exist are its prompt
// and the tokens it emitted.
func (c *checker) knownIsInputPlusEmitted() {
	c.eachHeld(func(s *seq) {
		if s.known != s.req.Input+s.emitted {
			c.badRequest(s, "known tokens %d != input %d + emitted %d", s.known, s.req.Input, s.emitted)
		}
	})
}

// computedWithinKnown: a request computes no more tokens than exist:
// 0 <= computed, computed + scheduled <= known; a run of decode steps
// computes one token and samples the next per step, so only the first of
// its tokens exists yet (computed + 1 = known).
func (c *checker) computedWithinKnown() {
	c.eachHeld(func(s *seq) {
		switch {
		case s.computed < 0:
			c.badRequest(s, "computed %d tokens", s.computed)
		case s.decoding && s.sched > 0:
			if s.computed+1 != s.known {
				c.badRequest(s, "decodes %d steps with %d of %d known tokens computed", s.sched, s.computed, s.known)
			}
		case s.computed+s.sched > s.known:
			c.badRequest(s, "computed %d + scheduled %d exceed known %d", s.computed, s.sched, s.known)
		}
	})
}

// outputNotDone: a request still held has emitted fewer tokens than its
// output (it leaves when it emits its last).
func (c *checker) outputNotDone() {
	c.eachHeld(func(s *seq) {
		if s.emitted >= s.req.Output {
			c.badRequest(s, "emitted %d of %d tokens but still held", s.emitted, s.req.Output)
		}
	})
}

// blocksCoverTokens: a request holds ceil(tokens / BlockSize) blocks (its
// cached ones and a non-negative count of anonymous ones) for its tokens
// computed and those taken beyond them: scheduled, kept from rejected
// drafts, or a run's blocks taken so far.
func (c *checker) blocksCoverTokens() {
	e := c.e
	c.eachHeld(func(s *seq) {
		ahead := max(s.sched, int(s.look)) // tokens whose blocks are taken beyond those computed
		if e.lazy && s.sched > 0 {
			ahead = e.runAlloc * s.sched // a run takes its blocks step by step (a chunk a step for a prompt)
		}
		switch s.rstate {
		case remoteReserved, remoteLanded:
			ahead = s.known - s.computed // reserved for its whole known sequence
		case tierReserved, tierLanded:
			ahead = int(s.tierHit+s.tierLoad) - s.computed // the blocks of its hits and loaded tokens
		}
		if anon, want := e.anonOf(s), e.blocksFor(s.computed+ahead); s.held+anon != want || anon < 0 {
			c.badRequest(s, "holds %d cached + %d anonymous blocks for %d tokens, want %d", s.held, anon, s.computed+ahead, want)
		}
	})
}

// outstandingCounted: the engine's count of outstanding tokens is the sum
// of what its requests still ask (seq.left).
func (c *checker) outstandingCounted() {
	e := c.e
	left := 0
	for _, s := range e.reqs.all() {
		if s.member {
			v := e.memberView(s)
			left += v.left()
			continue
		}
		left += s.left()
	}
	if left != e.outstanding {
		c.bad("outstanding tokens counted %d, requests hold %d", e.outstanding, left)
	}
}

// lazyOnlyInFlight: a run takes its blocks step by step (lazy) only
// while its plan is in flight, as Outstanding, which reads lazy alone,
// assumes.
func (c *checker) lazyOnlyInFlight() {
	if e := c.e; e.lazy && !e.inFlight {
		c.bad("a run takes its blocks step by step (lazy), but no plan is in flight")
	}
}

// runningWithinMaxSeqs: no more requests run than MaxSeqs.
func (c *checker) runningWithinMaxSeqs() {
	if e := c.e; e.nrunning() > e.cfg.MaxSeqs {
		c.bad("running list %d exceeds MaxSeqs %d", e.nrunning(), e.cfg.MaxSeqs)
	}
}

// memberView is a member as its fields would read were they written now
// (syncMember), without writing them.
func (e *Engine) memberView(s *seq) seq {
	v := *s
	v.held = e.memberHeld(s)
	d := e.co.tick - s.t0
	v.computed += d
	v.known += d
	v.emitted += d
	v.anon = e.blocksFor(v.computed+e.co.ahead) - v.held
	v.sched, v.decoding = 0, false
	if e.inFlight && e.plan.Cohort > 0 {
		v.sched, v.decoding = 1, true
	}
	return v
}

// cohortKept reports whether the engine ever kept a decode cohort, whose
// aggregates the cohort's invariants check.
func (c *checker) cohortKept() bool {
	co := &c.e.co
	return len(co.members) > 0 || co.count != nil
}

// neverKeptIsEmpty: a cohort never kept (no count table: setCohort) has
// no member and none due, so that a speculative engine's Complete passes
// it by (completeNoCohort).
func (c *checker) neverKeptIsEmpty() {
	if co := &c.e.co; co.n != 0 || co.fin.len() != 0 {
		c.badCohort("never kept, yet %d members and %d due", co.n, co.fin.len())
	}
}

// cohortOnWhileMembers: the cohort has members in flight only while the
// engine keeps one.
func (c *checker) cohortOnWhileMembers() {
	if e := c.e; e.co.n > 0 && !e.co.on && e.inFlight {
		c.badCohort("%d members while the engine keeps no cohort", e.co.n)
	}
}

// membersIndexed: a member knows its index in the cohort's list.
func (c *checker) membersIndexed() {
	for i, s := range c.e.co.members {
		if s != nil && int(s.cidx) != i {
			c.badCohort("member %d at %d says it is at %d", s.req.Ref, i, s.cidx)
		}
	}
}

// membersRanked: the cohort's list is in increasing running order (rank).
func (c *checker) membersRanked() {
	var last *seq
	for _, s := range c.e.co.members {
		if s == nil {
			continue
		}
		if last != nil && s.rank <= last.rank {
			c.badCohort("member %d ranks %d after %d", s.req.Ref, s.rank, last.rank)
		}
		last = s
	}
}

// membersCounted: the cohort counts the members its list holds.
func (c *checker) membersCounted() {
	if n, live := c.e.co.n, c.members(); live != n {
		c.badCohort("%d members, counted %d", live, n)
	}
}

// membersFinishOnTime: a member's finish tick is the cohort's tick at
// which it emits its last token: t0 + Output − emitted.
func (c *checker) membersFinishOnTime() {
	for _, s := range c.e.co.members {
		if s == nil {
			continue
		}
		if want := s.t0 + s.req.Output - s.emitted; s.finTick != want {
			c.badCohort("member %d finishes at tick %d, its tokens say %d", s.req.Ref, s.finTick, want)
		}
	}
}

// cohortContextsSummed: the cohort's context sum is the sum of its
// members' tokens computed since they joined.
func (c *checker) cohortContextsSummed() {
	co := &c.e.co
	csum := 0
	for _, s := range co.members {
		if s != nil {
			csum += s.computed - s.t0
		}
	}
	if csum != co.csum {
		c.badCohort("contexts counted %d, members give %d", co.csum, csum)
	}
}

// cohortResiduesCounted: the cohort counts its members by the residue of
// their tokens computed since they joined modulo BlockSize, and sums
// their quotients (Σq).
func (c *checker) cohortResiduesCounted() {
	e := c.e
	co := &e.co
	q := 0
	count := make([]int32, len(co.count))
	for _, s := range co.members {
		if s == nil {
			continue
		}
		n := s.computed - s.t0
		count[n&(e.cfg.BlockSize-1)]++
		q += n >> e.shift
	}
	if q != co.q || fmt.Sprint(count) != fmt.Sprint(co.count) {
		c.badCohort("counts %v (Σq %d), members give %v (Σq %d)", co.count, co.q, count, q)
	}
}

// cohortSuffixSums: suf[k] is the members counted at residues k and
// above, and the sum of their residues.
func (c *checker) cohortSuffixSums() {
	co := &c.e.co
	for k, n, rs := len(co.count), int32(0), 0; k >= 0; k-- {
		if k < len(co.count) {
			n += co.count[k]
			rs += k * int(co.count[k])
		}
		if co.suf.n(k) != int(n) {
			c.badCohort("suffix sum %d is %d, the counts give %d", k, co.suf.n(k), n)
		}
		if co.suf.r(k) != rs {
			c.badCohort("suffix sum %d of the residues is %d, the counts give %d", k, co.suf.r(k), rs)
		}
	}
}

// finishQueueHoldsMembers: the finish queue holds every member in the
// cohort's list once, at the tick it finishes.
func (c *checker) finishQueueHoldsMembers() {
	co := &c.e.co
	live := 0
	for _, x := range co.fin.all() {
		if x.live() {
			live++
			if x.tick != x.s.finTick {
				c.badCohort("finish queue has member %d at tick %d, it finishes at %d", x.s.req.Ref, x.tick, x.s.finTick)
			}
		}
	}
	if members := c.members(); live != members {
		c.badCohort("finish queue holds %d members, the cohort %d", live, members)
	}
}

// members counts the members in the cohort's list.
func (c *checker) members() int {
	n := 0
	for _, s := range c.e.co.members {
		if s != nil {
			n++
		}
	}
	return n
}

// finishQueueOrdered: the finish queue's run is in finish order, and its
// heap is a heap by finish tick.
func (c *checker) finishQueueOrdered() {
	fin := &c.e.co.fin
	for i, x := range fin.run[fin.head:] {
		if i > 0 && fin.run[fin.head+i-1].tick > x.tick {
			c.badCohort("finish queue's run out of order at %d", i)
		}
	}
	for i, x := range fin.heap {
		if i > 0 && fin.heap[(i-1)/2].tick > x.tick {
			c.badCohort("finish heap out of order at %d", i)
		}
	}
}

// noStepsAheadIdle: the cohort takes blocks steps ahead only while a step
// is in flight.
func (c *checker) noStepsAheadIdle() {
	if e := c.e; c.cohortKept() && !e.inFlight && e.co.ahead != 0 {
		c.badCohort("%d steps ahead with nothing in flight", e.co.ahead)
	}
}

// freeQueuesLinked: each free queue is a list without a cycle whose nodes
// are marked queued in it, held by nobody, linked back to their
// predecessor, and a cached block or a run of anonymous ones. It tallies
// what it walked for the invariants after it.
func (c *checker) freeQueuesLinked() {
	p := &c.e.pool
	for qi := range p.q {
		n, prev := 0, noNode
		for id := p.q[qi].head; id != noNode; id = p.nodes[id].next {
			b := &p.nodes[id]
			if b.checkGen == c.gen {
				c.badBlocks("free queue %d has a cycle at node %d", qi, id)
				break
			}
			b.checkGen = c.gen
			if !b.queued || b.refs != 0 || b.prev != prev || int(b.queue) != qi || b.run < 0 && (b.run != segRun || p.runs == nil) {
				c.badBlocks("node %d in free queue %d: queued %v, %d references, prev %d (want %d), queue %d, run %d", id, qi, b.queued, b.refs, b.prev, prev, b.queue, b.run)
			}
			if b.run <= 0 {
				c.evict += p.size(id)
			}
			n += p.size(id)
			prev = id
		}
		c.walked[qi].blocks, c.walked[qi].last = n, prev
		c.free += n
	}
}

// freeQueuesSplit: under FreeBlocksFirst the first free queue holds the
// runs of anonymous blocks, the second the cached blocks.
func (c *checker) freeQueuesSplit() {
	p := &c.e.pool
	if !p.split {
		return
	}
	for qi := range p.q {
		for id, steps := p.q[qi].head, 0; id != noNode && steps < len(p.nodes); id, steps = p.nodes[id].next, steps+1 {
			switch run := p.nodes[id].run; {
			case run <= 0 && qi == 0:
				c.badBlocks("cached block %d in the never-cached queue", id)
			case run > 0 && qi == 1:
				c.badBlocks("anonymous run %d in the cached queue", id)
			}
		}
	}
}

// freeQueuesCounted: each free queue counts the blocks it holds and knows
// its tail.
func (c *checker) freeQueuesCounted() {
	p := &c.e.pool
	for qi := range p.q {
		q, w := &p.q[qi], c.walked[qi]
		if q.tail != w.last || q.blocks != w.blocks {
			c.badBlocks("free queue %d counts %d blocks, tail %d; walked %d, last %d", qi, q.blocks, q.tail, w.blocks, w.last)
		}
	}
}

// indexFindsItsBlocks: the prefix cache's index finds each key it holds at
// the node it holds it at.
func (c *checker) indexFindsItsBlocks() {
	p := &c.e.pool
	p.index.each(func(key uint64, id int32) {
		if got, ok := p.index.get(key); !ok || got != id {
			c.badBlocks("index holds %#x at node %d but finds node %d (%v)", key, id, got, ok)
		}
	})
}

// indexedBlocksCached: the index maps a key to a cached block carrying
// that key, not to a run of anonymous ones.
func (c *checker) indexedBlocksCached() {
	p := &c.e.pool
	p.eachCached(func(key uint64, id int32) {
		if b := &p.nodes[id]; b.key != key || b.run != 0 {
			c.badBlocks("index maps %#x to node %d holding %#x (run %d)", key, id, b.key, b.run)
		}
	})
}

// refsCountHolders: a cached block's reference count is the number of
// requests holding it.
func (c *checker) refsCountHolders() {
	p := &c.e.pool
	p.eachCached(func(_ uint64, id int32) {
		if b := &p.nodes[id]; b.refs != c.refs[id] {
			c.badBlocks("block %d counts %d references, %d requests hold it", id, b.refs, c.refs[id])
		}
	})
}

// queuedIffUnheld: a cached block is in a free queue exactly when nobody
// holds it.
func (c *checker) queuedIffUnheld() {
	p := &c.e.pool
	p.eachCached(func(_ uint64, id int32) {
		if b := &p.nodes[id]; (b.refs == 0) != b.queued {
			c.badBlocks("block %d with %d references is queued: %v", id, b.refs, b.queued)
		}
	})
}

// blocksHeldPlusFreeIsTotal: KV blocks held + free = total (KVBlocks), the
// free ones as the pool counts them; the held ones are the requests'
// anonymous blocks and the cached blocks with a reference.
func (c *checker) blocksHeldPlusFreeIsTotal() {
	p := &c.e.pool
	held := c.anon
	p.eachCached(func(_ uint64, id int32) {
		if p.nodes[id].refs > 0 {
			held++
		}
	})
	if held+c.free != p.total || c.free != p.free() {
		c.badBlocks("blocks held %d + free %d != total %d (free counted %d)", held, c.free, p.total, p.free())
	}
}

// eachCached calls f with every cached block: those the index finds,
// then the copies (blockPool.copies).
func (p *blockPool) eachCached(f func(key uint64, id int32)) {
	p.index.each(f)
	for key, c := range p.copies {
		for _, id := range c {
			f(key, id)
		}
	}
}

// copiesBehindIndex: a key has copies only while the index finds another
// block for it, and ncopy counts them.
func (c *checker) copiesBehindIndex() {
	p := &c.e.pool
	n := 0
	for key, ids := range p.copies {
		n += len(ids)
		if cur, ok := p.index.get(key); !ok || len(ids) == 0 || slices.Contains(ids, cur) {
			c.badBlocks("key %#x has copies %v, the index finding %d (%v)", key, ids, cur, ok)
		}
	}
	if n != p.ncopy {
		c.badBlocks("%d copies counted, %d held", p.ncopy, n)
	}
}

// cacheCounted: the pool counts its cached blocks (those the index holds)
// and its evictable ones (the cached blocks in a free queue).
func (c *checker) cacheCounted() {
	if p := &c.e.pool; p.index.len()+p.ncopy != p.cached || c.evict != p.evict {
		c.badBlocks("counts %d cached (%d evictable), index holds %d + %d copies, queues %d", p.cached, p.evict, p.index.len(), p.ncopy, c.evict)
	}
}
