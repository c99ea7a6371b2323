package workload

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Errors a trace reader wraps; branch on them with errors.Is. The error
// itself is a *ParseError naming the file, line and field.
var (
	ErrMalformed = errors.New("workload: malformed trace")
	ErrUnsorted  = errors.New("workload: trace timestamps are not sorted")
	// ErrLFSPointer: the file is a Git LFS pointer, a three-line stand-in
	// committed in place of the trace, whose content was never fetched.
	ErrLFSPointer = errors.New("workload: trace file is a Git LFS pointer")
	// ErrScaleOverflow: a row's arrival, multiplied by the Transform's
	// time factor, lies past time.Duration's range (about 292 years).
	ErrScaleOverflow = errors.New("workload: scaled trace instant overflows time.Duration")
)

// ErrEmptyTrace is wrapped by the error that ends a replay of zero
// requests, unless TraceConfig.AllowEmpty is set. It is not a *ParseError:
// no line is at fault.
var ErrEmptyTrace = errors.New("workload: trace has no requests")

// ParseError is a problem with one line of a trace file, e.g.
//
//	workload: azure.csv:17: field ContextTokens: "abc" is not an integer
type ParseError struct {
	File  string
	Line  int    // 1-based; the header is line 1 of a CSV file
	Field string // "" when the whole line is at fault
	Value string
	// Reason completes the sentence ("is not an integer").
	Reason string
	// Err is ErrMalformed, ErrUnsorted, ErrLFSPointer or ErrScaleOverflow.
	Err error
}

func (e *ParseError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("workload: %s:%d: %s", e.File, e.Line, e.Reason)
	}
	return fmt.Sprintf("workload: %s:%d: field %s: %q %s", e.File, e.Line, e.Field, e.Value, e.Reason)
}

func (e *ParseError) Unwrap() error { return e.Err }

// row is one line of a trace, looked up by column name.
type row interface {
	get(col string) (value string, present bool)
	line() int
}

// rowReader yields rows one at a time, io.EOF at the end.
type rowReader interface {
	next() (row, error)
}

func newRowReader(r io.Reader, name string, c TraceConfig) (rowReader, error) {
	br := skipBOM(r)
	if isLFSPointer(br) {
		return nil, &ParseError{File: name, Line: 1, Reason: "the file is a Git LFS pointer, not the trace (run `git lfs pull` to fetch its content)", Err: ErrLFSPointer}
	}
	r = br
	if c.Format == JSONL {
		return newJSONRows(r, name), nil
	}
	return newCSVRows(r, name, required(c), read(c))
}

// bom is the UTF-8 byte order mark that spreadsheet programs write at the
// start of a file.
const bom = "\ufeff"

// skipBOM drops a byte order mark at the start of r: neither encoding/csv
// (before a quoted header) nor encoding/json accepts one.
func skipBOM(r io.Reader) *bufio.Reader {
	br := bufio.NewReader(r)
	if b, err := br.Peek(len(bom)); err == nil && string(b) == bom {
		br.Discard(len(bom))
	}
	return br
}

// lfsPointer starts the first line of a Git LFS pointer file
// (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md).
const lfsPointer = "version https://git-lfs.github.com/spec/"

// isLFSPointer says whether br starts with a Git LFS pointer's first line.
func isLFSPointer(br *bufio.Reader) bool {
	b, err := br.Peek(len(lfsPointer))
	return err == nil && string(b) == lfsPointer
}

// required lists the columns a CSV header must name.
func required(c TraceConfig) []string {
	cols := []string{c.Columns.Arrival, c.Columns.Input, c.Columns.Output}
	for _, f := range c.Filters {
		cols = append(cols, f.Column)
	}
	return cols
}

// read lists every column the configuration reads (required or optional).
func read(c TraceConfig) []string {
	k := c.Columns
	return append(required(c), k.ID, k.Conversation, k.Turn, k.Class, k.Priority, k.Failed, k.PrefixHashes, k.BlockTokensColumn)
}

// csvRows streams a CSV file with a header, reusing one record.
type csvRows struct {
	r     *csv.Reader
	name  string
	index map[string]int
	rec   []string
	ln    int
	// The plain lines (see plainLine) are read from br, r's own input,
	// between the records r reads.
	br     *bufio.Reader
	plain  bool // plain lines are read (plainCSV, and r reads from br)
	fields int  // the header's fields: every record's (r's FieldsPerRecord)
	lines  int  // the lines read, by r and plainLine
	skips  int  // the lines plainLine read: r's line numbers are short by them
	own    []string
	// chunk is a copy of what br buffered, from the next byte on: the
	// plain lines' fields are cut from it (see plainLine). It is "" when
	// r has read from br since (next), which may have refilled it.
	chunk  string
	memo   [slots]colMemo // get's last columns, by position in the record
	pos    [3]int         // the parser's arrival and token count columns' positions, -1 for none (csvRequired)
	posSet bool
}

// colMemo is a column get looked up last and its position.
type colMemo struct {
	col string
	i   int
}

func newCSVRows(r io.Reader, name string, required, read []string) (*csvRows, error) {
	br := bufio.NewReader(r) // r itself when a *bufio.Reader (newRowReader's, NewCSVRows')
	c := &csvRows{r: csv.NewReader(br), name: name, index: map[string]int{}, br: br}
	c.r.ReuseRecord = true
	header, err := c.r.Read()
	if err == io.EOF {
		return c, nil // no header, no rows: an empty replay
	}
	if err != nil {
		return nil, c.syntax(err)
	}
	if err := c.indexHeader(header, read); err != nil {
		return nil, err
	}
	for _, col := range required {
		if _, ok := c.index[col]; !ok {
			return nil, &ParseError{File: name, Line: 1, Field: col, Value: strings.Join(header, ","), Reason: "is a header without this column", Err: ErrMalformed}
		}
	}
	c.fields = len(header)
	c.lines = c.recordEnd(header)
	// csv.NewReader reads br itself (bufio.NewReader returns a
	// *bufio.Reader of its default size unchanged), so its records and
	// the plain lines are read from one input, in turn.
	c.plain = plainCSV
	return c, nil
}

// indexHeader maps column names to positions. A column the configuration
// reads must appear once: with two, which one to read would be a guess.
func (c *csvRows) indexHeader(header, read []string) error {
	for i, h := range header {
		col := strings.TrimSpace(h)
		if j, dup := c.index[col]; dup && col != "" && slices.Contains(read, col) {
			return &ParseError{File: c.name, Line: 1, Field: col, Value: strings.Join(header, ","),
				Reason: fmt.Sprintf("is a header naming this column twice, as columns %d and %d", j+1, i+1), Err: ErrMalformed}
		}
		c.index[col] = i
	}
	return nil
}

// recordEnd is the line of r's record rec's last line: a field's '\n'
// is a line's end inside quotes (r reads a "\r\n" there as one).
func (c *csvRows) recordEnd(rec []string) int {
	first, _ := c.r.FieldPos(0)
	n := first + c.skips
	for _, f := range rec {
		n += strings.Count(f, "\n")
	}
	return n
}

// plainCSV is false for plainLine's twin: encoding/csv reads every
// record (set by the tests alone).
var plainCSV = true

// plainLine reads the next line as the record encoding/csv reads from
// it, when the line is plain: whole in br's buffer (read already), not
// empty (but for a '\r' before its '\n': csv.Reader reads a "\r\n" as a
// '\n'), with no '"', and the header's number of fields. Such a line is
// one record, its fields the bytes between its commas, as csv.Reader.Read
// cuts them (a '\r' inside is a field's byte), in a string of their
// own; any other line
// is left to csv.Reader.Read, with its own errors (a line with another
// number of fields is its ErrFieldCount) and its skips (an empty line),
// its line numbers moved on by the plain lines read (skips). It saves
// csv.Reader's copy of the line to its buffer and its search of each
// field for a quote: Regime/AzureReplay 10,053 then 9,156 instructions
// a request (with column's memo). Its twin is csv.Reader
// alone (plainCSV off), which TestPlainCSVLinesAreCSV and FuzzPlainCSV
// hold it to, record by record and error by error.
func (c *csvRows) plainLine() bool {
	b, _ := c.br.Peek(c.br.Buffered()) // no read: what the buffer holds
	k := bytes.IndexByte(b, '\n')
	if k <= 0 {
		return false
	}
	line := b[:k]
	if line[k-1] == '\r' { // a "\r\n" ends the line, as r reads it
		line = line[:k-1]
	}
	if len(line) == 0 || bytes.IndexByte(line, '"') >= 0 || bytes.Count(line, comma) != c.fields-1 {
		return false
	}
	// The line's fields are cut from chunk, a string of all br holds,
	// taken once a buffer, not one a line: the fields outlive the row
	// (a Class, an error's Value), so they are never the buffer's bytes.
	// While only plainLine has read br (Discard, which reads nothing in),
	// chunk is what br buffers, byte for byte; its length is b's.
	// Regime/AzureReplay, a string a line then this: see docs/fastpaths.md.
	if !chunkCSV || len(c.chunk) != len(b) {
		c.chunk = string(b)
	}
	str := c.chunk[:len(line)]
	c.chunk = c.chunk[k+1:]
	c.own = c.own[:0]
	for {
		i := strings.IndexByte(str, ',')
		if i < 0 {
			break
		}
		c.own = append(c.own, str[:i])
		str = str[i+1:]
	}
	c.own = append(c.own, str)
	c.br.Discard(k + 1)
	c.rec = c.own
	c.skips++
	c.lines++
	c.ln = c.lines
	return true
}

// chunkCSV is false for the twin of plainLine's fields cut from one
// string a buffer: a string a line (set by the tests alone).
var chunkCSV = true

// comma is a CSV file's separator, for bytes.Count.
var comma = []byte{','}

func (c *csvRows) syntax(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &ParseError{File: c.name, Line: pe.Line + c.skips, Reason: pe.Err.Error(), Err: ErrMalformed}
	}
	return fmt.Errorf("workload: reading %s: %w", c.name, err)
}

func (c *csvRows) next() (row, error) {
	if c.plain && c.plainLine() {
		return c, nil
	}
	c.chunk = "" // r may refill br
	rec, err := c.r.Read()
	if err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, c.syntax(err)
	}
	c.rec = rec
	c.ln, _ = c.r.FieldPos(0)
	c.ln += c.skips
	if c.plain {
		c.lines = c.recordEnd(rec)
	}
	return c, nil
}

func (c *csvRows) get(col string) (string, bool) {
	i, ok := c.column(col)
	if !ok {
		return "", false
	}
	return c.at(i)
}

// at is the value at position i of the record (get's, of the column
// there), trimmed of spaces; false when the record is short of it (or
// i is -1, no column's).
func (c *csvRows) at(i int) (string, bool) {
	if uint(i) >= uint(len(c.rec)) {
		return "", false
	}
	if v := c.rec[i]; len(v) > 0 && v[0]-0x21 < 0x5e && v[len(v)-1]-0x21 < 0x5e {
		return v, true // its ends plain (see plainEnds): strings.TrimSpace(v) is v
	}
	return strings.TrimSpace(c.rec[i]), true
}

// column is col's position in the record (index), from a memo of the
// last columns asked (a row asks the parser's few columns, by the same
// strings), else the map: Regime/AzureReplay's get and map lookups, 279
// instructions a request (get 90, the map's 189), then 228, before
// csvRequired read its columns by position (the optional columns, and
// CSVRows', are still read by name).
func (c *csvRows) column(col string) (int, bool) {
	for k := range c.memo {
		if m := &c.memo[k]; m.col == col && len(col) > 0 {
			return m.i, true
		}
	}
	i, ok := c.index[col]
	if ok {
		copy(c.memo[1:], c.memo[:])
		c.memo[0] = colMemo{col, i}
	}
	return i, ok
}

func (c *csvRows) line() int { return c.ln }

// maxLine bounds one JSONL line (a prompt of millions of tokens still has
// far fewer hash ids than this).
const maxLine = 64 << 20

// jsonRows streams a JSON Lines file: a line is read by flatObject into
// fields, or, when it declines the line, by json.Unmarshal into one
// reused object map.
type jsonRows struct {
	s      *bufio.Scanner
	chunks bool   // s splits by scanLineChunks (see scan)
	chunk  []byte // s's last token, lines, when chunks
	at     int    // where in chunk the next line starts
	cur    []byte // the line next read last, or the one held
	name   string
	ln     int
	text   []byte   // the line, while flat (its fields are offsets in it)
	fields []field  // the line's members, while flat
	ints   []uint64 // their arrays' plain integers (field.lo, field.hi)
	memo   keyMemo  // the bytes before the last flat line's values
	flat   bool
	obj    map[string]json.RawMessage
	// gen counts the lines whose keys were not the line's before (by
	// its memo), or that were not flat: a hint of the same gen holds.
	gen   uint64
	hints [slots]hint
	// skim, in a TargetRate replay's first pass, reads a line's arrival
	// alone when it can (see skimmer): then skimmed is set, raw is the
	// arrival, and the row answers parse alone (not get).
	skim    *skimmer
	skimmed bool
	raw     time.Duration
	held    bool // the scanner's line is the next row's (Trace.skimRun)
}

// A hint is where the parser's column found its field: the index in
// fields of a line read while gen was gen-1 (the zero hint is none).
// The lines read since, while gen is unchanged, have the same keys, the
// same bytes, in the same order, so the column is at that index again.
type hint struct {
	gen uint64
	idx int
}

// The columns the parser looks up by hint, a slot each: a slot names
// one column for a reader's life (the parser's configuration's).
const (
	slotArrival = iota
	slotInput
	slotOutput
	slotHashes
	slots
	noSlot = -1 // a lookup without hint
)

func newJSONRows(r io.Reader, name string) *jsonRows {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64<<10), maxLine)
	if scanChunks {
		s.Split(scanLineChunks)
	}
	return &jsonRows{s: s, chunks: scanChunks, name: name, obj: map[string]json.RawMessage{}}
}

// scan reads the next line, as bufio.ScanLines splits the input
// (without its '\n', and a '\r' before it), and reports false at the
// input's end or an error (s.Err).
//
// The scanner splits the input into chunks of whole lines, all those its
// buffer holds (scanLineChunks), which scan (and scanText, for the usual
// line) then cuts at each '\n': a line costs a search for its '\n'
// alone, where a call of the scanner and of its split function a line
// took 115 instructions a request in Regime/MooncakeReplay
// (bufio.Scanner.Scan 72, bufio.ScanLines 43; scanText's cut 27, and
// the count 11,861 then 11,787, the budget test's). The scanner reads
// and grows its buffer as it does with ScanLines, for a chunk ends where
// a line does: its errors are ScanLines', after the same lines. Its
// slow twin is ScanLines, a line a call (scanChunks off), which
// FuzzScanChunks holds it to, scanText's lines too.
func (j *jsonRows) scan() (line []byte, ok bool) {
	c := j.chunk[j.at:]
	if len(c) == 0 {
		if !j.s.Scan() {
			return nil, false
		}
		if c = j.s.Bytes(); !j.chunks {
			return c, true // ScanLines' line
		}
		j.chunk, j.at = c, 0
	}
	k := bytes.IndexByte(c, '\n')
	if k < 0 {
		k = len(c) // the input's last line, without a '\n'
		j.at--
	}
	j.at += k + 1
	line = c[:k]
	if k > 0 && line[k-1] == '\r' {
		line = line[:k-1]
	}
	return line, true
}

// scanLineChunks is a bufio.SplitFunc: the lines data holds up to its
// last '\n', with it, as one token; at the input's end, the rest. It
// asks for more input where bufio.ScanLines does: when data holds no
// '\n' (and the input goes on).
func scanLineChunks(data []byte, atEOF bool) (int, []byte, error) {
	if k := lastNewline(data); k >= 0 {
		return k + 1, data[:k+1], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// lastNewline is bytes.LastIndexByte(data, '\n'), found by
// bytes.IndexByte forward from a window at data's end, doubled until it
// holds one: the window's '\n's are a line or two, where
// LastIndexByte's loop read every byte of the last line back to its
// start, 16 instructions a request in Regime/MooncakeReplay (11,787
// then 11,759, the budget test's count; TestLastNewlineIsLastIndexByte).
func lastNewline(data []byte) int {
	for w := 512; ; w *= 2 {
		lo := max(len(data)-w, 0)
		if k := bytes.IndexByte(data[lo:], '\n'); k >= 0 {
			for k += lo; ; {
				next := bytes.IndexByte(data[k+1:], '\n')
				if next < 0 {
					return k
				}
				k += next + 1
			}
		}
		if lo == 0 {
			return -1
		}
	}
}

// scanChunks is false for scan's twin: the scanner splits by
// bufio.ScanLines, a line at a time (set by the tests alone).
var scanChunks = true

func (j *jsonRows) next() (row, error) {
	for {
		text := j.cur
		if !j.held {
			var ok bool
			if text, ok = j.scan(); !ok {
				break
			}
			j.cur = text
		}
		j.held = false
		j.ln++
		if !plainEnds(text) {
			text = bytes.TrimSpace(text)
		}
		if len(text) == 0 {
			continue
		}
		if j.skim != nil {
			if j.raw, j.skimmed = j.skim.line(text); j.skimmed {
				j.text = text
				return j, nil
			}
		}
		if j.fields, j.ints, j.flat = flatObject(j.fields[:0], j.ints[:0], text, &j.memo); j.flat {
			if !j.memo.same {
				j.gen++
			}
			j.text = text
			if j.skim != nil && !j.skim.ready {
				j.skim.learn(j)
			}
			return j, nil
		}
		j.gen++
		clear(j.obj)
		if err := json.Unmarshal(text, &j.obj); err != nil {
			return nil, &ParseError{File: j.name, Line: j.ln, Reason: "not a JSON object: " + err.Error(), Err: ErrMalformed}
		}
		return j, nil
	}
	switch err := j.s.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return nil, &ParseError{File: j.name, Line: j.ln + 1, Reason: "line longer than 64 MiB", Err: ErrMalformed}
	case err != nil:
		return nil, fmt.Errorf("workload: reading %s: %w", j.name, err)
	}
	return nil, io.EOF
}

// plainEnds says whether b begins and ends with printable ASCII other
// than a space (a JSON line's '{' and '}'): bytes.TrimSpace(b) is b
// (TestPlainEndsAreTrimmed), and its call is saved, which took
// Regime/MooncakeReplay 18 instructions a request (13,194 then 13,176).
func plainEnds(b []byte) bool {
	n := len(b)
	return n > 0 && b[0]-0x21 < 0x5e && b[n-1]-0x21 < 0x5e
}

func (j *jsonRows) get(col string) (string, bool) {
	if j.skimmed { // read by its template (skimmer), which flatObject reads: read whole now
		j.fields, j.ints, j.flat = flatObject(j.fields[:0], j.ints[:0], j.text, nil)
		j.skimmed = false
	}
	if j.flat {
		f, ok := j.field(col, noSlot)
		if !ok {
			return "", false
		}
		raw := f.raw(j.text)
		if string(raw) == "null" {
			return "", false
		}
		if raw[0] == '"' { // a plain string: its bytes are its value
			return string(raw[1 : len(raw)-1]), true
		}
		return string(raw), true
	}
	raw, ok := j.obj[col]
	if !ok || string(raw) == "null" {
		return "", false
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, true
		}
	}
	return string(raw), true
}

func (j *jsonRows) line() int { return j.ln }

// field is the member col of a flat line: the last of a key given twice,
// as json.Unmarshal keeps. slot, when not noSlot, is col's: field sets
// its hint (see hint), which cols reads.
func (j *jsonRows) field(col string, slot int) (*field, bool) {
	fields, text := j.fields, j.text // not reloaded a field
	for i := len(fields) - 1; i >= 0; i-- {
		// The length first: a key of another length is not sliced.
		if f := &fields[i]; int(f.k1-f.k0) == len(col) && string(text[f.k0:f.k1]) == col {
			if slot != noSlot {
				j.hints[slot] = hint{j.gen + 1, i}
			}
			return f, true
		}
	}
	return nil, false
}

// plainCols is what flatObject read of the parser's columns on a flat
// line (cols): the field of each slot's column, nil where the line has
// none, and the line's integers.
type plainCols struct {
	f    [slots]*field
	ints []uint64
}

// cols sets *pc to the columns of c that the parser reads by slot, on a
// flat line, each found by its hint or by name (field, which sets the
// hint). One call a row finds them all (a call a column, with its own
// checks, took twice the instructions).
func (j *jsonRows) cols(c *Columns, pc *plainCols) {
	fields := j.fields
	for slot := range pc.f {
		if h := j.hints[slot]; h.gen == j.gen+1 { // the hint holds
			pc.f[slot] = &fields[h.idx]
		} else if col := slotColumn(c, slot); col != "" {
			pc.f[slot], _ = j.field(col, slot)
		} else {
			pc.f[slot] = nil
		}
	}
	pc.ints = j.ints
}

// slotColumn is the column of c that slot stands for.
func slotColumn(c *Columns, slot int) string {
	switch slot {
	case slotArrival:
		return c.Arrival
	case slotInput:
		return c.Input
	case slotOutput:
		return c.Output
	}
	return c.PrefixHashes
}

// int returns the column of slot when it is a plain integer (see
// field), read by flatObject: the integer whose digits get(col) returns
// (digits only, at most 19, without sign or leading zero), which
// strconv.ParseInt reads as this integer when in its range, and refuses
// as out of range otherwise (FuzzParsePlainInts holds the parser to its
// reading without).
func (pc *plainCols) int(slot int) (uint64, bool) {
	if f := pc.f[slot]; f != nil && f.lo == scalarInt {
		return f.x, true
	}
	return 0, false
}

// count is the column of slot as a token count when it is a plain
// integer (int) in range: what parser.count reads from its digits.
func (pc *plainCols) count(slot int) (int, bool) {
	if x, ok := pc.int(slot); ok && x <= math.MaxInt32 {
		return int(x), true
	}
	return 0, false
}

// ids returns the column of slot when it is an array of plain integers
// (see field), read by flatObject: the ids hashIDs would read from
// get(col), within the reader's scratch.
func (pc *plainCols) ids(slot int) ([]uint64, bool) {
	if f := pc.f[slot]; f != nil && f.lo >= 0 {
		return pc.ints[f.lo:f.hi], true
	}
	return nil, false
}
