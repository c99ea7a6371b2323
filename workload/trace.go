package workload

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Trace replays a trace file; it is an open-loop Source. It streams: one
// row is read per Next, so memory does not grow with the file (unless
// TraceConfig.Sort is set). Requests come out in file order.
type Trace struct {
	name   string
	cfg    TraceConfig
	rows   rowReader
	p      parser
	closer io.Closer
	factor float64 // time scale applied after the window

	started  bool          // a kept row was yielded (sortedness check)
	rebased  bool          // origin is set
	origin   time.Duration // raw arrival of the first kept row
	prev     time.Duration // previous kept row's rebased arrival
	lastLine int           // line of the last kept row read
	next     uint64        // next sequential id
	count    int           // requests yielded
	rowsRead int           // rows parsed, kept or not
	track    clockTrack    // recorded instants of the requests yielded
	sorted   []sortedRow
	kept     *reread      // a first pass: its reads, kept for the replay
	reread   *reread      // the first pass's reads, read again
	skimmed  *skimmedPass // the first pass skimmed: its input, for skimmedErr
	skimPast *jsonRows    // a first pass's rows, to skim past rereadBytes
	skimming *jsonRows    // a first pass's rows, skimmed (span's skimRun)
	tmpl     *jsonRows    // the rows, when a template reads them (nextByTemplate)
	done     bool
	err      error // the error that ended the replay, returned again
}

// NewTrace reads a trace from r; name is used in errors. A TargetRate
// transform needs r to be an io.ReadSeeker (it is read twice). A replay of
// zero requests is an error wrapping ErrEmptyTrace unless
// TraceConfig.AllowEmpty is set.
//
// A configuration that keeps conversations (TraceConfig.Conversations.Keep)
// is refused: its replay takes feedback, which a *Trace does not; read it
// with NewReplay or OpenReplay.
func NewTrace(r io.Reader, name string, cfg TraceConfig) (*Trace, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Conversations.Keep {
		return nil, errKeepNeedsReplay
	}
	return newTrace(r, name, cfg)
}

// errKeepNeedsReplay refuses a conversation-keeping configuration in NewTrace.
var errKeepNeedsReplay = errors.New("workload: TraceConfig.Conversations.Keep makes the replay closed-loop (a turn waits for its predecessor's answer), which a *Trace is not: read it with NewReplay or OpenReplay")

// newTrace is NewTrace for a valid configuration, Conversations ignored.
func newTrace(r io.Reader, name string, cfg TraceConfig) (*Trace, error) {
	factor, kept, skimmed, err := timeFactor(r, name, cfg)
	if err != nil {
		return nil, err
	}
	rows, err := newRowReader(r, name, cfg)
	if err != nil {
		return nil, err
	}
	t := &Trace{name: name, cfg: cfg, rows: rows, p: parser{name: name, cfg: cfg}, factor: factor, reread: kept, skimmed: skimmed}
	if j, ok := rows.(*jsonRows); ok && replayTemplate && plainColumns(cfg) {
		j.skim = &skimmer{p: &t.p, ids: true} // the replay reads its lines by their template (see skimmer)
		if templateNextOn {
			t.tmpl = j
		}
	}
	return t, nil
}

// OpenTrace opens and reads the trace file at path; Close closes it.
func OpenTrace(path string, cfg TraceConfig) (*Trace, error) {
	return openFile(path, cfg, NewTrace)
}

// Close closes the file opened by OpenTrace (a no-op for NewTrace).
func (t *Trace) Close() error {
	if t.closer == nil {
		return nil
	}
	return t.closer.Close()
}

// Loop is OpenLoop: a trace's arrivals are fixed.
func (t *Trace) Loop() Loop { return OpenLoop }

// Config returns the trace's configuration.
func (t *Trace) Config() TraceConfig { return t.cfg }

// Count is the number of requests yielded so far.
func (t *Trace) Count() int { return t.count }

// Clock reports the unit the arrival column is read in and the offered
// rate the requests yielded so far imply; after io.EOF, the whole
// replay's.
func (t *Trace) Clock() TraceClock {
	c := TraceClock{Field: "TraceConfig.Columns.ArrivalUnit", Requests: t.track.n, Span: t.track.span()}
	if t.p.clock != clockDate {
		c.Unit = t.cfg.Columns.ArrivalUnit
		if c.Unit == 0 {
			c.Unit = time.Second
		}
	}
	return c
}

// timeFactor is the Slowdown, or for a TargetRate the factor that puts the
// last of N requests at N/TargetRate, found by a first pass over r; kept
// is that pass's reads when they fit in rereadBytes (see reread), else
// nil. A pass that skims (see skimmer) and ends in an error is read
// again whole, for the error a whole pass finds: a malformed line the
// skim stepped over may be its cause. skimmed is the input of a pass
// that skimmed and ended without error (skimmedErr reads it again).
func timeFactor(r io.Reader, name string, cfg TraceConfig) (factor float64, kept *reread, skimmed *skimmedPass, err error) {
	tr := cfg.Transform
	if tr.TargetRate == 0 {
		if tr.Slowdown == 0 {
			return 1, nil, nil, nil
		}
		return tr.Slowdown, nil, nil, nil
	}
	rs, ok := r.(io.ReadSeeker)
	if !ok {
		return 0, nil, nil, errors.New("workload: Transform.TargetRate needs a seekable input (a file) to measure the trace first")
	}
	first := cfg
	first.Transform.TargetRate = 0
	first.Conversations = ConversationReplay{} // the pass measures recorded instants
	var n int
	var last time.Duration
	if skims(first) {
		var start int64 // where the whole pass starts again
		if start, err = rs.Seek(0, io.SeekCurrent); err != nil {
			return 0, nil, nil, fmt.Errorf("workload: measuring %s: %w", name, err)
		}
		if n, last, kept, err = firstPass(rs, name, first, true); err != nil && !errors.Is(err, errRewind) {
			if _, err := rs.Seek(start, io.SeekStart); err != nil {
				return 0, nil, nil, fmt.Errorf("workload: %w %s: %w", errRewind, name, err)
			}
			n, last, kept, err = firstPass(rs, name, first, false)
		} else if err == nil && kept == nil { // it skimmed past the bound
			skimmed = &skimmedPass{rs: rs, start: start, first: first}
		}
	} else {
		n, last, kept, err = firstPass(rs, name, first, false)
	}
	if err != nil {
		return 0, nil, nil, err
	}
	if n == 0 || last == 0 {
		return 1, kept, skimmed, nil
	}
	return float64(n) / tr.TargetRate / last.Seconds(), kept, skimmed, nil
}

// errRewind wraps the error of a seek to the start of the input.
var errRewind = errors.New("rewinding")

// firstPass reads rs as first says (a configuration without TargetRate),
// skimming its lines when skim is set, and returns the requests' count
// and last arrival, and its reads when it kept them; then it seeks rs to
// its start.
func firstPass(rs io.ReadSeeker, name string, first TraceConfig, skim bool) (n int, last time.Duration, kept *reread, err error) {
	t, err := NewTrace(rs, name, first)
	if err != nil {
		return 0, 0, nil, err
	}
	j, jsonl := t.rows.(*jsonRows)
	switch {
	case first.Sort || !keepFirstPass:
		t.p.measuring = true // a sorted replay holds its rows already
	default:
		t.kept = &reread{}
		if skim && jsonl {
			t.skimPast = j // past the bound, the pass skims (see skimmer)
		}
	}
	if n, last, err = span(t); err != nil {
		return 0, 0, nil, err
	}
	if _, err := rs.Seek(0, io.SeekStart); err != nil {
		return 0, 0, nil, fmt.Errorf("workload: %w %s: %w", errRewind, name, err)
	}
	if t.kept != nil {
		t.kept.clock = t.p.clock
	}
	return n, last, t.kept, nil
}

// span drains a source and returns its count and last arrival. On a
// first pass that skims (its rows a jsonRows with a skimmer), the lines
// skimRun counts are counted without a call through Next.
func span(src Source) (n int, last time.Duration, err error) {
	t, _ := src.(*Trace)
	for {
		if t != nil && t.skimming != nil && skimRunOn {
			n, last = t.skimRun(t.skimming, n, last)
		}
		if t != nil && t.kept != nil && keepRunOn {
			if t.tmpl != nil {
				n, last = t.keepRun(t.tmpl, n, last)
			} else if c, ok := t.rows.(*csvRows); ok {
				n, last = t.keepRunCSV(c, n, last)
			}
		}
		r, err := src.Next()
		if err == io.EOF {
			return n, last, nil
		}
		if err != nil {
			return 0, 0, err
		}
		n, last = n+1, r.Arrival
	}
}

// Next yields the next request in file order, io.EOF after the last.
func (t *Trace) Next() (req Request, err error) {
	err = (*traceInto)(t).NextInto(&req)
	return req, err
}

// traceInto is a Trace as internal/nextinto's route, as generatorInto
// is a Generator (synthetic.go): sim's runner has it write each request
// into its slot in place; Next, its twin, has it write into a fresh
// result. Through Next, the runner's pull held each request where Next
// returned it and scheduled it from there: Regime/MooncakeReplay and
// Regime/AzureReplay, Next then this: see docs/fastpaths.md.
type traceInto Trace

// NextInto writes the next request into *r, every field of it (r may
// hold an earlier request), or returns io.EOF after the last (or the
// replay's error), *r then zero (written before any read).
func (ti *traceInto) NextInto(r *Request) error {
	t := (*Trace)(ti)
	// nextKept writes every field; nextByTemplate and read fill a zero
	// Request. (nextByTemplate fills the result itself: with a Request
	// of its own, zeroed and copied to the result, Next took 50
	// instructions a request in Regime/MooncakeReplay, with the result 27.)
	if k := t.reread; k != nil && rereadNextOn && t.nextKept(k, r) {
		return nil
	}
	*r = Request{}
	if t.tmpl != nil && t.nextByTemplate(t.tmpl, r) {
		return nil
	}
	for !t.done {
		rel, ok, err := t.read(r) // read fills *r in place: no copy a layer
		if err != nil || !ok {
			t.done, t.err = true, err
			break
		}
		w := t.cfg.Transform
		if rel < w.WindowStart {
			*r = Request{}
			continue
		}
		if w.WindowEnd > 0 && rel >= w.WindowEnd {
			t.done = true
			break
		}
		if r.Arrival, err = t.scale(rel - w.WindowStart); err != nil {
			t.done, t.err = true, t.skimmedErr(err)
			break
		}
		if t.cfg.Columns.ID == "" {
			r.ID = t.next
		}
		t.next++
		t.count++
		t.track.add(rel)
		return nil
	}
	if t.err == nil && t.count == 0 && !t.cfg.AllowEmpty {
		t.err = t.empty()
	}
	if t.err == nil && !t.cfg.AnyRate {
		t.err = t.Clock().Check(t.name, "TraceConfig.AnyRate")
	}
	if t.err != nil {
		return t.err
	}
	return io.EOF
}

// empty is the error that ends a replay of zero requests, saying what
// dropped the rows.
func (t *Trace) empty() error {
	const allow = "(set TraceConfig.AllowEmpty to accept an empty replay)"
	if t.rowsRead == 0 {
		return fmt.Errorf("%w: %s has no rows %s", ErrEmptyTrace, t.name, allow)
	}
	var by []string
	if len(t.cfg.Filters) > 0 {
		by = append(by, "TraceConfig.Filters")
	}
	if w := t.cfg.Transform; w.WindowStart > 0 || w.WindowEnd > 0 {
		end := "end"
		if w.WindowEnd > 0 {
			end = w.WindowEnd.String()
		}
		by = append(by, fmt.Sprintf("the Transform window [%v, %s)", w.WindowStart, end))
	}
	return fmt.Errorf("%w: %s: %s dropped every row read (%d) %s", ErrEmptyTrace, t.name, strings.Join(by, " and "), t.rowsRead, allow)
}

// scale multiplies an instant by the time factor. A product past
// time.Duration's range (a TargetRate far below the trace's own rate, or a
// huge Slowdown) is an error naming the transform and the row's line.
func (t *Trace) scale(d time.Duration) (time.Duration, error) {
	if t.factor == 1 || d == 0 {
		return d, nil
	}
	x := math.Round(float64(d) * t.factor)
	if x < math.MaxInt64 { // 2^63 as a float64; false for +Inf and NaN
		return time.Duration(x), nil
	}
	by := fmt.Sprintf("Transform.Slowdown %g", t.cfg.Transform.Slowdown)
	if t.cfg.Transform.TargetRate > 0 {
		by = fmt.Sprintf("Transform.TargetRate %g req/s", t.cfg.Transform.TargetRate)
	}
	return 0, &ParseError{File: t.name, Line: t.lastLine, Field: t.cfg.Columns.Arrival, Value: d.String(),
		Reason: fmt.Sprintf("scaled ×%.3g for %s is past time.Duration's range (about 292 years)", t.factor, by), Err: ErrScaleOverflow}
}

// read sets *r, a zero Request, to the next kept request and returns its
// rebased arrival, from the file or (with Sort) from the sorted buffer;
// ok = false at the end (then *r is left zero). On an error, *r is not
// to be read.
func (t *Trace) read(r *Request) (time.Duration, bool, error) {
	if t.reread != nil {
		rel, ok := t.reread.next(t, r)
		return rel, ok, nil
	}
	rel, ok, err := t.readFile(r)
	if t.kept != nil && err == nil {
		t.keep(r, rel, ok)
	}
	return rel, ok, err
}

// keep keeps a first pass's read (t.kept), or past the bound drops the
// reads kept: the replay reads the file, and a pass that may skim
// skims the lines after.
func (t *Trace) keep(r *Request, rel time.Duration, ok bool) {
	if !t.kept.keep(t, r, rel, ok) {
		t.dropKept()
	}
}

// dropKept drops the reads kept (past rereadBytes): the replay reads the
// file, and a pass that may skim skims the lines after.
func (t *Trace) dropKept() {
	t.kept, t.p.measuring = nil, true
	if j := t.skimPast; j != nil {
		j.skim, t.skimming = &skimmer{p: &t.p}, j
	}
}

// readFile is read from the file (or the sorted buffer).
func (t *Trace) readFile(r *Request) (time.Duration, bool, error) {
	if t.cfg.Sort {
		return t.readSorted(r)
	}
	rel, line, ok, err := t.readRow(r)
	if err != nil || !ok {
		return 0, ok, err
	}
	if t.started && rel < t.prev {
		return 0, false, t.unsorted(line, rel)
	}
	t.started, t.prev, t.lastLine = true, rel, line
	return rel, true, nil
}

// unsorted is the error of the row at line, whose arrival rel goes back
// before the last kept row's.
func (t *Trace) unsorted(line int, rel time.Duration) error {
	return &ParseError{File: t.name, Line: line, Field: t.cfg.Columns.Arrival,
		Value: fmt.Sprint(rel), Reason: fmt.Sprintf("goes back before line %d's %v (set TraceConfig.Sort to sort)", t.lastLine, t.prev), Err: ErrUnsorted}
}

// readRow parses rows into *r, a zero Request, until one passes the
// filters; rel is its arrival rebased on the first kept row.
func (t *Trace) readRow(r *Request) (rel time.Duration, line int, ok bool, err error) {
	for {
		row, err := t.rows.next()
		if err == io.EOF {
			return 0, 0, false, nil
		}
		if err != nil {
			return 0, 0, false, err
		}
		t.rowsRead++
		raw, keep, err := t.p.parse(row, r)
		if err != nil {
			return 0, 0, false, err
		}
		if !keep {
			continue
		}
		if !t.rebased {
			t.origin, t.rebased = raw, true
			if t.cfg.KeepOrigin && t.p.clock == clockNumber {
				t.origin = 0
			}
		}
		rel, err := t.rebase(row, raw)
		return rel, row.line(), err == nil, err
	}
}

// rebase returns raw - origin, or an error if the difference of two
// date-times more than 292 years apart overflows a time.Duration.
func (t *Trace) rebase(r row, raw time.Duration) (time.Duration, error) {
	rel := raw - t.origin
	if (rel < 0) == (raw >= t.origin) {
		col := t.cfg.Columns.Arrival
		v, _ := r.get(col)
		return 0, t.p.fail(r, col, v, "is out of range: more than 292 years (time.Duration's range) from the first kept row's")
	}
	return rel, nil
}

// readSorted loads every kept row on first use, sorts them stably by
// arrival, rebases on the earliest, then yields from memory.
func (t *Trace) readSorted(r *Request) (time.Duration, bool, error) {
	if t.sorted == nil {
		if err := t.load(); err != nil {
			return 0, false, err
		}
	}
	if len(t.sorted) == 0 {
		return 0, false, nil
	}
	*r = t.sorted[0].req
	t.lastLine = t.sorted[0].line
	t.sorted[0] = sortedRow{}
	t.sorted = t.sorted[1:]
	return r.Arrival, true, nil
}

// sortedRow is a kept row held for a sorted replay, with its line for
// errors found after sorting.
type sortedRow struct {
	req  Request
	line int
}

func (t *Trace) load() error {
	t.sorted = []sortedRow{}
	for {
		var r Request
		rel, line, ok, err := t.readRow(&r)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		r.Arrival = rel
		t.sorted = append(t.sorted, sortedRow{r, line})
	}
	slices.SortStableFunc(t.sorted, func(a, b sortedRow) int { return cmp.Compare(a.req.Arrival, b.req.Arrival) })
	if len(t.sorted) > 0 {
		base := t.sorted[0].req.Arrival
		for i := range t.sorted {
			t.sorted[i].req.Arrival -= base
		}
	}
	return nil
}
