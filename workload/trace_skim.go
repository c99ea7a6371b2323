package workload

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"time"
	"unsafe"

	"github.com/servesim/servesim/internal/ascend"
)

// A TargetRate replay's first pass (timeFactor) needs each row's arrival
// alone: it counts the requests and finds the last instant. On a JSON
// Lines trace that maps no column but the arrival, the token counts and
// the hash ids (Mooncake's), the pass keeps its reads for the replay
// while they fit in rereadBytes, as any first pass does (see reread):
// the replay reads each line whole, so the pass reads it once for both.
// Past the bound it drops them and skims the lines after (Trace.skimPast):
// a line whose keys are the first line's, byte for byte, and whose
// numbers are plain integers in range; it reads the arrival and the
// token counts, and steps over the hash id list to its ']' without
// reading the ids, the most of a line's bytes (about 30 ids a Mooncake
// line). The replay then parses the file again from its start, whole.
// (Until issue 41's fifteenth round the pass skimmed from its first
// line and kept nothing, so that a replay that stops early parsed only
// the lines it replays; counted whole, Regime/MooncakeReplay's file of
// 2,000 lines took 12,355 instructions a request so, 12,084 kept.)
//
// A skimmed line holds the keys and numbers the full parse would read
// (its members are the first line's, in order, with no string in a list
// that could hide one), so a trace the full parse accepts gives the same
// count, the same instants and the same replay, byte for byte. What the
// skim does not read is a hash id list's contents: a malformed list (an
// id that is not an unsigned integer) is reported by the replay, at its
// line, when the replay reaches it, not by NewTrace (a replay that stops
// before that line never reports it; vLLM's bench serve, which loads a
// whole dataset first, would refuse it). Any line the skim does not take
// is parsed whole, and its errors are NewTrace's as before; a skimming
// pass that ends in an error is read again whole (timeFactor), so the
// errors NewTrace returns are the full pass's. The slow twin is the full
// first pass (skimFirstPass off), which checkSkim (TestRereadIsTheFile,
// FuzzReread), TestSkimIsTheFullPass and FuzzSkimLine hold it to.

// skimFirstPass is false for the slow twin: the first pass parses every
// line whole (set by the tests alone).
var skimFirstPass = true

// skimmer reads a line's arrival by the first flat line's template
// (learn); it reads none until it has one.
//
// With ids, it is a replay's (jsonRows.skim, set by newTrace when
// replayTemplate allows): it reads a line's token counts and its hash
// id list too, the list by flatArray as flatObject reads it, and takes
// only a line whose list is plain integers. Such a line is what
// flatObject and plainRow read (its members are the template's, the
// mapped columns once each, as plain integers in range), to the same
// request; parse writes it from in, out and ints. Every other line is
// read by flatObject as before. Its slow twin is the replay without it
// (replayTemplate off), which checkReread, checkTemplate and
// FuzzTemplateLine hold it to. Regime/MooncakeReplay, flatObject's
// fields, hints and plainRow a line then this: 14,218 then 13,688
// instructions a request (TestInstructionBudget, 2026-12-06).
type skimmer struct {
	p       *parser
	ready   bool
	members []skimMember
	tail    string        // the bytes after the last value
	unit    time.Duration // the arrival's unit (parser.unit)
	ids     bool          // a replay's: counts and hash ids read too
	list    bool          // the template has the hash id list (ids)
	in, out int           // the line's token counts (ids)
	ints    []uint64      // the line's hash ids (ids)
	runs    int           // flatArray's bound on their runs, 0 for none (ids)
	inChunk bool          // read may read a line in the chunk: ids, the template's ends plain
	four    bool          // inChunk, and the template is readFour's
}

// replayTemplate is false for the slow twin of a replay's template (see
// skimmer): every line is read by flatObject (set by the tests alone).
var replayTemplate = true

// skimMember is one member of the template: the bytes before its value
// (keyMemo's: the separator, the key, ':' and white space), how its
// value is read, and the largest a plain integer value may be.
type skimMember struct {
	before string
	w      words24 // before as words, when it has 8 to 24 bytes
	kind   skimKind
	max    uint64
}

// skimKind says how a member's value is read.
type skimKind uint8

const (
	skimArrival skimKind = iota // the arrival: a plain integer, at most the unit's limit
	skimInput                   // the input token count: a plain integer, at most MaxInt32
	skimOutput                  // the output token count, as the input's
	skimList                    // the hash ids: a list, stepped over to its first ']' (read, with ids)
)

// skims says whether the first pass of cfg may skim: JSON Lines, no
// filter, and no column mapped but the arrival, the token counts and
// the hash ids (plainRow's rows), whose values it reads.
func skims(cfg TraceConfig) bool {
	return skimFirstPass && plainColumns(cfg)
}

// plainColumns says whether cfg reads JSON Lines in file order, with no
// filter, mapping no column but the arrival, the token counts and the
// hash ids: plainRow's rows, which a skimmer reads.
func plainColumns(cfg TraceConfig) bool {
	c := &cfg.Columns
	return cfg.Format == JSONL && !cfg.Sort && len(cfg.Filters) == 0 && c.ID == "" && c.Conversation == "" &&
		c.Turn == "" && c.Priority == "" && c.Class == "" && c.Failed == "" && c.BlockTokensColumn == ""
}

// learn takes the template of j's line, a flat line just read: each
// member's bytes before its value, and how its value is read. A line
// whose keys are not the mapped columns once each, as plain integers
// (the hash ids a list), leaves the skimmer without one, and every line
// is parsed whole.
func (s *skimmer) learn(j *jsonRows) {
	s.ready, s.four = false, false
	c := &s.p.cfg.Columns
	if len(j.memo.segs) != len(j.fields) {
		return
	}
	unit, limit := s.p.unit()
	s.members, s.unit = s.members[:0], unit
	seen := map[string]bool{}
	for n := range j.fields {
		f := &j.fields[n]
		key := string(f.key(j.text))
		if seen[key] {
			return // a key given twice: json.Unmarshal keeps the last
		}
		seen[key] = true
		m := skimMember{before: string(j.memo.segs[n].b), w: wordsOf(j.memo.segs[n].b)}
		switch key {
		case c.Arrival:
			m.kind, m.max = skimArrival, uint64(limit)
		case c.Input:
			m.kind, m.max = skimInput, math.MaxInt32
		case c.Output:
			m.kind, m.max = skimOutput, math.MaxInt32
		case c.PrefixHashes:
			m.kind = skimList
		default:
			return // a column not mapped: left to the full parse
		}
		if (m.kind == skimList) != (f.lo >= 0) || m.kind != skimList && f.lo != scalarInt {
			return
		}
		s.members = append(s.members, m)
	}
	if !seen[c.Arrival] || !seen[c.Input] || !seen[c.Output] {
		return
	}
	if s.ids {
		// A replay's: a value is one column's, and the hash ids, when
		// mapped, are on the line (plainRow reads a line without them
		// through parse's get).
		distinct := c.Arrival != c.Input && c.Arrival != c.Output && c.Input != c.Output &&
			(c.PrefixHashes == "" || c.PrefixHashes != c.Arrival && c.PrefixHashes != c.Input && c.PrefixHashes != c.Output)
		if !distinct || c.PrefixHashes != "" && !seen[c.PrefixHashes] {
			return
		}
		s.list = c.PrefixHashes != ""
	}
	s.tail = string(j.text[j.fields[len(j.fields)-1].v1:])
	// A line the template takes begins with its first member's bytes
	// before the value and ends with its tail: plain at both ends
	// (plainEnds) when these are; a replay's (ids) may then be read in
	// the scanner's chunk (read's inChunk).
	s.inChunk = s.ids && len(s.members[0].before) > 0 && len(s.tail) > 0 && plainEnds([]byte{s.members[0].before[0], s.tail[len(s.tail)-1]})
	s.four = s.inChunk && len(s.members) == 4 && len(s.tail) == 1
	for k, m := range s.members {
		s.four = s.four && m.kind == skimKind(k) && m.w.n > 0
	}
	s.ready = true
}

// line returns the arrival of text, a line whose members are the
// template's (its bytes before each value, and after the last), each
// value a plain integer in its column's range or (the hash ids) a list
// without a string in it, with ok; false for any other line, which is
// then parsed whole.
func (s *skimmer) line(text []byte) (raw time.Duration, ok bool) {
	raw, _, ok = s.read(text, false)
	return raw, ok
}

// read is line for text, a line (inChunk false), or, inChunk, the
// scanner's chunk from the line's first byte on, its lines after it
// (a replay's skimmer, ids, alone): the line is then text[:end], where
// the template's tail is followed by '\n', found in the same pass as
// the line's values (jsonRows.skimNext).
//
// A line the chunk's way takes is the line scanText cuts, and one it
// would take: the bytes before each value and the tail are a line's
// (learn's, without '\n'), numbers are digits, and a hash id list is
// taken only when flatArray read no white space in it (its ids read by
// plainRun from the '[' on, runs not 0), so that no '\n' lies before
// end; and its ends are plain (plainEnds, as scanText cuts it) when the
// template's are (s.inChunk). Any other line is left to scanText's way.
// A line's hash ids may be counted in runs (runs) where line leaves them
// to skimmer.request's scan: the same promise.
func (s *skimmer) read(text []byte, inChunk bool) (raw time.Duration, end int, ok bool) {
	if !s.ready || s.p.clock == clockDate || inChunk && !s.inChunk {
		return 0, 0, false
	}
	// members is a local: with s.members, reloaded after each compare's
	// call, the line took 27 instructions a request more in
	// Regime/MooncakeReplay (1,683 then 1,656).
	i, members := 0, s.members
	for k := range members {
		m := &members[k]
		if m.w.n > 0 {
			if !m.w.at(text, i) {
				return 0, 0, false
			}
		} else if len(text)-i < len(m.before) || string(text[i:i+len(m.before)]) != m.before {
			return 0, 0, false
		}
		i += len(m.before)
		if m.kind == skimList {
			// To the list's first ']': with no '"' before it, no string
			// in the list holds a ']' or a key, so the members that
			// follow are the line's.
			if i >= len(text) || text[i] != '[' {
				return 0, 0, false
			}
			if s.ids { // a replay's: the list read whole, plain integers alone
				plain := false
				if i, s.ints, plain, s.runs = flatArray(text, i, s.p.idRoom()); i < 0 || !plain || inChunk && s.runs == 0 {
					return 0, 0, false // inChunk: white space read, which may be a '\n'
				}
				continue
			}
			e := bytes.IndexByte(text[i:], ']')
			if e < 0 || bytes.IndexByte(text[i:i+e], '"') >= 0 {
				return 0, 0, false
			}
			i += e + 1
			continue
		}
		// A plain integer (digits only, at most 19, without leading
		// zero), as flatObject reads one: 1 to 7 digits from one 8-byte
		// load (leadingDigits), more by skimDigits. The load reads
		// through a pointer, its 8 bytes in text (i+8 <= len(text)),
		// with no bounds check: Regime/MooncakeReplay, servesim's own
		// count, 11,348 then 11,310 instructions a request (skimmer.line
		// 547 then 509; SERVESIM_BUDGET_FUNCS).
		n, x := 0, uint64(0)
		if i+8 <= len(text) {
			if w := binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(text)), i))[:]); m.kind == skimArrival || s.ids {
				n, x = leadingDigits(w)
			} else {
				// A first pass's token count, in range at up to 7
				// digits (x 0): its value unread, the pass took 69
				// instructions a request less in Regime/MooncakeReplay
				// (13,502 then 13,433).
				n = digitCount(w)
			}
		}
		if n == 0 {
			n, x = skimDigits(text, i)
		}
		if n == 0 || n > 1 && text[i] == '0' || x > m.max {
			return 0, 0, false
		}
		i += n
		switch m.kind {
		case skimArrival:
			raw = time.Duration(x) * s.unit
		case skimInput:
			s.in = int(x)
		case skimOutput:
			s.out = int(x)
		}
	}
	if inChunk {
		// The tail, then the line's '\n'.
		end = i + len(s.tail)
		if end >= len(text) || text[end] != '\n' || len(s.tail) == 1 && text[i] != s.tail[0] || len(s.tail) > 1 && string(text[i:end]) != s.tail {
			return 0, 0, false
		}
		return raw, end, true
	}
	// The usual tail, a '}' alone, compared without runtime.memequal:
	// 23 instructions a request less (13,094 then 13,071).
	if rest := text[i:]; len(rest) != len(s.tail) || len(rest) == 1 && rest[0] != s.tail[0] || len(rest) > 1 && string(rest) != s.tail {
		return 0, 0, false
	}
	return raw, len(text), true
}

// readFour is read for text in the scanner's chunk (inChunk) by a
// template of four members, Mooncake's: the arrival, the input and the
// output token counts, each a plain integer, then the hash id list,
// each after its 8 to 24 bytes (words24), and a tail of one byte (s.four,
// set by learn). It reads a line as read does, to the same arrival,
// end, counts, ids and runs, and takes the lines read takes, without
// read's loop over the members and its tests of each one's kind and
// how its bytes are held: Regime/MooncakeReplay, servesim's own count,
// 10,399 then 10,266 instructions a request (read 532, then readFour
// 392; SERVESIM_BUDGET_FUNCS). Its twin is read (fourOn off), which
// checkChunkRead holds it to line by line, and checkReread replay by
// replay.
func (s *skimmer) readFour(text []byte) (raw time.Duration, end int, ok bool) {
	if s.p.clock == clockDate {
		return 0, 0, false
	}
	m := (*[4]skimMember)(s.members)
	var v [3]uint64 // the arrival and the token counts
	i := 0
	for k := range v {
		if !m[k].w.at(text, i) {
			return 0, 0, false
		}
		// A plain integer, as read reads one (its leading zero read
		// from the word loaded).
		i += m[k].w.n
		n, x := 0, uint64(0)
		if i+8 <= len(text) {
			w := binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(text)), i))[:])
			if n, x = leadingDigits(w); n > 1 && byte(w) == '0' {
				return 0, 0, false
			}
		}
		if n == 0 {
			if n, x = skimDigits(text, i); n == 0 || n > 1 && text[i] == '0' {
				return 0, 0, false
			}
		}
		if x > m[k].max {
			return 0, 0, false
		}
		i, v[k] = i+n, x
	}
	if !m[3].w.at(text, i) {
		return 0, 0, false
	}
	if i += m[3].w.n; i >= len(text) || text[i] != '[' {
		return 0, 0, false
	}
	// The usual list, read whole by plainRun from the '[' on (closed),
	// as flatArray reads it then; else read by flatArray. Each through
	// flatArray: Regime/MooncakeReplay, servesim's own count, 10,266
	// (with plainRun's closed for a run's last id alone, 54 % of lines
	// then read twice: 10,437), then 10,194 (SERVESIM_BUDGET_FUNCS).
	if j, ids, runs, closed := plainRun(text, i+1, s.p.idRoom()); closed {
		i, s.ints, s.runs = j, ids, runs
	} else {
		plain := false
		if i, s.ints, plain, s.runs = flatArray(text, i, s.p.idRoom()); i < 0 || !plain || s.runs == 0 {
			return 0, 0, false // as read: white space read, which may be a '\n'
		}
	}
	// The tail, then the line's '\n'.
	if i+1 >= len(text) || text[i] != s.tail[0] || text[i+1] != '\n' {
		return 0, 0, false
	}
	s.in, s.out = int(v[1]), int(v[2])
	return time.Duration(v[0]) * s.unit, i + 1, true
}

// fourOn is false for readFour's twin: every line in the chunk is read
// by read (set by the tests alone).
var fourOn = true

// request writes to *req, a zero Request, what p reads of the line a
// replay's skimmer (ids) took last, but its arrival.
func (s *skimmer) request(p *parser, req *Request) {
	req.InputTokens, req.OutputTokens = s.in, s.out
	req.Failed = s.in == 0 || s.out == 0
	if s.list {
		p.keepIDs(req, s.ints)
		p.blockTokens(req)
		if uint(s.runs-1) < 2 || s.runs == 0 && twoRuns(req.PrefixHashes) { // the count, else the scan
			req.PrefixTwoRuns = ascend.TwoRuns()
		}
	}
}

// skimDigits is the number of digits at i and their value, when 1 to 19;
// 0 otherwise.
func skimDigits(text []byte, i int) (n int, x uint64) {
	j := i
	for ; i < len(text) && text[i]-'0' < 10; i++ {
		x = x*10 + uint64(text[i]-'0')
	}
	if n = i - j; n > 19 {
		return 0, 0
	}
	return n, x
}

// skimRun counts, for span, the lines of a first pass that skims (j
// being t's rows) that the skim takes and Next would count at once
// (after the first kept row, in order, before the window's end), with
// the state Next leaves (the rows read, the last row, the clock, the
// count and the recorded instants), after n requests, the last at last.
// It stops at the end of the input, or at a line for Next to read, which
// j holds (held) for Next's call. It saves the calls a line takes
// through Next (Next, read, readFile, readRow, parse, rebase, scale) and
// the request each returns. Its twin is span without it (skimRunOn
// off), which checkSkimSpan holds it to.
func (t *Trace) skimRun(j *jsonRows, n int, last time.Duration) (int, time.Duration) {
	if t.done || t.factor != 1 || !t.started {
		return n, last // Next reads the next line
	}
	// The lines counted are in order: each at least lo, the last's
	// arrival and the window's start, and before end, the window's. The
	// state Next leaves is written after the run (held in locals, it is
	// not reloaded after each line's calls): a run of k lines, the first
	// at first. Regime/MooncakeReplay, the state written a line then
	// after the run: 13,393 then 13,331 instructions a request.
	w := &t.cfg.Transform
	lo, end := max(t.prev, w.WindowStart), w.WindowEnd
	if end <= 0 {
		end = math.MaxInt64 // an arrival there goes Next's way, which yields it as well
	}
	k, first, lastLine := 0, time.Duration(0), 0
	for text := j.scanText(); text != nil; text = j.scanText() {
		raw, ok := j.skim.line(text)
		rel := raw - t.origin
		if !ok || rel < lo || rel >= end {
			j.held, j.cur = true, text
			break
		}
		j.ln++
		if k == 0 {
			first = rel
		}
		k, lo, lastLine = k+1, rel, j.ln
	}
	if k > 0 {
		t.rowsRead += k
		t.p.clock = clockNumber
		t.prev, t.lastLine = lo, lastLine
		t.next += uint64(k)
		t.count += k
		t.track.addRun(first, lo, k)
		n, last = n+k, lo-w.WindowStart
	}
	return n, last
}

// nextByTemplate is Next for the next line when the replay's template
// takes it (see skimmer) and Next would yield it at once: after the
// first kept row, in order, within the window, its arrival scaled in
// range, with no first pass's reads read again. It sets *r, a zero
// Request, and the state Next leaves (the rows read, the last row, the
// clock, the count and the recorded instants), and reports true; in a
// first pass that keeps its reads it keeps the line's, as read does
// (Trace.keep, before the arrival and id are set): Regime/MooncakeReplay,
// the first pass's lines kept through Next's way then this, 12,084 then
// 11,832 instructions a request (its twin keptByTemplate off).
// For any other line it reports false, and j holds the line (held) for
// Next's way through read, readFile, readRow, parse, rebase and scale,
// the calls it saves. Its twin is Next without it (templateNextOn off),
// which checkTemplate holds it to. Regime/MooncakeReplay, Next's way a
// line then this: 13,688 then 13,530 instructions a request
// (TestInstructionBudget, 2026-12-06).
func (t *Trace) nextByTemplate(j *jsonRows, r *Request) bool {
	if t.done || !t.started || !t.rebased || t.reread != nil || t.kept != nil && !keptByTemplate || !j.skim.ids || !j.skim.ready || j.held {
		return false
	}
	text := j.scanText()
	if text == nil {
		return false
	}
	raw, ok := j.skim.line(text)
	rel, w := raw-t.origin, &t.cfg.Transform
	if !ok || rel < t.prev || rel < w.WindowStart || w.WindowEnd > 0 && rel >= w.WindowEnd {
		j.held, j.cur = true, text
		return false
	}
	at := rel - w.WindowStart
	if t.factor != 1 && at != 0 {
		x := math.Round(float64(at) * t.factor)
		if x >= math.MaxInt64 { // scale's error, on Next's way
			j.held, j.cur = true, text
			return false
		}
		at = time.Duration(x)
	}
	j.ln++
	t.rowsRead++
	t.p.clock = clockNumber
	j.skim.request(&t.p, r)
	t.prev, t.lastLine, t.started = rel, j.ln, true
	if t.kept != nil {
		t.keep(r, rel, true) // as read keeps it: before its arrival and id
	}
	r.Arrival = at
	r.ID = t.next // Columns.ID is not mapped (plainColumns)
	t.next++
	t.count++
	t.track.add(rel)
	return true
}

// skimNext is, for keepRun, the next line that is not empty (scanText's)
// and its arrival by the replay's template (skimmer.line), with ok when
// the template takes it; nil at the end of the input. The usual line,
// in the chunk, is cut where the template's read of it ends at a '\n'
// (skimmer.read's inChunk), without bytes.IndexByte's search for that
// '\n' and scanText's call first: Regime/MooncakeReplay, the budget
// test's count less the runtime's clearing (its noise), about 75
// instructions a request less (indexbytebody 80 then 2, scanText 60 then
// none; servesim's own count 10,582 then 10,585: skimmer.line 509 then
// read 532, keepRun 103 then 90 and skimNext 45, flatArray 150 then 92,
// plainRun 137 then 196, which reads the line's last id from 8 bytes of
// the chunk; SERVESIM_BUDGET_FUNCS). Its twin is scanText then line
// (chunkSkim off), which checkReread (TestRereadIsTheFile, FuzzReread,
// TestSkimOnVariedTemplates) holds it to; TestChunkReadIsTheLine and
// FuzzChunkRead hold read's inChunk to line, line by line. Any other
// line goes scanText's way.
func (j *jsonRows) skimNext() (text []byte, raw time.Duration, ok bool) {
	if c := j.chunk[j.at:]; chunkSkim && len(c) > 0 {
		end := 0
		if j.skim.four && fourOn {
			raw, end, ok = j.skim.readFour(c)
		} else {
			raw, end, ok = j.skim.read(c, true)
		}
		if ok {
			j.at += end + 1
			return c[:end], raw, true
		}
	}
	if text = j.scanText(); text == nil {
		return nil, 0, false
	}
	raw, ok = j.skim.line(text)
	return text, raw, ok
}

// chunkSkim is false for skimNext's twin: each line cut by scanText,
// then read by the template (set by the tests alone).
var chunkSkim = true

// scanText scans to the next line that is not empty, past the empty
// ones (counted): its bytes, trimmed; nil at the end of the input.
// skimRun and nextByTemplate share it at a call a line (over the
// inliner's budget): Regime/MooncakeReplay 13,331 instructions a
// request with the loop written in each, 13,371 with it.
func (j *jsonRows) scanText() []byte {
	// The usual line: in the chunk, ended by a '\n', its ends plain (no
	// '\r' to drop, nothing to trim), as scan and the loop read it.
	if c := j.chunk[j.at:]; len(c) > 0 {
		if k := bytes.IndexByte(c, '\n'); k > 0 && plainEnds(c[:k]) {
			j.at += k + 1
			return c[:k]
		}
	}
	for {
		text, ok := j.scan()
		if !ok {
			return nil
		}
		if !plainEnds(text) {
			text = bytes.TrimSpace(text)
		}
		if len(text) > 0 {
			return text
		}
		j.ln++
	}
}

// keptByTemplate is false for the twin of a first pass's lines read by
// nextByTemplate and kept there: they go Next's way, through read,
// which keeps them (set by the tests alone).
var keptByTemplate = true

// templateNextOn is false for nextByTemplate's twin: every line goes
// Next's way (set by the tests alone).
var templateNextOn = true

// skimRunOn is false for skimRun's twin: span counts every line through
// Next (set by the tests alone).
var skimRunOn = true

// skimmedPass is the input of a first pass that skimmed (timeFactor):
// where it starts and the pass's configuration.
type skimmedPass struct {
	rs    io.ReadSeeker
	start int64
	first TraceConfig
}

// skimmedErr is err, an error of the replay that no first pass finds (an
// arrival scaled past time.Duration's range by the factor the pass
// found), unless the first pass skimmed and a whole pass refuses the
// trace: then the whole pass's error, the one NewTrace returns without
// the skim (a malformed hash id list the skim stepped over, on a line
// after this one: the replay does not reach it). Its slow twin is the
// whole first pass (skimFirstPass off), which checkSkim holds the replay
// to. It reads the input again on this error alone: a replay without
// one pays nothing.
func (t *Trace) skimmedErr(err error) error {
	s := t.skimmed
	if s == nil {
		return err
	}
	if _, serr := s.rs.Seek(s.start, io.SeekStart); serr != nil {
		return err
	}
	if _, _, _, ferr := firstPass(s.rs, t.name, s.first, false); ferr != nil && !errors.Is(ferr, errRewind) {
		return ferr
	}
	return err
}
