package costmodel

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ReadAllReduce reads file in fsys (os.DirFS(".") for the working
// directory) as nccl-tests' all_reduce_perf output; ParseAllReduce says
// what it reads.
func ReadAllReduce(fsys fs.FS, file string) (*AllReduceCurve, error) {
	f, err := fsys.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseAllReduce(f, file)
}

// ParseAllReduce reads nccl-tests' all_reduce_perf output, as the program
// prints it, from r into an AllReduceCurve; name is the file its errors
// name (Source). Every error about the text is a *ProfileError naming
// the line and column.
//
// The output is a table under '#' comment lines:
//
//	# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807
//	# Collective test starting: all_reduce_perf
//	# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) ...
//	# Using devices
//	#  Rank  0 Group  0 Pid  41223 on gpu-node-1 device  0 [0000:17:00] NVIDIA RTX PRO 6000 ...
//	#  Rank  1 Group  0 Pid  41223 on gpu-node-1 device  1 [0000:31:00] NVIDIA RTX PRO 6000 ...
//	#                                        out-of-place                       in-place
//	#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
//	#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
//	     1048576        524288  bfloat16     sum      -1    82.21   12.75   12.75       0    82.46   12.72   12.72       0
//	# Out of bounds values : 0 OK
//	# Avg bus bandwidth    : 6.71664
//
// The column header is read by name, so the layouts of nccl-tests'
// versions all read: before 2.x's root column (size count type redop
// time algbw busbw error ...), with a copybw column, with the
// per-iteration columns of -I 1 (i_min i_max i_p99 i_cv%), with the
// timestamp of -S 1, and the first releases' "bytes N type op time algbw
// busbw res" without a units line (their time in ms). Times are in the
// units line's unit, µs or ms.
//
// The curve is the out-of-place time: vLLM's all-reduces are out of
// place (its GroupCoordinator always allocates the output, "PyTorch
// custom ops do not support mutation", and its pynccl communicator calls
// ncclAllReduce with a fresh output tensor), so the in-place columns,
// read and checked, are not used. The curve is NCCL's: where vLLM's
// custom all-reduce runs instead (small messages over NVLink or PCIe
// peer-to-peer, when enabled) the real collective may be faster.
//
// Refused, naming where: a row whose #wrong (out-of-place or in-place)
// is not 0, an "Out of bounds values" count not 0, a table mixing types
// or reductions (-d all, -o all: measure one per file), sizes not
// increasing (-N cycles > 1, or two runs in one file), a second table, a
// CPU-time table (-C 1: the launch, not the collective), another
// collective's output, a row whose fields do not match the header, and
// an output that lists no "#  Rank" lines (the GPU count the curve is for
// would be unknown). Ignored: other comment lines, blank lines, NCCL's
// own log lines (NCCL_DEBUG: "NCCL INFO", "NCCL WARN"), text before the
// table's header (launcher messages) and after its footer, and rows of 0
// bytes. A #wrong of N/A (-c 0) marks the curve Unchecked; the oldest
// layouts' error columns (a maximum deviation, not a count) are read and
// left to the "Out of bounds values" footer.
func ParseAllReduce(r io.Reader, name string) (*AllReduceCurve, error) {
	p := ncclParser{name: name, ranks: map[int]int{}, curve: AllReduceCurve{Source: name}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		p.line++
		if err := p.read(sc.Text()); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p.finish()
}

// ncclParser reads all_reduce_perf output line by line.
type ncclParser struct {
	name  string
	line  int
	curve AllReduceCurve

	ranks     map[int]int // group → ranks listed
	seenRank  map[int]bool
	gpus      []string
	truncated int // a rank line nccl-tests cut short, its line

	cols       *ncclColumns
	headerLine int
	unitsOK    bool    // a units line followed the header (or none is needed)
	scale      float64 // µs per unit of the time columns, 0 before known
	footer     bool    // the table's footer has been read
	first      struct {
		line            int
		dtype, op       string
		dtypeCol, opCol int
	}
	lastBytes int64
	lastLine  int
}

// ncclColumns is where a row's fields are, from the column header.
type ncclColumns struct {
	names                        []string
	fields                       int // fields a row has
	size, count, dtype, op, root int // -1: no such column (count, root)
	timestamp                    bool
	sides                        [2]ncclSide // out-of-place, in-place
	oldest                       bool        // "bytes N type op ... res": times in ms, no units line
}

// ncclSide is one side's columns: its time and its check.
type ncclSide struct {
	name        string
	time, check int
	counts      bool // check is #wrong (a count) rather than a maximum deviation
}

// ncclField is one whitespace-separated field and its 1-based column.
type ncclField struct {
	text string
	col  int
}

func ncclFields(line string) []ncclField {
	var out []ncclField
	col, start, in := 0, 0, false
	for _, r := range line {
		col++
		space := r == ' ' || r == '\t' || r == '\r'
		switch {
		case !space && !in:
			start, in = col, true
			out = append(out, ncclField{col: start})
			fallthrough
		case !space:
			out[len(out)-1].text += string(r)
		default:
			in = false
		}
	}
	return out
}

func (p *ncclParser) errAt(col int, format string, args ...any) error {
	return &ProfileError{File: p.name, Line: p.line, Column: max(col, 1), Err: fmt.Errorf(format, args...)}
}

func (p *ncclParser) read(line string) error {
	trimmed := strings.TrimSpace(line)
	switch {
	case trimmed == "":
		return nil
	case strings.HasPrefix(trimmed, "#"):
		return p.comment(line)
	case strings.Contains(line, "NCCL INFO") || strings.Contains(line, "NCCL WARN") || strings.Contains(line, "NCCL TRACE"):
		return nil // NCCL_DEBUG's log, interleaved with the table
	case p.cols == nil || p.footer:
		return nil // before the table (launcher messages) or after it
	}
	return p.row(line)
}

// comment reads a '#' line: the version, the program, the devices, the
// column header and its units, the footer; others are ignored.
func (p *ncclParser) comment(line string) error {
	hash := strings.IndexByte(line, '#')
	body := line[hash+1:]
	fields := ncclFields(body)
	for i := range fields {
		fields[i].col += utf8.RuneCountInString(line[:hash+1])
	}
	if len(fields) == 0 {
		return nil
	}
	text := strings.TrimSpace(body)
	switch {
	case strings.HasPrefix(text, "nccl-tests version "):
		p.curve.Version = strings.TrimPrefix(text, "nccl-tests version ")
	case strings.HasPrefix(text, "Collective test starting:"):
		prog := strings.TrimSpace(strings.TrimPrefix(text, "Collective test starting:"))
		if base := path.Base(prog); !strings.HasPrefix(base, "all_reduce") {
			return p.errAt(fields[len(fields)-1].col, "this is %s's output, not all_reduce_perf's: the curve prices all-reduces", base)
		}
	case fields[0].text == "Rank" && len(fields) > 1:
		return p.rank(line, fields)
	case (fields[0].text == "size" || fields[0].text == "bytes") && slices.ContainsFunc(fields, func(f ncclField) bool { return f.text == "busbw" }):
		return p.header(fields)
	case fields[0].text == "(B)" && p.cols != nil && !p.unitsOK:
		return p.units(fields)
	case strings.HasPrefix(text, "Out of bounds values"):
		if n, err := footerNumber(fields); err == nil && n != 0 {
			return p.errAt(fields[len(fields)-1].col, "%v out-of-bounds values: nccl-tests found wrong results, so the table times a broken collective", n)
		}
	case strings.HasPrefix(text, "Avg bus bandwidth"):
		p.footer = true
	}
	return nil
}

// footerNumber is the number after the footer's ':'.
func footerNumber(fields []ncclField) (float64, error) {
	for i, f := range fields {
		if f.text == ":" && i+1 < len(fields) {
			return strconv.ParseFloat(fields[i+1].text, 64)
		}
	}
	return 0, errors.New("no number")
}

// rank reads one "#  Rank  r [Group g] ... [pci] GPU name" line.
func (p *ncclParser) rank(line string, fields []ncclField) error {
	r, err := strconv.Atoi(fields[1].text)
	if err != nil || r < 0 {
		return p.errAt(fields[1].col, "rank %q is not a rank number", fields[1].text)
	}
	group := 0
	if len(fields) > 3 && fields[2].text == "Group" {
		if group, err = strconv.Atoi(fields[3].text); err != nil {
			return p.errAt(fields[3].col, "group %q is not a group number", fields[3].text)
		}
	}
	if p.seenRank == nil {
		p.seenRank = map[int]bool{}
	}
	if p.seenRank[r] {
		return p.errAt(fields[1].col, "rank %d is listed twice (two runs in one file?): give one run per file", r)
	}
	p.seenRank[r] = true
	p.ranks[group]++
	if strings.HasSuffix(strings.TrimSpace(line), "...") {
		p.truncated = p.line
	}
	if i := strings.Index(line, "] "); i >= 0 {
		if gpu := strings.TrimSpace(line[i+2:]); gpu != "" && !slices.Contains(p.gpus, gpu) {
			p.gpus = append(p.gpus, gpu)
		}
	}
	return nil
}

// header reads the column header: the leading columns, then the same
// columns for the out-of-place side and again for the in-place side,
// each starting at its time.
func (p *ncclParser) header(fields []ncclField) error {
	if p.cols != nil {
		return p.errAt(fields[0].col, "a second table begins here (the first on line %d): give one run per file", p.headerLine)
	}
	c := &ncclColumns{oldest: fields[0].text == "bytes", size: 0, count: -1, dtype: -1, op: -1, root: -1}
	for _, f := range fields {
		c.names = append(c.names, f.text)
	}
	if c.names[len(c.names)-1] == "timestamp" {
		c.names, c.timestamp = c.names[:len(c.names)-1], true
	}
	var times []int
	for i, n := range c.names {
		switch n {
		case "cputime":
			return p.errAt(fields[i].col, "the table reports CPU time (all_reduce_perf -C 1), the launch rather than the collective: rerun without -C")
		case "time":
			times = append(times, i)
		}
	}
	if len(times) != 2 {
		return p.errAt(fields[0].col, "the header has %d time columns, want two (out-of-place, then in-place)", len(times))
	}
	for i, n := range c.names[:times[0]] {
		switch n {
		case "count", "N":
			c.count = i
		case "type":
			c.dtype = i
		case "redop", "op":
			c.op = i
		case "root":
			c.root = i
		}
	}
	for _, need := range []struct {
		idx  int
		name string
	}{{c.dtype, "type"}, {c.op, "redop"}} {
		if need.idx < 0 {
			return p.errAt(fields[0].col, "the header has no %s column before its time", need.name)
		}
	}
	for s, name := range []string{"out-of-place", "in-place"} {
		lo, hi := times[s], len(c.names)
		if s == 0 {
			hi = times[1]
		}
		side := ncclSide{name: name, time: lo, check: -1}
		for i := lo; i < hi; i++ {
			switch c.names[i] {
			case "#wrong":
				side.check, side.counts = i, true
			case "error", "res":
				side.check = i
			}
		}
		if side.check < 0 {
			return p.errAt(fields[lo].col, "the header's %s columns have no #wrong (or error) column: a table that does not say its results were right is not read", name)
		}
		c.sides[s] = side
	}
	c.fields = len(c.names)
	if c.timestamp {
		c.fields += 2 // "2025-10-28 12:34:56"
	}
	p.cols, p.headerLine = c, p.line
	if c.oldest {
		p.scale, p.unitsOK = 1e3, true // the first releases printed ms, no units line
	}
	return nil
}

// units reads the units line under the header: the time's unit.
func (p *ncclParser) units(fields []ncclField) error {
	p.unitsOK = true
	for _, f := range fields {
		switch f.text {
		case "(us)":
			p.scale = 1
			return nil
		case "(ms)":
			p.scale = 1e3
			return nil
		}
	}
	return p.errAt(fields[0].col, "the units line gives no time unit, (us) or (ms)")
}

// row reads one measured size.
func (p *ncclParser) row(line string) error {
	c := p.cols
	if p.scale == 0 {
		return p.errAt(1, "a row before the header's units line (the time's unit, (us) or (ms), is unknown)")
	}
	fields := ncclFields(line)
	if len(fields) != c.fields {
		if len(fields) < c.fields {
			end := utf8.RuneCountInString(strings.TrimRight(line, " \t\r")) + 1
			return p.errAt(end, "the row has %d fields, the header %d: %s is missing", len(fields), c.fields, c.fieldName(len(fields)))
		}
		return p.errAt(fields[c.fields].col, "the row has %d fields, the header %d: %q is extra", len(fields), c.fields, fields[c.fields].text)
	}
	bytes, err := strconv.ParseInt(fields[c.size].text, 10, 64)
	if err != nil || bytes < 0 {
		return p.errAt(fields[c.size].col, "%s %q is not a byte count", c.names[c.size], fields[c.size].text)
	}
	dtype, op := fields[c.dtype], fields[c.op]
	if op.text == "none" {
		return p.errAt(op.col, "the reduction is none: not an all-reduce")
	}
	if c.count >= 0 {
		n, err := strconv.ParseInt(fields[c.count].text, 10, 64)
		if err != nil || n < 0 {
			return p.errAt(fields[c.count].col, "%s %q is not an element count", c.names[c.count], fields[c.count].text)
		}
		// An all-reduce's count is its size in elements; reduce_scatter's
		// is each rank's share.
		if w := ncclTypeBytes[dtype.text]; w > 0 && n*w != bytes {
			return p.errAt(fields[c.count].col, "%d elements of %s are not %d bytes: not an all-reduce's row (reduce_scatter_perf's output?)", n, dtype.text, bytes)
		}
	}
	if c.root >= 0 && fields[c.root].text != "-1" {
		return p.errAt(fields[c.root].col, "root %s: an all-reduce has none (-1); this is a rooted collective's output", fields[c.root].text)
	}
	if p.first.line == 0 {
		p.first.line, p.first.dtype, p.first.op = p.line, dtype.text, op.text
		p.curve.DType, p.curve.Op = dtype.text, op.text
	}
	if dtype.text != p.first.dtype {
		return p.errAt(dtype.col, "type %s here, %s on line %d: the table mixes types (-d all); measure one type per file", dtype.text, p.first.dtype, p.first.line)
	}
	if op.text != p.first.op {
		return p.errAt(op.col, "reduction %s here, %s on line %d: the table mixes reductions (-o all); measure one per file", op.text, p.first.op, p.first.line)
	}
	var us [2]float64
	for s, side := range c.sides {
		t := fields[side.time]
		v, err := strconv.ParseFloat(t.text, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return p.errAt(t.col, "%s time %q is not a time > 0", side.name, t.text)
		}
		us[s] = v * p.scale
		chk := fields[side.check]
		if chk.text == "N/A" {
			p.curve.Unchecked = true
			continue
		}
		w, err := strconv.ParseFloat(chk.text, 64)
		if err != nil || !(w >= 0) {
			return p.errAt(chk.col, "%s %s %q is not a number >= 0", side.name, c.names[side.check], chk.text)
		}
		if side.counts && w != 0 {
			return p.errAt(chk.col, "%s #wrong is %v at %d bytes: the all-reduce returned wrong results, so the table times a broken collective", side.name, w, bytes)
		}
	}
	if bytes == 0 {
		return nil // times no transfer
	}
	if bytes <= p.lastBytes {
		return p.errAt(fields[c.size].col, "size %d after %d on line %d: sizes must increase (all_reduce_perf -N cycles > 1, or two runs in one file); give one run per file", bytes, p.lastBytes, p.lastLine)
	}
	p.lastBytes, p.lastLine = bytes, p.line
	p.curve.Points = append(p.curve.Points, AllReducePoint{Bytes: bytes, Us: us[0]})
	return nil
}

// ncclTypeBytes are the element sizes of nccl-tests' type names.
var ncclTypeBytes = map[string]int64{
	"int8": 1, "uint8": 1, "char": 1, "f8e4m3": 1, "f8e5m2": 1,
	"half": 2, "bfloat16": 2,
	"int32": 4, "uint32": 4, "int": 4, "float": 4,
	"int64": 8, "uint64": 8, "double": 8,
}

// fieldName names the i-th field of a row.
func (c *ncclColumns) fieldName(i int) string {
	if i < len(c.names) {
		side := ""
		switch {
		case i >= c.sides[1].time:
			side = "the in-place "
		case i >= c.sides[0].time:
			side = "the out-of-place "
		}
		return side + c.names[i]
	}
	return "the timestamp"
}

// finish checks what only the whole output says: a table, its ranks.
func (p *ncclParser) finish() (*AllReduceCurve, error) {
	at := func(line int, format string, args ...any) error {
		return &ProfileError{File: p.name, Line: max(line, 1), Column: 1, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case p.cols == nil:
		return nil, at(p.line, "no all_reduce_perf table: no '#  size  count  type  redop ...' header line")
	case len(p.curve.Points) == 0:
		return nil, at(p.line, "the table under the header on line %d has no rows of more than 0 bytes", p.headerLine)
	case len(p.ranks) == 0:
		return nil, at(p.headerLine, "the output lists no '#  Rank' lines before its table, so the GPU count the curve is for is unknown: keep all_reduce_perf's whole output")
	case p.truncated > 0:
		return nil, at(p.truncated, "the rank list is cut short (nccl-tests truncates it at 2,048 characters a process), so the GPU count is unknown")
	}
	sizes := make([]int, 0, len(p.ranks))
	for _, n := range p.ranks {
		sizes = append(sizes, n)
	}
	slices.Sort(sizes)
	if sizes[0] != sizes[len(sizes)-1] {
		return nil, at(p.headerLine, "the ranks form groups of %d to %d GPUs (NCCL_TESTS_SPLIT): the curve needs one group size", sizes[0], sizes[len(sizes)-1])
	}
	p.curve.Ranks = sizes[0]
	p.curve.GPU = strings.Join(p.gpus, " + ")
	if err := p.curve.Validate(); err != nil {
		return nil, at(p.headerLine, "%v", err)
	}
	c := p.curve
	return &c, nil
}
