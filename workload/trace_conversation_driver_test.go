package workload

import (
	"bytes"
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// served is one request as the fake replica saw it.
type served struct {
	req    Request
	pulled time.Duration // the driver's instant when the source yielded it
	end    time.Duration
	stream bool // yielded by Next as a request keeping its own instant
}

// fakeDriver stands in for the simulator: one server that serves
// requests first come, first served, each for a fixed time (a request
// recorded as failed ends at its arrival, not ok), and tells the source
// when each ends. Paced, it pulls as a Paced driver does (Next at the
// start and at each stream request's arrival, Released after every Next
// and every Finished); otherwise it drains Next to ErrWaiting at the start
// and after every Finished, as sim does for any Feedback source.
type fakeDriver struct {
	src     *ConversationTrace
	service time.Duration
	paced   bool

	now, free  time.Duration
	lastStream time.Duration
	events     fakeEvents
	log        []served
	waiting    bool // Next said ErrWaiting (paced: pull again after a Finished)
	eof        bool
	maxHeld    int
	maxChains  int
	maxTracked int
	err        error
}

type fakeEvent struct {
	at  time.Duration
	end bool // ends before arrivals at one instant
	i   int  // index in log
}

type fakeEvents []fakeEvent

func (e fakeEvents) Len() int { return len(e) }
func (e fakeEvents) Less(i, j int) bool {
	a, b := e[i], e[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.end != b.end {
		return a.end
	}
	return a.i < b.i
}
func (e fakeEvents) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *fakeEvents) Push(x any)   { *e = append(*e, x.(fakeEvent)) }
func (e *fakeEvents) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// drive runs src to its end under the fake replica; it returns the
// driver (its log in the order requests were yielded) and the source's
// error, if any (a request yielded before the driver's instant is one).
func drive(src *ConversationTrace, service time.Duration, paced bool) *fakeDriver {
	d := &fakeDriver{src: src, service: service, paced: paced}
	d.pull()
	for d.err == nil && d.events.Len() > 0 {
		ev := heap.Pop(&d.events).(fakeEvent)
		d.now = ev.at
		if ev.end {
			s := d.log[ev.i]
			d.src.Finished(s.req.ID, d.now, !s.req.Failed)
			d.afterFinished()
		} else {
			d.arrive(ev.i)
		}
		d.observe()
	}
	if d.err == nil && d.src.Held() > 0 {
		d.err = fmt.Errorf("stalled at %v with %d turns held and nothing in flight", d.now, d.src.Held())
	}
	return d
}

func (d *fakeDriver) arrive(i int) {
	s := &d.log[i]
	if s.req.Failed {
		s.end = d.now
	} else {
		s.end = max(d.now, d.free) + d.service
		d.free = s.end
	}
	heap.Push(&d.events, fakeEvent{at: s.end, end: true, i: i})
	if d.paced && s.stream {
		d.pull()
	}
}

func (d *fakeDriver) pull() {
	if !d.paced {
		for d.err == nil && !d.eof && !d.waiting {
			d.next()
		}
		return
	}
	d.released()
	if !d.eof {
		d.next()
	}
	d.released()
}

func (d *fakeDriver) afterFinished() {
	if d.paced {
		d.released()
	}
	if d.waiting {
		d.waiting = false
		d.pull()
	}
}

func (d *fakeDriver) next() {
	r, err := d.src.Next()
	switch {
	case errors.Is(err, ErrWaiting):
		d.waiting = true
	case err == io.EOF:
		d.eof = true
	case err != nil:
		d.err = err
	default:
		d.schedule(r, d.paced)
	}
}

func (d *fakeDriver) released() {
	for d.err == nil {
		r, ok := d.src.Released()
		if !ok {
			return
		}
		d.schedule(r, false)
	}
}

func (d *fakeDriver) schedule(r Request, stream bool) {
	if r.Arrival < d.now {
		d.err = fmt.Errorf("request %d yielded at %v arrives before, at %v", r.ID, d.now, r.Arrival)
		return
	}
	if stream && r.Arrival < d.lastStream {
		d.err = fmt.Errorf("Next went back: request %d at %v after %v", r.ID, r.Arrival, d.lastStream)
		return
	}
	if stream {
		d.lastStream = r.Arrival
	}
	d.log = append(d.log, served{req: r, pulled: d.now, end: -1, stream: stream})
	heap.Push(&d.events, fakeEvent{at: r.Arrival, i: len(d.log) - 1})
	d.observe()
}

func (d *fakeDriver) observe() {
	d.maxHeld = max(d.maxHeld, d.src.Held())
	d.maxChains = max(d.maxChains, len(d.src.chains))
	d.maxTracked = max(d.maxTracked, len(d.src.turns))
}

// requests returns the requests served, in the order they were yielded.
func (d *fakeDriver) requests() []Request {
	out := make([]Request, len(d.log))
	for i, s := range d.log {
		out[i] = s.req
	}
	return out
}

// byArrival sorts requests by arrival, ties by id: the order a simulator's
// event queue sees them in.
func byArrival(reqs []Request) []Request {
	out := slices.Clone(reqs)
	slices.SortStableFunc(out, func(a, b Request) int {
		return cmp.Or(cmp.Compare(a.Arrival, b.Arrival), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// genericCSV writes requests in the generic CSV form.
func genericCSV(t testing.TB, reqs []Request) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewTraceWriter(&buf, CSV)
	for _, r := range reqs {
		require.NoError(t, w.Write(r))
	}
	require.NoError(t, w.Flush())
	return buf.Bytes()
}

// keepConversations is the generic form replayed keeping conversations
// with the minimum think time think.
func keepConversations(think time.Duration) TraceConfig {
	cfg := Generic(CSV)
	cfg.Conversations = ConversationReplay{Keep: true, MinThink: think, Answers: -1}
	return cfg
}

// openKept reads data as a conversation-keeping replay.
func openKept(t testing.TB, data []byte, cfg TraceConfig) *ConversationTrace {
	t.Helper()
	rep, err := NewReplay(bytes.NewReader(data), "conv.csv", cfg)
	require.NoError(t, err)
	c, ok := rep.(*ConversationTrace)
	require.True(t, ok, "NewReplay with Keep returns a *ConversationTrace, got %T", rep)
	return c
}

// timestamps reads data as a timestamp replay (the recorded requests).
func timestamps(t testing.TB, data []byte, cfg TraceConfig) []Request {
	t.Helper()
	cfg.Conversations = ConversationReplay{}
	tr, err := NewTrace(bytes.NewReader(data), "conv.csv", cfg)
	require.NoError(t, err)
	return drain(t, tr)
}

// conversationTrace draws a trace of convs conversations of 1 to maxTurns
// turns, starting uniformly over span, turns apart by minGap plus an
// exponential gap of mean gap, interleaved with loose requests without
// conversation;
// conversations are numbered from 1, some rows are recorded as failed,
// and every field is set. It is sorted by arrival and numbered in order.
func conversationTrace(seed uint64, convs, maxTurns, loose int, span, minGap, gap time.Duration) []Request {
	rng := NewStream(seed, "conversation trace")
	var reqs []Request
	row := func(at time.Duration) Request {
		in := 100 + rng.IntN(2000)
		r := Request{Arrival: at, InputTokens: in, OutputTokens: 1 + rng.IntN(300), Class: "chat",
			Priority: rng.IntN(3), PrefixBlockTokens: 512, Failed: rng.IntN(20) == 0}
		for range (in + 511) / 512 {
			r.PrefixHashes = append(r.PrefixHashes, rng.Uint64N(1000))
		}
		return r
	}
	for c := range convs {
		at := time.Duration(rng.Int64N(int64(span)))
		for k := range 1 + rng.IntN(maxTurns) {
			if k > 0 {
				at += minGap + time.Duration(rng.ExpFloat64()*float64(gap))
			}
			r := row(at)
			r.Conversation, r.Turn = uint64(c+1), k
			reqs = append(reqs, r)
		}
	}
	for range loose {
		reqs = append(reqs, row(time.Duration(rng.Int64N(int64(span)))))
	}
	slices.SortStableFunc(reqs, func(a, b Request) int { return cmp.Compare(a.Arrival, b.Arrival) })
	for i := range reqs {
		reqs[i].ID = uint64(i)
	}
	return reqs
}
