package workload

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/servesim/servesim/internal/ascend"
)

// Synthetic is an open-loop synthetic workload: arrivals from an Arrival
// process, lengths from a Joint distribution, optional shared prefixes.
// Its random streams are "arrivals", "input", "output" and "prefix".
type Synthetic struct {
	// Seed selects the random streams; the same Seed gives the same stream
	// of requests.
	Seed uint64
	// Count is the number of requests (> 0); 0 means unbounded, ended only
	// by Duration or by a non-repeating Schedule.
	Count int
	// Duration, when > 0, ends the workload at the first arrival at or
	// after it. Without a Count, the rate over Duration must offer fewer
	// requests than an int can count (math.MaxInt, about 9.2e18).
	Duration time.Duration
	// Arrival is the arrival process.
	Arrival Arrival
	// Lengths draws each request's input and output lengths.
	Lengths Joint
	// Prefix adds a system prompt and block hash ids; zero: none.
	Prefix PrefixReuse
	// Class labels every request ("" for none).
	Class string
}

// Validate reports every problem with the configuration.
func (s Synthetic) Validate() error {
	var errs []error
	if s.Count < 0 {
		errs = append(errs, fmt.Errorf("workload: Synthetic.Count must be >= 0, got %d", s.Count))
	}
	if s.Duration < 0 {
		errs = append(errs, fmt.Errorf("workload: Synthetic.Duration must be >= 0, got %v", s.Duration))
	}
	bounded := s.Count > 0 || s.Duration > 0 || len(s.Arrival.Schedule.Steps) > 0 && !s.Arrival.Schedule.Repeat
	if !bounded && s.Count == 0 { // a negative Count is reported above
		errs = append(errs, errors.New("workload: Synthetic needs a Count, a Duration or a non-repeating Schedule"))
	}
	if s.Lengths == nil {
		errs = append(errs, errors.New("workload: Synthetic.Lengths is nil"))
	} else {
		errs = append(errs, s.Lengths.Validate())
	}
	errs = append(errs, s.Arrival.Validate(s.Count), s.Prefix.Validate(), s.validateVolume())
	return errors.Join(errs...)
}

// validateVolume refuses a workload bounded by its Duration alone whose
// expected number of requests is more than an int can count, such as
// Arrival.Rate 1e30 over a year: its instants would all round to the
// same nanoseconds and its count would never be reached.
func (s Synthetic) validateVolume() error {
	a := s.Arrival
	if s.Count > 0 || a.Ramp.Strategy != NoRamp { // a Ramp needs a Count
		return nil
	}
	var n float64
	var what string
	switch {
	case len(a.Schedule.Steps) > 0:
		span := s.Duration
		if total := a.Schedule.span(); !a.Schedule.Repeat && (span == 0 || span > total) {
			span = total
		}
		n = a.Schedule.MeanRate() * span.Seconds()
		what = fmt.Sprintf("Arrival.Schedule (mean %g req/s) over %v", a.Schedule.MeanRate(), span)
	case a.Rate > 0 && !math.IsInf(a.Rate, 0) && s.Duration > 0: // Arrival.Validate reports a bad Rate
		n = a.Rate * s.Duration.Seconds()
		what = fmt.Sprintf("Arrival.Rate %g req/s over Duration %v", a.Rate, s.Duration)
	}
	if !(n >= math.MaxInt) {
		return nil
	}
	return fmt.Errorf("workload: %s is about %.3g requests, more than the %d a workload can count", what, n, math.MaxInt)
}

func (s Synthetic) String() string {
	return fmt.Sprintf("open-loop %v; lengths %v; prefixes: %v; count %d, duration %v, seed %d",
		s.Arrival, s.Lengths, s.Prefix, s.Count, s.Duration, s.Seed)
}

// Generator yields the requests of a Synthetic workload; it is a Source.
type Generator struct {
	cfg     Synthetic
	arr     *arrivals
	in, out *rand.Rand
	prefix  *rand.Rand
	ids     *blockIDs
	next    uint64
	done    bool
	// fixed: the lengths are constants (Fixed), read here instead of
	// through two interface calls a request; they draw nothing.
	fixed             bool
	fixedIn, fixedOut int
}

// NewSynthetic validates cfg and returns its generator.
func NewSynthetic(cfg Synthetic) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{
		cfg:    cfg,
		arr:    newArrivals(cfg.Arrival, cfg.Seed, cfg.Count),
		in:     NewStream(cfg.Seed, "input"),
		out:    NewStream(cfg.Seed, "output"),
		prefix: NewStream(cfg.Seed, "prefix"),
		ids:    newBlockIDs(cfg.Prefix),
	}
	g.fixedIn, g.fixedOut, g.fixed = fixedLengths(cfg.Lengths)
	return g, nil
}

// fixedLengths reports the lengths of a joint whose lengths are
// constants (Independent of two Constants, as Fixed makes), which draws
// nothing.
func fixedLengths(j Joint) (in, out int, ok bool) {
	ind, ok := j.(Independent)
	if !ok {
		return 0, 0, false
	}
	ci, okIn := ind.Input.(Constant)
	co, okOut := ind.Output.(Constant)
	return ci.Tokens, co.Tokens, okIn && okOut
}

// NewPoisson is the simplest workload: count requests (> 0) arriving as a
// Poisson process of rate requests/s, lengths from lengths (Fixed(in, out)
// for fixed ones, or any Joint).
func NewPoisson(seed uint64, rate float64, count int, lengths Joint) (*Generator, error) {
	return NewSynthetic(Synthetic{Seed: seed, Count: count, Arrival: Arrival{Rate: rate}, Lengths: lengths})
}

// Next yields the next request, or io.EOF after the last.
func (g *Generator) Next() (r Request, err error) {
	err = (*generatorInto)(g).NextInto(&r)
	return r, err
}

// generatorInto is a Generator as internal/nextinto's route: sim's
// runner has it write each request into its slot in place (see
// sim/intake.go's pull); Next, its twin, has it write into a fresh
// result. Returned by value, the request was zeroed and copied on its
// way. (A type of its own, not a method value of Generator's: the
// method value's wrapper cost RunAtlas 12 instructions a request,
// SERVESIM_BUDGET_FUNCS.)
type generatorInto Generator

// NextInto writes the next request into *r, every field of it (r may
// hold an earlier request), or returns io.EOF after the last, *r then
// unchanged.
func (g *generatorInto) NextInto(r *Request) error {
	if g.done {
		return io.EOF
	}
	at, ok := g.arr.next()
	if !ok || g.cfg.Duration > 0 && at >= g.cfg.Duration {
		g.done = true
		return io.EOF
	}
	in, out := g.fixedIn, g.fixedOut
	if !g.fixed {
		in, out = g.cfg.Lengths.Sample(g.in, g.out)
	}
	// Written in the result itself: newRequest's request, returned and
	// copied into the result, was two copies of 120 bytes a request
	// (RunAtlas 6,004 then 5,952 instructions a request, the budget
	// test's count); with prefix reuse, its fields written once here
	// too, Class among them, not stored after: Regime/
	// Fleet8PrefixApprox 10,179 then 10,087. prompt gives ids whenever
	// they are on (newRequest tests them). TestNextIntoIsNewRequest
	// holds it to newRequest. With prefix reuse, each field is written
	// in place, every one (r may hold any request), not a Request built
	// on the stack and copied over *r (zeroed, filled, then 14 moves and
	// a write barrier's test): Regime/Fleet8PrefixApprox 9,649 then 9,633
	// (the budget test). TestNextIntoIsNewRequest scribbles over every
	// field before each call.
	if b := g.ids; b.on {
		in += b.cfg.PrefixTokens
		r.fill(g.next, at, in, out, b.prompt(g.prefix, in, 0), b.bt, ascend.TwoRuns(), g.cfg.Class)
	} else { // every field written too: a literal copied over *r was zeroed, filled and copied on the stack (RunAtlas 4,807 then 4,792 instructions a request, the budget test)
		r.fill(g.next, at, in, out, nil, 0, ascend.Promise{}, g.cfg.Class)
	}
	g.next++
	return nil
}

// fill writes every field of r: a single-turn request of no
// conversation, priority 0, not failed.
func (r *Request) fill(id uint64, at time.Duration, in, out int, ids []uint64, bt int, two ascend.Promise, class string) {
	r.ID, r.Arrival, r.InputTokens, r.OutputTokens = id, at, in, out
	r.PrefixHashes, r.PrefixBlockTokens, r.PrefixTwoRuns = ids, bt, two
	r.Conversation, r.Turn, r.Class, r.Priority = 0, 0, class, 0
	r.Failed, r.HashesCoverOutput = false, false
}

// Recycle hands back ids, the PrefixHashes of a request NextInto
// wrote, which its caller (sim's runner, through internal/nextinto's
// route) reads no longer, nor lets anyone else: a later request of its
// group may be given the same array, its group's shared ids in place
// and its own written over the rest (blockIDs.recycle). Next's callers
// never hand any back: every request's ids are its own.
func (g *generatorInto) Recycle(ids []uint64) {
	g.ids.readySpare()
	g.ids.recycle(ids)
}

// draws are the streams one request draws from.
type draws struct{ in, out, prefix *rand.Rand }

// newRequest is a fresh (single-turn) request of the lengths drawn, in and
// out: its system prompt and block ids are drawn from prefix by ids, whose
// cfg is the prefix reuse (passed once, not also as a value: a struct
// copied a request).
func newRequest(id uint64, at time.Duration, in, out int, ids *blockIDs, prefix *rand.Rand) Request {
	if !ids.on {
		return Request{ID: id, Arrival: at, InputTokens: in, OutputTokens: out}
	}
	in += ids.cfg.PrefixTokens
	r := Request{ID: id, Arrival: at, InputTokens: in, OutputTokens: out}
	if r.PrefixHashes = ids.prompt(prefix, in, 0); r.PrefixHashes != nil {
		r.PrefixBlockTokens, r.PrefixTwoRuns = ids.bt, ascend.TwoRuns()
	}
	return r
}

// Loop is OpenLoop.
func (g *Generator) Loop() Loop { return OpenLoop }

// Config returns the workload's configuration (for a benchmark card).
func (g *Generator) Config() Synthetic { return g.cfg }
