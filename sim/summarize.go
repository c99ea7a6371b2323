package sim

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/servesim/servesim/workload"
)

// Summarize computes a run's summary from its records alone, without
// simulating: the records the run handed its Observer (every request,
// measured or not), or the same read back from its raw events
// (sim/report's ReadJSONL and ReadCSV), under the configuration that ran.
// The records are replayed in time order through the code that summarises
// a run (the collector, the window's integrals, the warm-up detection), so
// every field equals the run's own, percentiles included, except those
// that come from the engine's steps, which records do not describe:
//   - Steps (the step mix) has no steps;
//   - each replica's Busy and KVOccupancy are 0 (NaN for an empty window,
//     as in a run), so Imbalance.Busy is NaN;
//   - Speculation has no steps (records carry no per-step drafts), so its
//     rates are NaN.
//
// The ITL distributions (per chunk and retokenized) and the window's
// output tokens (WindowTokens, OutputThroughput) need every token's
// instant: records of a run with Config.KeepTokens, whose events carry
// "itl". With cfg.KeepTokens false they are left out: the ITL
// distributions are empty (N 0), WindowTokens is 0 and OutputThroughput
// NaN. With it, a record that emitted two tokens or more without its
// instants is an error.
//
// Stopped is the instant the run stopped as the records show it: when
// unfinished requests ended, else at the Horizon or the last terminal
// event after it (with an open window, the run's last event: a terminal
// event, an arrival, or a client deadline that outlived its request). A
// run whose finite source ran dry before its Horizon stopped at its last
// event, before the Horizon: records cannot tell that apart, and Stopped
// then says the Horizon. Records may come in any order.
func Summarize(cfg Config, recs []Record) (Summary, error) {
	r, err := newRunner(cfg, noSource{}, nil)
	if err != nil {
		return Summary{}, err
	}
	if err := checkRecords(cfg, recs, len(r.reps)); err != nil {
		return Summary{}, err
	}
	p := recordReplay{r: r, recs: recs}
	p.schedule()
	p.run()
	p.stop()
	s := r.summary()
	if !cfg.KeepTokens {
		s.OutputThroughput = math.NaN()
	}
	return s, nil
}

// noSource stands for the workload of a run that is not simulated.
type noSource struct{}

func (noSource) Next() (workload.Request, error) { return workload.Request{}, io.EOF }

// checkRecords refuses records no run of cfg could have written.
func checkRecords(cfg Config, recs []Record, replicas int) error {
	stop := Never
	for i := range recs {
		rec := &recs[i]
		switch {
		case rec.Replica < Unrouted || rec.Replica >= replicas:
			return fmt.Errorf("sim: Summarize: record %d (ID %d) has Replica %d, not one of the configuration's %d replicas", i, rec.ID, rec.Replica, replicas)
		case rec.Status >= numStatus:
			return fmt.Errorf("sim: Summarize: record %d (ID %d) has no status (%d)", i, rec.ID, rec.Status)
		case rec.Finish < rec.Arrival || rec.Arrival < rec.Scheduled:
			return fmt.Errorf("sim: Summarize: record %d (ID %d) is not in time order: scheduled %v, arrival %v, finish %v", i, rec.ID, rec.Scheduled, rec.Arrival, rec.Finish)
		case cfg.KeepTokens && rec.Emitted > 1 && len(rec.Tokens) != rec.Emitted:
			return fmt.Errorf("sim: Summarize: record %d (ID %d) emitted %d tokens and keeps %d instants: Config.KeepTokens says the run kept them (events with their \"itl\")", i, rec.ID, rec.Emitted, len(rec.Tokens))
		}
		if rec.Status == StatusUnfinished {
			if stop != Never && rec.Finish != stop {
				return fmt.Errorf("sim: Summarize: record %d (ID %d) ends unfinished at %v, another at %v: a run stops once", i, rec.ID, rec.Finish, stop)
			}
			stop = rec.Finish
		}
	}
	return nil
}

// recordReplay drives a runner's accounting with records instead of an engine.
type recordReplay struct {
	r    *runner
	recs []Record
	evs  []replayEvent
}

// replayEvent is what happened to one record at an instant.
type replayEvent struct {
	at   time.Duration
	kind replayKind
	rec  int
}

type replayKind uint8

const (
	queued   replayKind = iota // waits client-side for a slot
	sent                       // leaves the client queue for a replica
	held                       // a replica holds it
	released                   // the replica let it go
	token                      // emitted a token (kept for a detected warm-up only)
	ended                      // its terminal event
	touched                    // nothing but the clock: an arrival that found nothing to do
)

// schedule lists every record's events, and accounts what does not
// depend on time: the inter-token gaps and, without a detected warm-up,
// the window's tokens.
func (p *recordReplay) schedule() {
	for i := range p.recs {
		rec := &p.recs[i]
		add := func(at time.Duration, k replayKind) { p.evs = append(p.evs, replayEvent{at, k, i}) }
		add(rec.Scheduled, touched)
		add(rec.Arrival, touched)
		switch {
		case rec.Sent && rec.Arrival > rec.Scheduled:
			add(rec.Scheduled, queued)
			add(rec.Arrival, sent)
		case !rec.Sent && rec.Status == StatusUnfinished:
			add(rec.Scheduled, queued) // never sent
		}
		if rec.Sent && rec.Status != StatusRejected && rec.Replica != Unrouted {
			add(rec.Arrival, held)
			if rec.Status != StatusUnfinished { // abandoned requests stay held
				add(rec.Finish, released)
			}
		}
		add(rec.Finish, ended)
		if p.r.cfg.KeepTokens {
			p.tokens(i)
		}
	}
	slices.SortStableFunc(p.evs, func(a, b replayEvent) int { return cmp.Compare(a.at, b.at) })
}

// tokens accounts record i's inter-token gaps, each chunk's (its tokens
// share one instant) against the previous one, as the runner does as
// they are emitted; and its tokens in the window.
func (p *recordReplay) tokens(i int) {
	r, rec := p.r, &p.recs[i]
	at := instants(rec)
	s := slot{rec: Record{Measured: rec.Measured, Replica: rec.Replica}, class: r.classes.of(rec.Class)}
	for j := 0; j < len(at); {
		n := 1
		for j+n < len(at) && at[j+n] == at[j] {
			n++
		}
		if j > 0 {
			r.gap(&s, at[j]-at[j-1], 1, n)
		}
		j += n
	}
	for _, t := range at {
		if r.cfg.DetectWarmup {
			p.evs = append(p.evs, replayEvent{t, token, i})
		} else {
			r.tokens += r.inWindow(t, 0, 1)
		}
	}
}

// instants are a record's token instants: those it kept, or its first
// token's when it emitted only that one.
func instants(rec *Record) []time.Duration {
	if len(rec.Tokens) == rec.Emitted {
		return rec.Tokens
	}
	if rec.Emitted == 1 && rec.FirstToken != Never {
		return []time.Duration{rec.FirstToken}
	}
	return nil
}

// run applies the events in time order, moving the runner's clock (and
// so its integrals over the window) before each instant's events.
func (p *recordReplay) run() {
	r := p.r
	for _, ev := range p.evs {
		r.advance(ev.at)
		rec := &p.recs[ev.rec]
		switch ev.kind {
		case queued:
			r.clientQ = append(r.clientQ, int32(ev.rec))
		case sent:
			r.clientHead++
		case held:
			r.hold(&r.reps[rec.Replica], +1)
			r.inSystem++
		case released:
			r.hold(&r.reps[rec.Replica], -1)
			r.inSystem--
		case token:
			r.tokens += r.inWindow(ev.at, 0, 1)
		case ended:
			r.lastEnd = max(r.lastEnd, ev.at)
			r.tally(rec, r.classes.of(rec.Class))
		}
	}
}

// stop brings the runner to the instant the run stopped, with what it
// knew then: whether the backlog passed its bound.
func (p *recordReplay) stop() {
	r := p.r
	at, unfinished := Never, 0
	for i := range p.recs {
		rec := &p.recs[i]
		if rec.Status == StatusUnfinished {
			unfinished++
			at = rec.Finish
		}
	}
	if unfinished == 0 {
		at = p.lastEvent()
	}
	// Only an overload stops a run holding more than MaxBacklog requests.
	r.overloaded = r.maxHeld > 0 && unfinished > r.maxHeld
	r.col.s.Stopped = max(at, 0)
	r.advance(max(at, r.now))
}

// lastEvent is the last instant of a run that left nothing unfinished.
func (p *recordReplay) lastEvent() time.Duration {
	r, last := p.r, time.Duration(0)
	for i := range p.recs {
		last = max(last, p.recs[i].Finish)
	}
	if r.cfg.Horizon > 0 {
		return max(last, r.cfg.Horizon)
	}
	for i := range p.recs {
		rec := &p.recs[i]
		last = max(last, rec.Scheduled)
		if r.cfg.Timeout > 0 && rec.Sent && rec.Status != StatusRejected && rec.Replica != Unrouted {
			last = max(last, rec.Arrival+r.cfg.Timeout)
		}
	}
	return last
}
