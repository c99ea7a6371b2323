package workload

import (
	"math"
	"time"
	"unsafe"
)

// A TargetRate replay reads its trace twice (timeFactor): a first pass
// counts the requests and finds the last instant, then the replay reads
// the file again from its start. The first pass's rows are the
// replay's (same bytes, same parser, same filters), so while they fit
// in rereadBytes the first pass keeps what each Trace.read returned and
// the replay takes them from memory instead of parsing the file again;
// a trace past the bound drops them and is read twice, as before, so
// memory stays bounded by the bound, not the file (a pass that may skim
// skims the lines after the bound: see skimmer). The slow
// twin is the second read of the file, which TestRereadIsTheFile and
// FuzzReread hold the kept reads to, request by request and error by
// error.

// rereadBytes bounds the memory the first pass keeps for the replay (a
// variable for the tests, which lower it to cross the bound).
var rereadBytes = 16 << 20

// keepFirstPass is false for the slow twin: every replay reads the file
// again, as before (set by the tests alone).
var keepFirstPass = true

// reread is what a first pass's reads returned, in order, through the
// read that ended the pass, kept in chunks of keptChunk reads: the
// first pass writes them at the end of the last chunk (add), the replay
// reads them from reads, the chunk it is in, and turns to the next
// (turn), letting go of each chunk it has read. One slice grown as the
// reads came cost Regime/MooncakeReplay its copies and its large
// allocations' clearing (growslice's, about 38 instructions a request,
// callgrind's marginal count), and held the array and its every earlier
// copy until the replay's end (Mooncake's 2,000 reads, 496 KB a 1,000).
type reread struct {
	reads  []keptRead   // the replay's: the rest of the chunk it reads
	chunks [][]keptRead // every chunk made, from chunks[read] on the replay's next; the last's reads are tail
	tail   []keptRead   // the first pass's: the reads of the chunk it writes
	read   int
	bytes  int
	clock  clockKind // the parser's clock after the first pass
}

// keptChunk is how many reads a chunk holds: 32 KiB of them, the
// runtime's largest small allocation; keptChunkReads is it, a variable
// for the tests, which lower it so that a few reads cross chunks.
const keptChunk = 32 << 10 / int(unsafe.Sizeof(keptRead{}))

var keptChunkReads = keptChunk

// add is a zero read after the kept ones, to write: a chunk's room is
// zero when made, and a read taken back (unadd) is cleared. (Small
// enough to inline, the new chunk made by more.)
func (k *reread) add() *keptRead {
	if len(k.tail) == cap(k.tail) {
		k.more()
	}
	k.tail = k.tail[:len(k.tail)+1]
	return &k.tail[len(k.tail)-1]
}

// more makes the next chunk, the full one kept in chunks.
func (k *reread) more() {
	k.tail = make([]keptRead, 0, keptChunkReads)
	k.chunks = append(k.chunks, k.tail)
}

// unadd takes back the read add gave last, cleared for the next add.
func (k *reread) unadd() {
	n := len(k.tail) - 1
	k.tail[n] = keptRead{}
	k.tail = k.tail[:n]
}

// turn moves the replay to the next chunk holding a read, letting go of
// the one it read; false when none is left. A chunk before the last is
// full.
func (k *reread) turn() bool {
	for k.read < len(k.chunks) {
		c := k.chunks[k.read]
		k.chunks[k.read] = nil
		if k.read++; k.read == len(k.chunks) {
			c, k.tail = k.tail, nil
		} else {
			c = c[:cap(c)]
		}
		if len(c) > 0 {
			k.reads = c
			return true
		}
	}
	return false
}

// keptRead is one Trace.read's result and the state it left.
type keptRead struct {
	req      Request
	rel      time.Duration
	ok       bool
	lastLine int
	rowsRead int
}

// keep records a read of the first pass; false when the reads kept pass
// rereadBytes (then the caller drops them).
func (k *reread) keep(t *Trace, r *Request, rel time.Duration, ok bool) bool {
	k.bytes += int(unsafe.Sizeof(keptRead{})) + 8*cap(r.PrefixHashes) + len(r.Class)
	if k.bytes > rereadBytes {
		return false
	}
	// Written in place: a keptRead literal was built on the stack and
	// then copied in.
	kr := k.add()
	kr.req, kr.rel, kr.ok, kr.lastLine, kr.rowsRead = *r, rel, ok, t.lastLine, t.rowsRead
	return true
}

// next sets *r to the replay's next read from the kept ones, with the
// state the first pass had after it. The replay stops where the first
// pass did (at the end, or at the same row past the window), so it never
// reads past the last one kept.
func (k *reread) next(t *Trace, r *Request) (time.Duration, bool) {
	if len(k.reads) == 0 && !k.turn() {
		return 0, false
	}
	kr := &k.reads[0]
	*r = kr.req
	rel, ok := kr.rel, kr.ok
	t.lastLine, t.rowsRead, t.p.clock = kr.lastLine, kr.rowsRead, k.clock
	kr.req.PrefixHashes, kr.req.Class = nil, "" // its references, for the collector (the rest is never read again)
	k.reads = k.reads[1:]
	return rel, ok
}

// nextKept is Next for the replay's next read taken from the first
// pass's (t.reread) when Next would yield it at once: a row kept, within
// the window, its arrival scaled in range. It sets *r, a zero Request,
// and the state Next leaves, as Next's way through read, reread.next and
// scale does, without those calls, the copy of the request a layer, or
// nextByTemplate's checks; for any other read it reports false and
// leaves the read for Next's way. Its twin is Next without it
// (rereadNextOn off), which checkReread and FuzzReread hold it to.
// Regime/MooncakeReplay, Next's way a read then this: see
// docs/fastpaths.md.
func (t *Trace) nextKept(k *reread, r *Request) bool {
	if t.done || len(k.reads) == 0 && !k.turn() {
		return false
	}
	kr, w := &k.reads[0], &t.cfg.Transform
	rel := kr.rel
	if !kr.ok || rel < w.WindowStart || w.WindowEnd > 0 && rel >= w.WindowEnd {
		return false
	}
	at := rel - w.WindowStart
	if t.factor != 1 && at != 0 {
		x := math.Round(float64(at) * t.factor)
		if !(x < math.MaxInt64) { // scale's error, on Next's way
			return false
		}
		at = time.Duration(x)
	}
	*r = kr.req
	t.lastLine, t.rowsRead, t.p.clock = kr.lastLine, kr.rowsRead, k.clock
	kr.req.PrefixHashes, kr.req.Class = nil, "" // as next drops them
	k.reads = k.reads[1:]
	r.Arrival = at
	if t.cfg.Columns.ID == "" {
		r.ID = t.next
	}
	t.next++
	t.count++
	t.track.add(rel)
	return true
}

// rereadNextOn is false for nextKept's twin: every kept read goes Next's
// way (set by the tests alone).
var rereadNextOn = true

// keepRun keeps, for span, the lines of a first pass that keeps its
// reads (t.kept) that the replay's template takes and nextByTemplate
// would yield at once, as it keeps them, and counts them, with the state
// Next leaves, after n requests, the last at last: it writes each read
// in its kept place, without the calls and copies a line takes through
// Next (the request returned, then copied into its keptRead). It stops
// at the end of the input, at a line for Next to read, which j holds
// (held), or after the read that passes rereadBytes, where it drops the
// reads kept as keep does. Its twin is span without it (keepRunOn off),
// which checkReread holds it to.
func (t *Trace) keepRun(j *jsonRows, n int, last time.Duration) (int, time.Duration) {
	k := t.kept
	if t.done || !t.started || !t.rebased || t.reread != nil || t.factor != 1 || !keptByTemplate ||
		!j.skim.ids || !j.skim.ready || j.held {
		return n, last
	}
	w := &t.cfg.Transform
	for {
		text, raw, ok := j.skimNext()
		if text == nil {
			break
		}
		rel := raw - t.origin
		if !ok || rel < t.prev || rel < w.WindowStart || w.WindowEnd > 0 && rel >= w.WindowEnd {
			j.held, j.cur = true, text
			break
		}
		j.ln++
		t.rowsRead++
		t.p.clock = clockNumber
		t.prev, t.lastLine = rel, j.ln
		kr := k.add()
		j.skim.request(&t.p, &kr.req)
		kr.rel, kr.ok, kr.lastLine, kr.rowsRead = rel, true, t.lastLine, t.rowsRead
		t.next++
		t.count++
		t.track.add(rel)
		n, last = n+1, rel-w.WindowStart
		if k.bytes += int(unsafe.Sizeof(keptRead{})) + 8*cap(kr.req.PrefixHashes) + len(kr.req.Class); k.bytes > rereadBytes {
			t.dropKept()
			break
		}
	}
	return n, last
}

// keepRunOn is false for keepRun's twin: span reads every line of a
// first pass that keeps its reads through Next (set by the tests alone).
var keepRunOn = true

// keepRunCSV is keepRun for a CSV trace: span's rows of a first pass
// that keeps its reads, each a plain line (csvRows.plainLine), parsed
// (parse, rebase and the order's check, as readRow and readFile do) into
// its kept place, kept, and counted as Next counts it, without the calls
// through Next, read, readFile and readRow or the copies of the request
// a layer. It stops at the end of the input or a line that is not plain
// (for Next's way, through csv.Reader), at a row's error (the replay's
// end, which Next then returns), past the window's end, or after the
// read that passes rereadBytes. Its twin is span without it (keepRunOn
// off), which checkReread holds it to.
func (t *Trace) keepRunCSV(c *csvRows, n int, last time.Duration) (int, time.Duration) {
	k := t.kept
	if t.done || !t.started || !t.rebased || t.reread != nil || t.factor != 1 || t.cfg.Sort || !c.plain {
		return n, last
	}
	w := &t.cfg.Transform
	for c.plainLine() {
		t.rowsRead++
		kr := k.add()
		raw, keep, err := t.p.parse(c, &kr.req)
		if err == nil && !keep {
			k.unadd() // a row the filters drop, as readRow drops it
			continue
		}
		var rel time.Duration
		if err == nil {
			rel, err = t.rebase(c, raw)
		}
		if err == nil && rel < t.prev {
			err = t.unsorted(c.ln, rel)
		}
		if err != nil { // not kept: the replay ends with it (Next returns it)
			k.unadd()
			t.done, t.err = true, err
			break
		}
		t.prev, t.lastLine = rel, c.ln
		kr.rel, kr.ok, kr.lastLine, kr.rowsRead = rel, true, t.lastLine, t.rowsRead
		k.bytes += int(unsafe.Sizeof(keptRead{})) + 8*cap(kr.req.PrefixHashes) + len(kr.req.Class)
		over := k.bytes > rereadBytes
		if over {
			t.dropKept() // the read is yielded all the same
		}
		// Not before the window's start: at or after t.prev, the row
		// Next yielded last.
		if w.WindowEnd > 0 && rel >= w.WindowEnd {
			t.done = true
			break
		}
		t.next++
		t.count++
		t.track.add(rel)
		n, last = n+1, rel-w.WindowStart
		if over {
			break
		}
	}
	return n, last
}
