package enginetest

import (
	"errors"
	"fmt"
	"time"

	"github.com/servesim/servesim/engine"
)

// The laws a Checker holds an engine to, as Violation.Law names them.
const (
	// LawCheckClean: Engine.Check finds every invariant holding after
	// every call.
	LawCheckClean = "check-clean"
	// LawOneEnd: every request the engine accepted ends exactly once, by
	// the Emit of its last token (Done, after exactly Output tokens, or
	// MaxModelLen − Input if fewer: Config.ServedOutput) or
	// by an accepted Abort, and nothing is emitted for it after; an
	// Abort is accepted exactly when the engine holds the request; the
	// engine holds (Waiting + Running) the requests accepted and not
	// ended, and is Idle when they are none.
	LawOneEnd = "one-end"
	// LawBlocks: KV blocks used + free = total: the blocks a step held
	// (Outcome.BlockSteps, for one step) and those free as it ended are
	// Config.KVBlocks; and evictable <= free <= KVBlocks, evictable <=
	// cached <= KVBlocks at every call.
	LawBlocks = "blocks-conserved"
	// LawScheduled: Engine.Scheduled names each request of the step in
	// flight once, their tokens sum to the plan's (Batch.Tokens() +
	// Cohort), and a request is ScheduledNew exactly when it is in
	// Plan.Started.
	LawScheduled = "scheduled-sums"
	// LawEmits: an Outcome emits only for requests its step scheduled
	// (and not aborted since), 1 to their scheduled tokens each, First on
	// a request's first token only.
	LawEmits = "emits-scheduled"
	// LawOneStep: under the basic contract every move is one step
	// (Plan.Steps 1, End = Start + StepTime, the Outcome ending there)
	// and every emit is listed (Outcome.Streak 0, Left empty).
	LawOneStep = "one-step"
	// LawRemote: a Remote request (engine.Request.Remote) is reserved
	// once (Plan.Reserved: Tokens + Cached = Input, Tokens >= 1), before
	// it lands; Land is accepted exactly for a request reserved and not
	// landed; it is scheduled only after its Land; it ends after
	// ServedOutput − 1 emits (its first token came from the prefill
	// replica), none of them First; and Schedule answers nil with
	// requests held only while one of them waits for its KV.
	LawRemote = "remote-kv"
	// LawTier: a load from the engine's tier (engine.Engine.SetTier,
	// Reservation.Tier) is of a request held that is not loading already
	// (nor Remote before its Land: once landed, a preempted Remote request
	// recomputes, or loads, as any other), of at least one token, leaving
	// at least one of its
	// known tokens to compute (Tokens + Cached < Input + emitted); Land
	// is accepted for it once; it is scheduled only after its Land.
	LawTier = "tier-load"
)

// Violation is a law the engine broke, and the call after which the
// Checker saw it.
type Violation struct {
	Law    string // one of the Law constants
	Call   string // e.g. "Complete(27ms)"
	Detail string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("enginetest: law %s broken after %s: %s", v.Law, v.Call, v.Detail)
}

// ErrViolation is what every Violation matches with errors.Is.
var ErrViolation = errors.New("enginetest: the engine broke a law of the basic contract")

// Is makes errors.Is(v, ErrViolation) true.
func (v *Violation) Is(target error) bool { return target == ErrViolation }

// Checker drives an engine by the basic contract (Add, Schedule,
// Complete, Abort, Land) and holds it to that contract's laws after every
// call: a second driver (a disaggregated pool, another simulator) wraps
// its engine in one under its tests, calls the Checker's methods where it
// called the engine's, and reads Err. Each method returns what the
// engine returned; the first law broken is kept (Err), and the Checker
// goes on checking nothing after it.
//
// It checks the basic contract only: an engine the driver also moves
// through engine.Runner (runs of several steps, omitted streaks) is
// outside it (LawOneStep).
type Checker struct {
	e  *engine.Engine
	kv int

	reqs  map[int32]*request
	held  int // accepted and not ended
	plan  *engine.Plan
	free  int // free blocks when Complete was called
	sched map[int32]engine.Scheduled
	buf   []engine.Scheduled
	err   error
	call  string
}

// request is what the Checker knows of one accepted request.
type request struct {
	input   int
	output  int // the tokens it emits here
	emitted int
	ended   bool
	// A Remote request's stage: reserved by a plan, landed since.
	remote, reserved, landed bool
	// loading: a load from the tier reserved and not landed.
	loading bool
}

// NewChecker returns a Checker driving e, which must not have been
// driven yet (it knows no request e holds before).
func NewChecker(e *engine.Engine) *Checker {
	return &Checker{e: e, kv: e.Config().KVBlocks, reqs: map[int32]*request{}, sched: map[int32]engine.Scheduled{}}
}

// Engine is the engine the Checker drives, for its read-only queries.
func (c *Checker) Engine() *engine.Engine { return c.e }

// Err is the first law the engine broke (a *Violation, matching
// ErrViolation), or nil.
func (c *Checker) Err() error { return c.err }

// fail notes a broken law, the first only.
func (c *Checker) fail(law, format string, args ...any) {
	if c.err == nil {
		c.err = &Violation{Law: law, Call: c.call, Detail: fmt.Sprintf(format, args...)}
	}
}

// Add is Engine.Add, noting the request when the engine accepts it.
func (c *Checker) Add(now time.Duration, r engine.Request) error {
	c.call = fmt.Sprintf("Add(%v, ref %d)", now, r.Ref)
	err := c.e.Add(now, r)
	if err == nil {
		if q, ok := c.reqs[r.Ref]; ok && !q.ended {
			c.fail(LawOneEnd, "request %d accepted twice", r.Ref)
		}
		// Its last token is the one that reaches MaxModelLen if it comes
		// first (length-capped).
		q := &request{input: r.Input, output: c.e.Config().ServedOutput(r.Input, r.Output), remote: r.Remote}
		if r.Remote {
			q.output-- // its first token came from the prefill replica
		}
		c.reqs[r.Ref] = q
		c.held++
	}
	c.after()
	return err
}

// Abort is Engine.Abort.
func (c *Checker) Abort(now time.Duration, ref int32) error {
	c.call = fmt.Sprintf("Abort(%v, ref %d)", now, ref)
	err := c.e.Abort(now, ref)
	q, live := c.reqs[ref]
	live = live && !q.ended
	switch {
	case err == nil && !live:
		c.fail(LawOneEnd, "Abort of request %d accepted, which the engine no longer holds", ref)
	case err != nil && live && !errors.Is(err, engine.ErrUnsettledRun):
		c.fail(LawOneEnd, "Abort of request %d, which the engine holds, refused: %v", ref, err)
	case err == nil:
		q.ended = true
		c.held--
		delete(c.sched, ref) // its work in flight is discarded
	}
	c.after()
	return err
}

// Land is Engine.Land: accepted exactly for a Remote request reserved
// and not landed yet.
func (c *Checker) Land(now time.Duration, ref int32) error {
	c.call = fmt.Sprintf("Land(%v, ref %d)", now, ref)
	err := c.e.Land(now, ref)
	q, ok := c.reqs[ref]
	if ok && !q.ended && q.loading {
		if err != nil {
			c.fail(LawTier, "Land of request %d, loading from the tier, refused: %v", ref, err)
		}
		q.loading = false
		c.after()
		return err
	}
	waits := ok && !q.ended && q.reserved && !q.landed
	switch {
	case err == nil && !waits:
		c.fail(LawRemote, "Land of request %d accepted, which is not reserved and waiting for its KV", ref)
	case err != nil && waits:
		c.fail(LawRemote, "Land of request %d, reserved and waiting for its KV, refused: %v", ref, err)
	case err == nil:
		q.landed = true
	}
	c.after()
	return err
}

// waitsForKV reports whether some request held was reserved and has not
// landed.
func (c *Checker) waitsForKV() bool {
	for _, q := range c.reqs {
		if !q.ended && (q.reserved && !q.landed || q.loading) {
			return true
		}
	}
	return false
}

// reservations holds Plan.Reserved to the requests it names.
func (c *Checker) reservations(p *engine.Plan) {
	for _, r := range p.Reserved {
		q, ok := c.reqs[r.Ref]
		if r.Tier {
			known := 0 // its tokens that exist
			if ok {
				known = q.input + q.emitted
				if q.remote {
					known++ // its first token, from the prefill replica
				}
			}
			switch {
			case !ok || q.ended || q.remote && !q.landed || q.loading:
				c.fail(LawTier, "request %d loads from the tier, which is no request held and waiting (a Remote one before its KV landed, or loading already)", r.Ref)
			case r.Tokens < 1 || r.Cached < 0 || r.Tokens+r.Cached >= known:
				c.fail(LawTier, "request %d of %d known tokens loads %d from the tier after %d cached", r.Ref, known, r.Tokens, r.Cached)
			default:
				q.loading = true
			}
			continue
		}
		switch {
		case !ok || q.ended || !q.remote:
			c.fail(LawRemote, "request %d reserved, which is no Remote request held", r.Ref)
		case q.reserved:
			c.fail(LawRemote, "request %d reserved twice", r.Ref)
		case r.Tokens < 1 || r.Cached < 0 || r.Tokens+r.Cached != q.input:
			c.fail(LawRemote, "request %d of %d prompt tokens reserved with %d to transfer and %d cached", r.Ref, q.input, r.Tokens, r.Cached)
		default:
			q.reserved = true
		}
	}
}

// Schedule is Engine.Schedule; it reads Engine.Scheduled of the plan.
func (c *Checker) Schedule(now time.Duration) (*engine.Plan, error) {
	c.call = fmt.Sprintf("Schedule(%v)", now)
	p, err := c.e.Schedule(now)
	if err != nil || p == nil {
		if err == nil && !c.e.Idle() && !c.waitsForKV() {
			c.fail(LawOneEnd, "no plan from an engine holding %d requests", c.held)
		}
		c.after()
		return p, err
	}
	c.plan = p
	if p.Steps != 1 || p.End != p.Start+p.StepTime {
		c.fail(LawOneStep, "a plan of %d steps from %v to %v, each %v", p.Steps, p.Start, p.End, p.StepTime)
	}
	c.reservations(p)
	c.scheduled(p)
	c.after()
	return p, err
}

// scheduled holds Scheduled to the plan, and notes who it names.
func (c *Checker) scheduled(p *engine.Plan) {
	clear(c.sched)
	var ok bool
	c.buf, ok = c.e.Scheduled(c.buf[:0])
	if !ok {
		c.fail(LawScheduled, "Scheduled does not answer with a step in flight")
		return
	}
	started := map[int32]bool{}
	for _, ref := range p.Started {
		started[ref] = true
	}
	sum := 0
	for _, s := range c.buf {
		if _, twice := c.sched[s.Ref]; twice {
			c.fail(LawScheduled, "request %d named twice", s.Ref)
		}
		if q, ok := c.reqs[s.Ref]; !ok || q.ended {
			c.fail(LawScheduled, "request %d scheduled, which the engine does not hold", s.Ref)
		}
		if q, ok := c.reqs[s.Ref]; ok && q.remote && !q.landed {
			c.fail(LawRemote, "request %d scheduled before its KV landed", s.Ref)
		}
		if q, ok := c.reqs[s.Ref]; ok && q.loading {
			c.fail(LawTier, "request %d scheduled before its load from the tier landed", s.Ref)
		}
		if (s.Kind == engine.ScheduledNew) != started[s.Ref] {
			c.fail(LawScheduled, "request %d is %v, and in Plan.Started: %v", s.Ref, s.Kind, started[s.Ref])
		}
		c.sched[s.Ref] = s
		sum += s.Tokens
	}
	if want := p.Batch.Tokens() + p.Cohort; sum != want || len(c.buf) != p.Batch.Seqs()+p.Cohort {
		c.fail(LawScheduled, "%d requests of %d tokens named, for a plan of %d sequences and %d tokens", len(c.buf), sum, p.Batch.Seqs()+p.Cohort, want)
	}
}

// Complete is Engine.Complete.
func (c *Checker) Complete(end time.Duration) (*engine.Outcome, error) {
	c.call = fmt.Sprintf("Complete(%v)", end)
	c.free = c.e.FreeBlocks()
	o, err := c.e.Complete(end)
	if err == nil {
		c.outcome(o)
		c.plan = nil
	}
	c.after()
	return o, err
}

// outcome holds an outcome to the plan it ends.
func (c *Checker) outcome(o *engine.Outcome) {
	if p := c.plan; p != nil {
		if o.Steps != 1 || o.End != p.End {
			c.fail(LawOneStep, "an outcome of %d steps ending at %v, for a step ending at %v", o.Steps, o.End, p.End)
		}
		if o.BlockSteps+c.free != c.kv {
			c.fail(LawBlocks, "the step held %d blocks and %d were free when it ended, of %d", o.BlockSteps, c.free, c.kv)
		}
	}
	if o.Streak != 0 || len(o.Left) != 0 {
		c.fail(LawOneStep, "an outcome counting %d streaks and %d left instead of listing them", o.Streak, len(o.Left))
	}
	for _, em := range o.Emitted {
		s, ok := c.sched[em.Ref]
		if !ok {
			c.fail(LawEmits, "request %d emitted, which the step did not schedule (or was aborted)", em.Ref)
			continue
		}
		delete(c.sched, em.Ref) // once a step
		q := c.reqs[em.Ref]
		if em.Tokens < 1 || em.Tokens > max(1, s.Tokens) {
			c.fail(LawEmits, "request %d emitted %d tokens, scheduled %d", em.Ref, em.Tokens, s.Tokens)
		}
		if em.First != (q.emitted == 0 && !q.remote) {
			law := LawEmits
			if q.remote {
				law = LawRemote
			}
			c.fail(law, "request %d emitted with First %v after %d tokens", em.Ref, em.First, q.emitted)
		}
		q.emitted += em.Tokens
		if done := q.emitted >= q.output; em.Done != done || q.emitted > q.output {
			c.fail(LawOneEnd, "request %d emitted %d of its %d tokens, Done %v", em.Ref, q.emitted, q.output, em.Done)
		}
		if em.Done {
			q.ended = true
			c.held--
		}
	}
	clear(c.sched)
}

// after holds the engine to the laws every call keeps.
func (c *Checker) after() {
	e := c.e
	if err := e.Check(); err != nil {
		c.fail(LawCheckClean, "%v", err)
	}
	if n := e.Waiting() + e.Running(); n != c.held || e.Idle() != (c.held == 0) {
		c.fail(LawOneEnd, "the engine holds %d requests (Idle %v), of %d accepted and not ended", n, e.Idle(), c.held)
	}
	free, cached, evict := e.FreeBlocks(), e.CachedBlocks(), e.EvictableBlocks()
	if free < 0 || free > c.kv || evict > free || evict > cached || cached > c.kv {
		c.fail(LawBlocks, "%d free, %d cached, %d evictable, of %d", free, cached, evict, c.kv)
	}
}

// Finish reports the first law broken, and, when the engine is idle,
// whether every request accepted has ended.
func (c *Checker) Finish() error {
	c.call = "Finish"
	if c.e.Idle() {
		for ref, q := range c.reqs {
			if !q.ended {
				c.fail(LawOneEnd, "request %d never ended, and the engine is idle", ref)
				break
			}
		}
	}
	return c.err
}
