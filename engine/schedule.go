package engine

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/internal/accept"
)

// scheduling is the step the engine planned and has in flight: the plan
// it answered Schedule with, the outcome Complete answers with, and the
// requests the step scheduled.
type scheduling struct {
	inFlight bool        // a plan is in flight: Complete has not ended it
	fcfs     bool        // the policy is FCFS: a victim is never a request the step scheduled (beside inFlight, in its padding: sc took its place, and an Engine larger put TestFleetSetupAllocatesEachReplicaOnce over its bound)
	owe      int32       // blocks the plan being made owes the pool, which its next admission takes with its own (oweAdmit; schedule), within the KV blocks; beside the two bools, in their padding (TestFleetSetupAllocatesEachReplicaOnce)
	plan     Plan        // the step (or run) in flight
	out      Outcome     // the last outcome
	sched    []*seq      // scheduled in the step in flight, in batch order
	inline   int         // of them, plain decodes planChunked scheduled inline
	minLeft  int         // their fewest output tokens left
	lastOne  bool        // a prompt they hold takes its last chunk, or the one before: one step (chunkSteps)
	chunkPub bool        // a prompt of the run of chunks in flight caches blocks of shared content in its later steps (chunkPubSteps; set by chunkLimit); beside lastOne, in its padding: a larger Engine put TestFleetSetupAllocatesEachReplicaOnce over its bound
	vsum     int32       // speculative decoding: Σ plan.Batch.Verify, the positions the step verifies (sumVerify), within MaxBatchedTokens ≤ MaxTokens; beside lastOne and chunkPub, in their padding: an int more put the Engine in a larger size class (TestFleetSetupAllocatesEachReplicaOnce)
	pubLeft  int         // the fewest steps to a decode of theirs that caches a block of shared output (publishDecode)
	pubRun   int         // of them, those with blocks of shared output left to cache in a run's later steps (runPublish)
	pubs     []pubAt     // runPublish's scratch
	acceptor Acceptor    // speculative decoding: the driver's acceptance draws
	sc       *specCohort // speculative decoding: its cohort (speccohort.go), made when decideFast first keeps one

	unscheduled int // victims taken back out of the step being planned, so far (the tests count them)
	gated       int // waiting heads with hits tryAdmit refused without walking them (strict mode; the tests count them)
	stalls      int // landed tier loads that stalled a replica with nothing running (unstall; the tests count them)
}

// emptyStep is the duration of a step that schedules nothing (see
// scheduleUntil): vLLM's engine core passes through schedule() and
// update_from_output() without a forward pass, in well under a
// millisecond; servesim prices no scheduler time otherwise, and a step
// must take some time.
const emptyStep = time.Microsecond

// Schedule plans the next step at instant now and returns it, or nil when
// the engine holds nothing it can run. The step stays in flight until
// Complete is called with its End.
func (e *Engine) Schedule(now time.Duration) (*Plan, error) {
	return e.scheduleUntil(now, now)
}

// scheduleUntil is Runner.ScheduleUntil (runner.go), which documents it.
func (e *Engine) scheduleUntil(now, until time.Duration) (*Plan, error) {
	if e.strict {
		e.checkPlan(now, until)
	}
	if e.inFlight {
		return nil, ErrStepInFlight
	}
	e.resetPlan(now)
	if e.reqs.len() == 0 {
		return nil, nil
	}
	e.planChunked()
	e.plan.Steps = 1
	if len(e.sched) == 0 && e.plan.Cohort == 0 {
		// The first running request was its own preemption victim (under
		// a policy other than FCFS, with others still holding their
		// blocks): as vLLM's running loop breaks ("if preempted_req ==
		// request: break") and skips the waiting loop after a
		// preemption, the step is empty. vLLM runs no forward pass for it
		// (the model runner returns EMPTY_MODEL_RUNNER_OUTPUT); it lasts
		// emptyStep. Each empty step preempts a request, so within
		// MaxSeqs of them nothing runs and the waiting head is admitted.
		//
		// A plan that only reserved blocks for Remote requests is empty
		// too: vLLM runs the step without a forward pass to start the
		// loads (kv_connector_no_forward). With nothing reserved either,
		// the requests that could run wait for their KV to land
		// (remote.go): there is no step until a Land.
		if len(e.plan.Preempted) == 0 && len(e.plan.Reserved) == 0 {
			if e.waitingKV() {
				return nil, nil
			}
			panic("engine: invariant progress broken: requests held but no step could be planned")
		}
		e.plan.StepTime = emptyStep
	} else if pb := &e.plan.Batch; e.lastOne && len(pb.Prefill) == 1 && pb.Prefill[0].Context == 0 && pb.Verify == nil && e.chunkFree {
		e.plan.StepTime = e.wholePrice() // a whole prompt beside decodes: a mixed step's price may be known
	} else {
		e.plan.StepTime = e.price()
	}
	e.probeK = 0 // the probes of this plan's run follow
	if e.plan.StepTime <= 0 {
		return nil, e.badStepTime()
	}
	if until > now {
		e.extendRun(now, until)
	}
	if !e.mixed { // a mixed move's is its own (mixed.go)
		e.plan.End = now + time.Duration(e.plan.Steps)*e.plan.StepTime
	}
	e.inFlight = true
	e.noteFirstStep() // and the tier's stores, once the plan is accepted
	e.runHead = 0
	if e.waiting.len() > 0 {
		e.runHead = e.waiting.peek().order + 1
	}
	return &e.plan, nil
}

// badStepTime abandons a plan its model priced at no time, and says so.
func (e *Engine) badStepTime() error {
	e.abandonPlan()
	return fmt.Errorf("%w: %v for %d sequences", ErrBadStepTime, e.plan.StepTime, e.plan.Batch.Seqs())
}

func (e *Engine) resetPlan(now time.Duration) {
	e.sched = e.sched[:0]
	e.plan.Start = now
	e.plan.Steps = 0
	e.plan.StepTime = 0
	e.plan.End = now
	e.plan.Batch.Prefill = e.plan.Batch.Prefill[:0]
	e.plan.Batch.Decode = e.plan.Batch.Decode[:0]
	if e.plan.Batch.Verify != nil { // speculative decoding: only then is vsum other than 0
		e.plan.Batch.Verify = e.plan.Batch.Verify[:0]
		e.vsum = 0
	}
	e.plan.Started = e.plan.Started[:0]
	e.plan.Cached = e.plan.Cached[:0]
	e.plan.Preempted = e.plan.Preempted[:0]
	e.plan.Cohort = 0
	e.resetResidues() // before inline is reset: it reads the last plan's
	e.inline, e.minLeft, e.pubLeft, e.pubRun, e.lastOne = 0, math.MaxInt, math.MaxInt, 0, false
}

// planChunked is vLLM V1's schedule() (vllm/v1/core/sched/scheduler.py):
// running requests first, in order, each asking for its remaining tokens (1
// when decoding) capped by ChunkCap and the budget left; when blocks run
// out, preempt from the tail; then, only if nothing was preempted, admit
// waiting requests in policy order until one does not fit. With
// DisableChunkedPrefill the running loop is the same and a waiting request
// whose remaining tokens exceed the budget left is not chunked: admission
// stops there (V1's enable_chunked_prefill=False). It notes the running
// requests it did not schedule (satOutFrom).
func (e *Engine) planChunked() {
	budget, owed := e.planCohort(e.cfg.MaxBatchedTokens)
	plain := e.cfg.SpeculativeTokens == 0
	// Inline decodes take their blocks from the pool together (owed),
	// with the cohort's, before anything else reads it: taking n₁ then n₂
	// blocks from the free queue's head is taking n₁ + n₂ (see
	// residues.go).
	avail := e.available() - owed
	count, mask, q := e.res.count, len(e.res.count)-1, 0
	i := 0
	for ; i < len(e.running) && budget > 0; i++ {
		s := e.running[i]
		if plain && s.emitted > 0 && s.known-s.computed == 1 {
			// A plain decode, the usual case, inline: it asks for one
			// token, and needs no room made when its block is free.
			c := s.computed
			if need := e.blocksFor(c+1) - s.blocks(); need <= avail {
				if need > 0 {
					owed += need
					avail -= need
					s.anon += need
				}
				s.sched, s.decoding, s.draft = 1, true, 0
				if s.held < s.shared { // its answer's blocks are shared (PrefixCoversOutput)
					e.publishDecode(s, c) // caching takes no block: owed and avail stand
				}
				e.sched = append(e.sched, s)
				e.plan.Batch.Decode = append(e.plan.Batch.Decode, c)
				if count != nil {
					count[c&mask]++
					q += c >> e.sh()
				}
				e.inline++
				e.minLeft = min(e.minLeft, s.req.Output-s.emitted)
				budget--
				continue
			}
		}
		if !plain {
			// Speculative decodes from here on, inline (planDrafts).
			var j int
			if j, budget, avail, owed = e.planDrafts(i, budget, avail, owed); j > i {
				i = j - 1
				continue
			}
		}
		e.pool.take(owed)
		owed = 0
		n := e.chunk(s, s.computed, budget)
		back, ok := e.makeRoom(s, n, &i)
		budget += back
		if !ok {
			break // s was its own victim
		}
		e.schedule(s, n)
		budget -= n
		avail = e.available()
	}
	// The running requests from i on were not scheduled; those the
	// waiting loop admits below all are: noted here, the loop over the
	// running list after it passed them (RunAtlas 4,817 then 4,812
	// instructions a request).
	e.satOutFrom(i)
	if !e.fast.oweAdmit || len(e.plan.Preempted) > 0 {
		e.pool.take(owed)
		owed = 0
	}
	e.owe = int32(owed) // oweAdmit: the first admission takes them with its own
	e.res.q += q
	if e.async { // the waiting loop of a KV consumer (remote.go), or with a tier (tier.go)
		e.plan.Reserved = e.plan.Reserved[:0]
		e.refusedHead = nil // admitAsync's loop sets it when it stops at a refusal
		if len(e.plan.Preempted) == 0 {
			e.admitAsync(budget)
		}
		e.tierRun = e.tierRuns()
		return
	}
	if len(e.plan.Preempted) > 0 {
		return
	}
	for e.waiting.len() > 0 && budget > 0 && e.nrunning() < e.cfg.MaxSeqs {
		n, ok := e.tryAdmit(budget, e.cfg.DisableChunkedPrefill)
		if !ok {
			break
		}
		budget -= n
	}
	if e.owe > 0 { // no admission took them
		e.pool.take(int(e.owe))
		e.owe = 0
	}
}

// planDrafts is planChunked's running loop over speculative decodes,
// inline as its plain decodes are: from running request i on, while
// the budget lasts, each decode whose blocks are free (makeRoom has none
// to make) and whose answer has no block of shared content left to
// publish (schedule publishes them) gets schedule's steps, its 1 + K
// tokens (chunk's: fewer near its end, or the budget's cap), its blocks
// owed with the others'. It returns the index of the first running
// request it did not plan, and the budget, free blocks and owed blocks
// it leaves. A loop of its own: with planChunked's other variables live
// beside it, it spilled them (it is paid once a request and step; this
// saved 530 instructions a request in BenchmarkRegime/Speculation).
func (e *Engine) planDrafts(i, budget, avail, owed int) (int, int, int, int) {
	if i == 0 && e.sc != nil && e.sc.ready { // the speculative cohort's members, noted by Complete
		if i, budget, avail, owed = e.planSpec(budget, avail, owed); i == len(e.running) || budget <= 0 {
			return i, budget, avail, owed
		}
	}
	k, b, running := e.cfg.SpeculativeTokens, &e.plan.Batch, e.running[i:]
	// Room for each running request left in e.sched and the batch's
	// Decode and Verify, written in place and cut to those planned, as
	// verified's emits (append's tests cost 912 instructions a request in
	// BenchmarkRegime/Speculation: 43,066 then 42,154). Each sliced
	// at once past its length (Grow made the room), not to its capacity
	// and then cut: 31,644 then 31,562 instructions a request.
	ns, nd := len(e.sched), len(b.Decode)
	e.sched = slices.Grow(e.sched, len(running))
	b.Decode = slices.Grow(b.Decode, len(running))
	b.Verify = slices.Grow(b.Verify, len(running))
	sched := e.sched[ns : ns+len(running)]
	decode := b.Decode[nd : nd+len(running)]
	verify := b.Verify[nd : nd+len(running)]
	e.vsum += int32(budget) // less the budget left: Σ verify[:j], the budget they took (a variable of its own held across the loop cost 90 instructions a request in BenchmarkRegime/Speculation)
	j := 0
	for ; j < len(running) && budget > 0; j++ {
		s := running[j]
		if s.emitted == 0 || s.known-s.computed != 1 || s.held < s.shared {
			break
		}
		c := s.computed
		n := min(k+1, s.req.Output-s.emitted, budget) // 1 + min(k, tokens left after this one), capped
		need := e.blocksFor(c+n) - s.blocks()
		if need > 0 { // avail >= 0: a decode that needs no block fits
			if need > avail {
				break
			}
			owed += need
			avail -= need
			s.anon += need
		}
		s.sched, s.decoding, s.draft = n, true, int32(n-1)
		sched[j], decode[j], verify[j] = s, c, n
		budget -= n
	}
	e.sched, b.Decode, b.Verify = e.sched[:ns+j], b.Decode[:nd+j], b.Verify[:nd+j]
	e.vsum -= int32(budget)
	return i + j, budget, avail, owed
}

// chunk is the number of tokens s asks for in a step with budget left,
// when computed of its tokens are in KV.
//
// With speculative decoding a decode asks for its token and up to K drafts,
// never more than the tokens it has left to emit after this one.
func (e *Engine) chunk(s *seq, computed, budget int) int {
	n := e.newTokens(s, computed)
	if k := e.cfg.SpeculativeTokens; k > 0 && n == 1 && s.emitted > 0 {
		n += min(k, s.req.Output-s.emitted-1)
	}
	return min(n, budget)
}

// newTokens is the number of s's known tokens not in KV, at most the
// chunk cap: what a request asks for without drafts.
func (e *Engine) newTokens(s *seq, computed int) int {
	n := s.known - computed
	if e.cfg.ChunkCap > 0 && n > e.cfg.ChunkCap {
		n = e.cfg.ChunkCap
	}
	return n
}

// tryAdmit admits the head of the waiting queue if it fits in budget: a
// chunk of it, or with whole set (chunked prefill off) only its whole
// remaining sequence, after the tokens the prefix cache serves it: as
// scheduler.py's waiting loop, "if not enable_chunked_prefill and
// num_new_tokens > token_budget: break", num_new_tokens counted after the
// cached tokens. As vLLM's allocate_slots counts them,
// the blocks it must allocate — new ones, plus the cached ones it would
// take out of the free queue — must fit in the free queue and leave the
// watermark free; unless AdmitOnFirstChunk, so must those for its whole
// known sequence (scheduler_reserve_full_isl). With nothing running the
// watermark is waived, since nothing else could free a block.
//
// A preempted request without shared content is refused before its
// hits are walked when the gate refuses it whatever they are (refused).
func (e *Engine) tryAdmit(budget int, whole bool) (int, bool) {
	s := e.waiting.peek()
	hit, pinned, touched := 0, 0, false
	if e.cacheOn && (s.ownCached || s.keyed > 0) { // else no hit (hits)
		if e.owe > 0 { // the hits are walked in the pool the owed blocks leave
			e.pool.take(int(e.owe))
			e.owe = 0
		}
		if s.keyed == 0 && !e.cfg.AdmitOnFirstChunk && e.refused(s) {
			return 0, false
		}
		if e.pool.runs != nil && !whole && !e.cfg.AdmitOnFirstChunk && e.blocksFor(s.known)+e.keepFree() <= e.available() {
			// The gate below passes whatever s finds (its evictable
			// hits are among its hits): found and referenced in one
			// pass (prefix.go, hitsTouch).
			hit, touched = e.hitsTouch(s), true
		} else {
			hit, pinned = e.walkHits(s)
		}
	}
	tokens := hit * e.cfg.BlockSize
	// Admission schedules no drafts, as vLLM's waiting loop asks for
	// num_tokens - num_computed_tokens only: a resumed request whose
	// blocks are all cached but its last token's verifies that token
	// alone. Drafts here were also blocks the admission gate had not
	// counted.
	n := e.newTokens(s, tokens)
	if whole && n > budget {
		return 0, false
	}
	n = min(n, budget)
	if !touched { // else the gate passed already
		keep := e.keepFree()
		upto := tokens + n
		if !e.cfg.AdmitOnFirstChunk {
			upto = s.known
		}
		if e.blocksFor(upto)-hit+pinned+keep > e.available()-int(e.owe) {
			return 0, false
		}
	}
	e.waiting.pop()
	if touched {
		s.admitted = e.move + 1 // attach's note, its references made
		if hit > 0 {
			e.found(s, hit)
		}
	} else {
		e.attach(s, hit)
	}
	s.phase = phaseRunning
	e.running = append(e.running, s)
	if !s.started {
		e.start(s, tokens)
	}
	e.schedule(s, n)
	return n, true
}

// refused reports whether the gate refuses s, a request without shared
// content whose own blocks were cached when it was preempted, whatever
// its hits (unless AdmitOnFirstChunk): they are its own blocks, which
// nobody holds while it waits, so each pins a free block as a new one
// would take one, and the gate counts every block of its known sequence.
// Under KV pressure such a head is refused at every plan while it heads
// the queue; this spares the walk of its keys (hits) each time.
func (e *Engine) refused(s *seq) bool {
	keep := e.keepFree()
	if e.blocksFor(s.known)+keep <= e.available() {
		return false
	}
	if e.strict {
		e.checkGate(s, keep)
	}
	return true
}

// checkGate holds tryAdmit's refusal of s without its walk (strict
// mode) to the gate with its hits: it panics if they would let s in.
func (e *Engine) checkGate(s *seq, keep int) {
	hit, pinned := e.hits(s)
	if hit > 0 {
		e.gated++
	}
	if e.blocksFor(s.known)-hit+pinned+keep <= e.available() {
		panic(fmt.Sprintf("engine: invariant gate broken: request %d refused without its %d hits (%d of them held), which would let it in", s.req.Ref, hit, hit-pinned))
	}
}

// start notes s's first admission, with tokens of its prompt found
// cached.
func (e *Engine) start(s *seq, tokens int) {
	s.started = true
	s.cached = int32(tokens)
	e.plan.Started = append(e.plan.Started, s.req.Ref)
	e.plan.Cached = append(e.plan.Cached, tokens)
}

// makeRoom preempts running requests, victims chosen by the policy, until
// s's n tokens fit; s is the running request at index *i, the requests
// before it were scheduled by this plan. As vLLM's running loop
// (scheduler.py, schedule()), the victim is the request the policy would
// admit last among the whole running list ("max(self.running, key=lambda
// r: (r.priority, r.arrival_time))" under Priority; self.running.pop(), the
// tail, under FCFS, the last admitted, which is the last arrival but for
// landed Remote requests), s and the requests already scheduled in the
// step included: a
// scheduled victim is taken out of the step ("token_budget +=
// num_scheduled_tokens.pop(...)", "req_index -= 1"), and makeRoom returns
// the tokens it gives back to the budget. It reports false when s itself
// had to be preempted.
//
// The cohort's members are not among the candidates: under FCFS the tail
// is never one, and under another policy planCohort plans the cohort only
// when the step will preempt no one (walkNeed).
func (e *Engine) makeRoom(s *seq, n int, i *int) (back int, ok bool) {
	need := e.need(s, s.computed+n)
	for need > e.available() {
		j := e.victim()
		v, scheduled := e.running[j], j < *i
		if scheduled { // earlier in this step
			back += e.unschedule(v)
			*i--
		}
		e.preempt(v, scheduled)
		if v == s {
			return back, false
		}
	}
	return back, true
}

// victim is the index of the running request the policy would admit last;
// ties go to the later one in the running list.
func (e *Engine) victim() int {
	j := len(e.running) - 1
	if e.fcfs {
		return j // the tail, as vLLM's self.running.pop()
	}
	for k := j - 1; k >= 0; k-- {
		if e.cfg.Policy.Less(e.running[j].queued(), e.running[k].queued()) {
			j = k
		}
	}
	return j
}

// unschedule takes v, scheduled earlier in the step being planned, back
// out of it: its entry leaves e.sched and the plan's batch, and it returns
// v's tokens for the budget. v keeps its blocks for preempt to free. The
// residue counts, inline and minLeft may still count it: a plan that
// preempts is one step (runLength returns 1 before reading them), and
// resetResidues clears them at the next plan.
func (e *Engine) unschedule(v *seq) int {
	d, p, k := 0, 0, 0 // decodes and prefill chunks before v, its index
	for ; e.sched[k] != v; k++ {
		if e.sched[k].decoding {
			d++
		} else {
			p++
		}
	}
	e.sched = slices.Delete(e.sched, k, k+1)
	b := &e.plan.Batch
	if v.decoding {
		b.Decode = slices.Delete(b.Decode, d, d+1)
		if e.cfg.SpeculativeTokens > 0 {
			e.vsum -= int32(b.Verify[d])
			b.Verify = slices.Delete(b.Verify, d, d+1)
		}
	} else {
		b.Prefill = slices.Delete(b.Prefill, p, p+1)
	}
	n := v.sched
	v.sched, v.draft, v.decoding = 0, 0, false
	e.unscheduled++
	return n
}

// preempt frees s's blocks and returns it to the waiting queue; when resumed
// it recomputes its prompt and every token it had emitted, less what it
// finds of its own blocks still cached. With scheduled set, s had been
// scheduled in the step being planned (and taken out of it again): vLLM's
// allocate_slots had cached its full blocks through the tokens scheduled
// (num_tokens_to_cache = computed + new), so those are cached too.
func (e *Engine) preempt(s *seq, scheduled bool) {
	upto := s.computed
	if scheduled {
		upto = min(s.computed+s.sched, s.known)
	}
	e.satOut(s)
	e.removeRunning(s)
	e.lateCache(s, upto) // its answer's blocks, cached late, first (prefix.go)
	e.cacheOwn(s, upto)
	e.drop(s)
	e.outstanding -= s.left()
	s.computed, s.look = 0, 0
	e.outstanding += s.left()
	s.phase = phaseWaiting
	if s.preempts < math.MaxInt32 { // read only as none or some: saturates
		s.preempts++
	}
	e.waiting.pushFront(s) // under FCFS at the front, as vLLM prepends it
	e.plan.Preempted = append(e.plan.Preempted, s.req.Ref)
}

func (e *Engine) schedule(s *seq, n int) {
	need := max(0, e.need(s, s.computed+n))
	s.anon += need
	if need += int(e.owe); need > 0 { // with the blocks the plan owes (oweAdmit): one take
		e.pool.take(need)
		e.owe = 0
	}
	s.sched = n
	s.decoding = s.emitted > 0 && s.known-s.computed == 1
	s.draft = 0
	if s.decoding {
		s.draft = int32(n - 1) // speculative drafts; chunk asks for one token otherwise
	}
	if s.held < s.shared {
		if s.decoding {
			e.publishDecode(s, s.computed)
		} else {
			e.publish(s, s.computed+n)
		}
	}
	e.sched = append(e.sched, s)
	// The plan's batch shape, in the order of e.sched (unschedule takes
	// a victim's entry out of both).
	if s.decoding {
		e.plan.Batch.Decode = append(e.plan.Batch.Decode, s.computed)
		if e.cfg.SpeculativeTokens > 0 {
			e.plan.Batch.Verify = append(e.plan.Batch.Verify, 1+int(s.draft))
			e.vsum += int32(1 + s.draft)
		}
	} else {
		e.plan.Batch.Prefill = append(e.plan.Batch.Prefill, costmodel.Chunk{NewTokens: s.sched, Context: s.computed})
		if s.known-s.computed <= 2*n {
			e.lastOne = true
		}
	}
}

// Complete ends the step in flight at instant end (the plan's End) and
// returns what it produced: each scheduled request's computed tokens grow by
// what it was scheduled; one whose every existing token is now computed
// samples its next token, and leaves when that was its last.
func (e *Engine) Complete(end time.Duration) (*Outcome, error) {
	if !e.inFlight {
		return nil, ErrNoStepInFlight
	}
	if e.mixed {
		e.collectFirst() // before the blocks and tokens below move
	}
	if e.lazy && e.plan.Steps > 1 {
		e.out.BlockSteps = e.runBlockSteps(e.plan.Steps)
		e.allocThrough(e.plan.Steps)
	} else {
		if e.lazy { // a run whose one step left takes its blocks now
			e.allocThrough(1)
		}
		e.out.BlockSteps = e.pool.held() // the blocks held during the step
	}
	e.shape(e.plan.Steps)
	e.out.Decodes, e.out.Chunks = len(e.plan.Batch.Decode)+e.plan.Cohort, len(e.plan.Batch.Prefill)
	e.lazy, e.runAlloc = false, 0
	e.thruAt = noFinish
	agg := e.res.on // the run's requests' counts of blocks are written below
	e.res.on = false
	e.inFlight = false
	e.out.Emitted = e.out.Emitted[:0]
	e.out.Steps, e.out.End = e.plan.Steps, e.plan.End
	e.beginOutcome(&e.out, e.out.Steps, e.plan.Start, e.out.End)
	if e.mixed { // its admitted prompt, a member (mixed.go)
		e.listFirst(e.plan.Steps)
	}
	var fin []*seq
	done := false
	if e.out.Drafts == nil {
		fin = e.completeCohort(e.plan.Steps, true) // the members come first
	} else { // speculative decoding, past its first emit
		fin = e.completeNoCohort()
		e.out.Drafts = e.out.Drafts[:0]
		if e.sc != nil && e.sc.on {
			// Its cohort's members (verified notes the listed decodes with
			// drafts after them). Here, after the decode cohort's, which
			// speculative decoding has none of, and done beside it: with
			// done live across those calls RunAtlas paid 4 instructions a
			// request (6,042 then 6,038).
			done = e.completeSpec()
		}
	}
	for i := 0; i < len(e.sched); i++ {
		s := e.sched[i]
		if s.aborted {
			e.recycle(s)
			continue
		}
		if s.decoding {
			if s.draft > 0 { // with drafts (speculative): this one and those after it
				j, fin := e.verified(i)
				done = fin || done
				i = j - 1
				continue
			}
			done = e.decoded(s, agg) || done
			if e.cfg.SpeculativeTokens > 0 {
				e.noteDraft(Draft{})
			}
			continue
		}
		n := s.sched * e.plan.Steps // a chunk a step (a run of chunks: runLength)
		e.outstanding -= s.left()
		s.look = int32(max(int(s.look), n) - n)
		s.computed += n
		s.sched, s.draft = 0, 0
		if s.computed < s.known {
			e.outstanding += s.left()
			continue // a chunk of a longer prefill
		}
		s.emitted++
		s.known++
		e.outstanding += s.left()
		em := Emit{Ref: s.req.Ref, Tokens: 1, First: s.emitted == 1}
		if e.cfg.SpeculativeTokens > 0 {
			e.noteDraft(Draft{})
		}
		if s.emitted >= s.req.Output {
			em.Done = true
			done = true
		}
		e.emit(s, em)
	}
	for _, s := range fin {
		e.drop(s)
		e.release(s)
	}
	if done {
		e.dropFinished()
	}
	return &e.out, nil
}

// verified completes the decodes with drafts in the step's batch from
// index i on, up to the first that is not one (or was aborted), and
// returns its index and whether one of them emitted its last token. For
// each, its last token and the drafts were verified: the accepted
// drafts and the token sampled after them are emitted, and the KV of
// the accepted ones is kept. A decode's tokens left are Output − emitted
// (its computed tokens, known − 1 = Input + emitted − 1, cover its
// prompt): they fall by the n it emits. A function of its own, as
// planDrafts: a call a decode spilled Complete's variables (this is
// paid once a request and step; it saved 1,100 instructions a request
// in BenchmarkRegime/Speculation).
func (e *Engine) verified(i int) (int, bool) {
	// Room for an Emit and a Draft for each decode left in the batch,
	// written in place (one Draft per Emit: the lengths are equal), then
	// cut to those written: append's test of the capacity and store of
	// the length for each decode cost 277 instructions a request in
	// BenchmarkRegime/Speculation (cachegrind, 43,343 then 43,066);
	// sliced at once past their length, as planDrafts' (31,562 then
	// 31,549).
	sched, base := e.sched[i:], len(e.out.Emitted)
	e.out.Emitted = slices.Grow(e.out.Emitted, len(sched))
	e.out.Drafts = slices.Grow(e.out.Drafts, len(sched))
	ems := e.out.Emitted[base : base+len(sched)]
	drs := e.out.Drafts[base : base+len(sched)]
	// The driver's i.i.d. acceptor (accept.IID) drawn inline, its streams
	// read once a call, not through the Acceptor interface (its twin, as
	// sim's Stepwise hands it): 36,122 then 35,303 instructions a request in
	// BenchmarkRegime/Speculation. Asserted here, not kept in a field: a
	// larger Engine put TestFleetSetupAllocatesEachReplicaOnce over its
	// bound. Each in a loop of its own: the interface call in the one
	// loop, though not taken, had the i.i.d. loop reload nine variables
	// from the stack a decode (Go keeps no register across a call); with
	// the outstanding count taken once a call, 35,520 then 34,966
	// instructions a request in BenchmarkRegime/Speculation.
	var k, n int
	var done bool
	if iid, _ := e.acceptor.(*accept.IID); iid != nil {
		k, n, done = verifyIID(sched, ems, drs, iid)
	} else {
		k, n, done = e.verifyEach(sched, ems, drs)
	}
	e.outstanding -= n
	e.out.Emitted, e.out.Drafts = e.out.Emitted[:base+k], e.out.Drafts[:base+k]
	if i == 0 && e.sc != nil && e.sc.on { // after the speculative cohort's members, or in their place
		e.noteListed(sched[:k])
	}
	return i + k, done
}

// verifyIID is verified's loop under i.i.d. acceptance of one α, a draw
// from each request's stream (accept.Accepted): it verifies sched's
// decodes with drafts in order, writing each one's Emit and Draft at
// its index in ems and drs, up to the first that is not one (or was
// aborted), and returns their count, the tokens they emitted and
// whether one of them emitted its last. It
// calls nothing, so that its variables stay in registers; it draws
// through IID's Accepted, which reads the thresholds only for the few
// draws that need them (accept.Accepted's arguments were three more
// registers, spilled: 32,645 then 31,884 instructions a request in
// BenchmarkRegime/Speculation).
func verifyIID(sched []*seq, ems []Emit, drs []Draft, a *accept.IID) (k, tokens int, done bool) {
	streams := *a.Streams
	ems, drs = ems[:len(sched)], drs[:len(sched)]
	for ; k < len(sched); k++ {
		s := sched[k]
		// Or aborted: Abort sets its draft to 0, so that this loop does
		// not test aborted too (34,302 then 34,079 instructions a request
		// in BenchmarkRegime/Speculation).
		if s.draft == 0 {
			break
		}
		acc := a.Accepted(streams[s.req.Ref].Uint64()>>11, int(s.draft))
		drs[k] = Draft{Drafted: int(s.draft), Accepted: acc}
		// The Emit held, its tokens and Done read from it rather than
		// from ems or 1 + acc again: 31,884 then 31,790 instructions a
		// request in BenchmarkRegime/Speculation.
		em := s.verify(1 + acc)
		ems[k] = em
		tokens += em.Tokens
		if em.Done {
			done = true
		}
	}
	return k, tokens, done
}

// verifyEach is verifyIID with the driver's Acceptor asked through the
// interface: any acceptor (sim's of α by class, or of accepted
// lengths), and the twin of verifyIID's inline draw.
func (e *Engine) verifyEach(sched []*seq, ems []Emit, drs []Draft) (k, tokens int, done bool) {
	for ; k < len(sched); k++ {
		s := sched[k]
		if s.draft == 0 || s.aborted {
			break
		}
		acc := e.accepted(s)
		drs[k] = Draft{Drafted: int(s.draft), Accepted: acc}
		ems[k] = s.verify(1 + acc)
		tokens += 1 + acc
		done = done || ems[k].Done
	}
	return k, tokens, done
}

// verify advances s, whose step verified its drafts, by the n tokens it
// emits (the accepted drafts and the token sampled after them), and
// returns its Emit: never its first (it decoded after one). Not emit:
// its streak test never holds here, and lastMove, which emit sets, is
// left as it is: its readers are streaks (emit, satOut) and the cohort
// (joins), which speculative decoding turns off (decideFast). Its store
// and the outcome's number held in the loop cost 148 instructions a
// request in BenchmarkRegime/Speculation (34,450 then 34,302).
func (s *seq) verify(n int) Emit {
	s.look = int32(max(int(s.look), s.sched) - n)
	s.computed += n
	s.known += n
	s.emitted += n
	s.sched, s.draft = 0, 0
	return Emit{Ref: s.req.Ref, Tokens: n, Done: s.emitted >= s.req.Output}
}

// noteDraft lists a scheduled request's drafts in the outcome (out of
// line: only speculative decoding drafts).
//
//go:noinline
func (e *Engine) noteDraft(d Draft) {
	e.out.Drafts = append(e.out.Drafts, d)
}

// accepted asks the driver how many of s's drafts the step accepted.
func (sc *scheduling) accepted(s *seq) int {
	return min(max(sc.acceptor.Accept(s.req.Ref, int(s.draft)), 0), int(s.draft))
}

// dropFinished frees finished requests' blocks and compacts the running list.
func (e *Engine) dropFinished() {
	k, from := 0, 0
	if sc := e.sc; sc != nil && sc.nfin > 0 {
		one := sc.nfin == 1
		sc.nfin = 0
		if one {
			// The one member of the step that finished, as its notes
			// found it (noteMembers): the running list's first finM
			// requests were the step's members and no other member
			// finished, so those after it move up at once (a copy, not
			// a store a request), and only the requests after the
			// members are tested.
			f, m := sc.fin, sc.finM
			s := e.running[f]
			e.drop(s)
			e.release(s)
			copy(e.running[f:m-1], e.running[f+1:m])
			k, from = m-1, m
		}
	}
	for _, s := range e.running[from:] {
		if s.emitted >= s.req.Output {
			e.drop(s)
			e.release(s)
			continue
		}
		e.running[k] = s
		k++
	}
	for i := k; i < len(e.running); i++ { // the few dropped: clear called the runtime's memclrHasPointers
		e.running[i] = nil
	}
	e.running = e.running[:k]
}

// abandonPlan undoes the scheduling of a plan that cannot run (its price
// was nonsense): the blocks allocated for it are returned, and those it
// reserved (the driver starts no transfer for a plan refused), so the
// engine's invariants hold; preemptions made while planning stand.
func (e *Engine) abandonPlan() {
	e.materializeSpec() // its members trimmed as the walk's
	if len(e.plan.Reserved) > 0 {
		e.unreserve()
	}
	e.truncateCohort()
	for _, s := range e.sched {
		e.trim(s)
		s.admitted = 0 // running now, continuing at the next plan
		s.sched, s.draft = 0, 0
		s.decoding = false
	}
	e.sched = e.sched[:0]
}
