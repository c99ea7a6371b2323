package blis

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/servesim/servesim/workload"
)

// The TraceV2 data columns servesim reads (BLIS's traceV2Columns name 27,
// plus optional ones; the others are BLIS's results and observations).
const (
	blisID          = "request_id"
	blisArrival     = "arrival_time_us"
	blisSend        = "send_time_us"
	blisInput       = "input_tokens"
	blisOutput      = "output_tokens"
	blisServerInput = "server_input_tokens"
	blisGroup       = "prefix_group"
	blisPrefixLen   = "prefix_length"
	blisSession     = "session_id"
	blisRound       = "round_index"
	blisClass       = "slo_class"
	blisPriority    = "vllm_priority"
)

// servesim's own trailing columns, which BLIS ignores (it reads its 27
// columns by position and its optional trailing ones by name): what a
// request holds that TraceV2 cannot, so that a file servesim wrote reads
// back into identical requests.
const (
	extHashes = "servesim_prefix_hashes"       // hash ids, space-separated
	extBlock  = "servesim_prefix_block_tokens" // tokens per hash id
	extFailed = "servesim_failed"              // true for a recorded failure
)

// Options says how to read a BLIS TraceV2 trace. The zero value
// streams a trace in arrival order and checks its implied rate.
type Options struct {
	// Sort reads every row into memory (about 120 bytes a request) and
	// replays them by arrival, ties in file order, as BLIS's event queue
	// orders them: blis observe writes rows as requests complete. Without
	// it an arrival earlier than the previous row's is an error wrapping
	// workload.ErrUnsorted.
	Sort bool
	// AnyRate accepts an implied offered rate outside [workload.MinTraceRate,
	// workload.MaxTraceRate] (see workload.TraceConfig.AnyRate).
	AnyRate bool
}

// TraceV2 replays a BLIS TraceV2 trace as an open-loop workload.Source, each
// request at its recorded instant, as `blis replay` does by default
// (--session-mode fixed; BLIS's sim/workload/replay.go
// LoadTraceV2Requests):
//   - Arrival is send_time_us when > 0, else arrival_time_us, in µs from
//     the start of the run (not rebased: BLIS replays the same instants);
//   - InputTokens is the group's prefix length + input_tokens for a row
//     of a prefix_group (input_tokens then holds the suffix only; a
//     group's length is that of its first row with prefix_length > 0),
//     else server_input_tokens when > 0, else input_tokens;
//   - a prefix_group becomes one prefix hash id (FNV-64a of its name)
//     covering its prefix length, so requests of a group share exactly
//     the prefix's full KV blocks, as BLIS's shared prefix tokens do;
//   - ID is request_id, Conversation session_id (a number, or the text
//     hashed with FNV-64a as the generic reader does), Turn round_index,
//     Class slo_class, Priority vllm_priority;
//   - a row with 0 input or output tokens is kept and marked Failed, as
//     every trace reader does; status is not read (BLIS replays failed
//     requests as any other).
//
// The servesim_* columns of a file servesim wrote (WriteTrace) give
// the exact prefix hash ids and failures back. Errors are *workload.ParseErrors
// naming the file, line and column. It streams, one row per Next, unless
// Options.Sort is set.
type TraceV2 struct {
	header  Header
	name    string
	opt     Options
	rows    *workload.CSVRows
	closers []io.Closer
	groups  map[string]prefixGroup

	track    clockTrack
	started  bool
	prev     time.Duration
	lastLine int
	sorted   []sortedRow
	count    int
	rowsRead int
	done     bool
	err      error
}

// sortedRow is a request read for Options.Sort, with its line.
type sortedRow struct {
	req  workload.Request
	line int
}

// clockTrack follows the first and last recorded instants of the
// requests a trace yields (for Clock).
type clockTrack struct {
	n           int
	first, last time.Duration
}

func (k *clockTrack) add(at time.Duration) {
	if k.n == 0 {
		k.first = at
	}
	k.last = max(k.last, at)
	k.n++
}

func (k clockTrack) span() time.Duration {
	if k.n == 0 {
		return 0
	}
	return k.last - k.first
}

// prefixGroup is what is known of a prefix group: its prefix length once a
// row gives it, and the first row read before that.
type prefixGroup struct {
	tokens, before int
}

// NewTrace reads a TraceV2 trace from its header and data; the names
// are used in errors.
func NewTrace(header io.Reader, headerName string, data io.Reader, dataName string, opt Options) (*TraceV2, error) {
	h, err := ReadHeader(header, headerName)
	if err != nil {
		return nil, err
	}
	read := []string{blisID, blisArrival, blisSend, blisInput, blisOutput, blisServerInput, blisGroup, blisPrefixLen,
		blisSession, blisRound, blisClass, blisPriority, extHashes, extBlock, extFailed}
	rows, err := workload.NewCSVRows(data, dataName, []string{blisID, blisArrival, blisInput, blisOutput}, read)
	if err != nil {
		return nil, err
	}
	return &TraceV2{header: h, name: dataName, opt: opt, rows: rows, groups: map[string]prefixGroup{}}, nil
}

// OpenTrace opens a TraceV2 trace's header (YAML) and data (CSV)
// files; BLIS's --trace-output writes them as <prefix>.yaml and
// <prefix>.csv. Close closes both.
func OpenTrace(headerPath, dataPath string, opt Options) (*TraceV2, error) {
	hf, err := os.Open(headerPath)
	if err != nil {
		return nil, fmt.Errorf("blis: %w", err)
	}
	defer hf.Close()
	df, err := os.Open(dataPath)
	if err != nil {
		return nil, fmt.Errorf("blis: %w", err)
	}
	t, err := NewTrace(hf, headerPath, df, dataPath, opt)
	if err != nil {
		df.Close()
		return nil, err
	}
	t.closers = append(t.closers, df)
	return t, nil
}

// Close closes the files OpenTrace opened (a no-op for NewTrace).
func (t *TraceV2) Close() error {
	var err error
	for _, c := range t.closers {
		err = cmp.Or(err, c.Close())
	}
	t.closers = nil
	return err
}

// Header returns the trace's header.
func (t *TraceV2) Header() Header { return t.header }

// Loop is workload.OpenLoop: a trace's arrivals are fixed.
func (t *TraceV2) Loop() workload.Loop { return workload.OpenLoop }

// Count is the number of requests yielded so far.
func (t *TraceV2) Count() int { return t.count }

// Clock reports the unit (µs, fixed by the format) and the offered rate
// the requests yielded so far imply; after io.EOF, the whole trace's.
func (t *TraceV2) Clock() workload.TraceClock {
	return workload.TraceClock{Unit: time.Microsecond, Requests: t.track.n, Span: t.track.span()}
}

// String describes the replay for a card.
func (t *TraceV2) String() string {
	return fmt.Sprintf("%s (BLIS TraceV2 version %d, mode %q), timestamp replay at the recorded µs instants", t.name, t.header.Version, t.header.Mode)
}

// Next yields the next request, io.EOF after the last.
func (t *TraceV2) Next() (workload.Request, error) {
	if !t.done {
		r, ok, err := t.read()
		if ok {
			t.count++
			t.track.add(r.Arrival)
			return r, nil
		}
		t.done, t.err = true, err
		if t.err == nil && t.count == 0 {
			t.err = fmt.Errorf("%w: %s has no rows", workload.ErrEmptyTrace, t.name)
		}
		if t.err == nil && !t.opt.AnyRate {
			t.err = t.Clock().Check(t.name, "blis.Options.AnyRate")
		}
	}
	if t.err != nil {
		return workload.Request{}, t.err
	}
	return workload.Request{}, io.EOF
}

// read returns the next request in replay order; ok false at the end.
func (t *TraceV2) read() (workload.Request, bool, error) {
	if t.opt.Sort {
		return t.readSorted()
	}
	r, line, ok, err := t.readRow()
	if !ok {
		return r, false, err
	}
	if t.started && r.Arrival < t.prev {
		return workload.Request{}, false, &workload.ParseError{File: t.name, Line: line, Field: t.arrivalField(), Value: fmt.Sprint(r.Arrival.Microseconds()),
			Reason: fmt.Sprintf("goes back before line %d's %d µs (set blis.Options.Sort to sort)", t.lastLine, t.prev.Microseconds()), Err: workload.ErrUnsorted}
	}
	t.started, t.prev, t.lastLine = true, r.Arrival, line
	return r, true, nil
}

// arrivalField names the column the last row's arrival came from.
func (t *TraceV2) arrivalField() string {
	if v, ok := t.rows.Get(blisSend); ok && v != "" && v != "0" {
		return blisSend
	}
	return blisArrival
}

func (t *TraceV2) readSorted() (workload.Request, bool, error) {
	if t.sorted == nil {
		t.sorted = []sortedRow{}
		for {
			r, line, ok, err := t.readRow()
			if err != nil {
				return workload.Request{}, false, err
			}
			if !ok {
				break
			}
			t.sorted = append(t.sorted, sortedRow{r, line})
		}
		slices.SortStableFunc(t.sorted, func(a, b sortedRow) int { return cmp.Compare(a.req.Arrival, b.req.Arrival) })
	}
	if len(t.sorted) == 0 {
		return workload.Request{}, false, nil
	}
	r := t.sorted[0]
	t.sorted[0] = sortedRow{}
	t.sorted = t.sorted[1:]
	return r.req, true, nil
}

// readRow parses the next row in file order.
func (t *TraceV2) readRow() (workload.Request, int, bool, error) {
	err := t.rows.Next()
	if err == io.EOF {
		return workload.Request{}, 0, false, nil
	}
	if err != nil {
		return workload.Request{}, 0, false, err
	}
	t.rowsRead++
	r, err := t.parse()
	return r, t.rows.Line(), err == nil, err
}

// parse converts one row (see TraceV2).
func (t *TraceV2) parse() (workload.Request, error) {
	var r workload.Request
	var err error
	if r.ID, err = t.rows.Uint(blisID); err != nil {
		return r, err
	}
	if r.Arrival, err = t.arrival(); err != nil {
		return r, err
	}
	if r.InputTokens, err = t.input(&r); err != nil {
		return r, err
	}
	if r.OutputTokens, err = t.rows.Count(blisOutput); err != nil {
		return r, err
	}
	if err = t.optional(&r); err != nil {
		return r, err
	}
	r.Failed = r.Failed || r.InputTokens == 0 || r.OutputTokens == 0
	return r, nil
}

// arrival is send_time_us when > 0, else arrival_time_us.
func (t *TraceV2) arrival() (time.Duration, error) {
	if v, ok := t.rows.Opt(blisSend); ok {
		us, err := t.micros(blisSend, v)
		if err != nil || us > 0 {
			return us, err
		}
	}
	v, err := t.rows.Value(blisArrival)
	if err != nil {
		return 0, err
	}
	return t.micros(blisArrival, v)
}

// micros parses a µs instant (an integer >= 0).
func (t *TraceV2) micros(col, v string) (time.Duration, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil && !isRange(err):
		return 0, t.rows.Fail(col, v, "is not an integer number of microseconds")
	case err == nil && n < 0:
		return 0, t.rows.Fail(col, v, "is negative: arrival times must be >= 0")
	case err != nil || n > math.MaxInt64/int64(time.Microsecond):
		return 0, t.rows.Fail(col, v, "is out of range: more than 292 years (time.Duration's range)")
	}
	return time.Duration(n) * time.Microsecond, nil
}

// input is the prompt's length, BLIS's way (see TraceV2), and sets the
// group's prefix hash id.
func (t *TraceV2) input(r *workload.Request) (int, error) {
	in, err := t.rows.Count(blisInput)
	if err != nil {
		return 0, err
	}
	group, ok := t.rows.Opt(blisGroup)
	if !ok {
		if v, ok := t.rows.Opt(blisServerInput); ok {
			n, err := t.rows.Natural(blisServerInput, v)
			if err != nil || n > 0 {
				return n, err
			}
		}
		return in, nil
	}
	g, err := t.group(group)
	if err != nil || g.tokens == 0 {
		return in, err
	}
	if in > math.MaxInt32-g.tokens {
		return 0, t.rows.Fail(blisInput, fmt.Sprint(in), fmt.Sprintf("plus the group's %d prefix tokens is out of range [0, %d]", g.tokens, math.MaxInt32))
	}
	r.PrefixHashes, r.PrefixBlockTokens = []uint64{groupHash(group)}, g.tokens
	return g.tokens + in, nil
}

// group returns what is known of a row's prefix group, learning its
// length from the first row that gives one.
func (t *TraceV2) group(name string) (prefixGroup, error) {
	g := t.groups[name]
	n := 0
	if v, ok := t.rows.Opt(blisPrefixLen); ok {
		var err error
		if n, err = t.rows.Natural(blisPrefixLen, v); err != nil {
			return g, err
		}
	}
	switch {
	case g.tokens == 0 && n > 0 && g.before > 0:
		return g, t.rows.Fail(blisPrefixLen, strconv.Itoa(n), fmt.Sprintf("is prefix_group %q's first length, but line %d of the group came before it: BLIS would prepend these %d tokens to that row too, which a reader in file order cannot", name, g.before, n))
	case g.tokens == 0 && n > 0:
		g.tokens = n
	case g.tokens == 0 && g.before == 0:
		g.before = t.rows.Line()
	}
	t.groups[name] = g
	return g, nil
}

// groupHash is the prefix hash id of a BLIS prefix group.
func groupHash(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte("blis prefix_group\x00"))
	h.Write([]byte(name))
	return h.Sum64()
}

// optional fills Conversation, Turn, Class, Priority and servesim's own
// columns.
func (t *TraceV2) optional(r *workload.Request) error {
	if v, ok := t.rows.Opt(blisSession); ok {
		r.Conversation = workload.ConversationID(v)
	}
	if v, ok := t.rows.Opt(blisClass); ok {
		r.Class = v
	}
	for _, f := range []struct {
		col string
		dst *int
	}{{blisRound, &r.Turn}, {blisPriority, &r.Priority}} {
		if v, ok := t.rows.Opt(f.col); ok {
			n, err := t.rows.Natural(f.col, v)
			if err != nil {
				return err
			}
			*f.dst = n
		}
	}
	if v, ok := t.rows.Opt(extFailed); ok {
		f, err := strconv.ParseBool(v)
		if err != nil {
			return t.rows.Fail(extFailed, v, "is not a boolean")
		}
		r.Failed = f
	}
	return t.hashes(r)
}

// hashes reads servesim's exact prefix hash ids, when the file has them.
func (t *TraceV2) hashes(r *workload.Request) error {
	if _, ok := t.rows.Get(extHashes); !ok {
		return nil
	}
	r.PrefixHashes, r.PrefixBlockTokens = nil, 0
	if err := t.rows.Hashes(extHashes, extBlock, r); err != nil {
		return err
	}
	if r.PrefixHashes != nil {
		if v, ok := t.rows.Opt(extBlock); !ok {
			return t.rows.Fail(extBlock, v, "is missing: the prefix hash ids need their block size")
		}
	}
	return nil
}

// isRange says whether strconv refused a number as out of range.
func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
