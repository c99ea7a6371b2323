package workload

import (
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
// read that ended the pass.
type reread struct {
	reads []keptRead
	bytes int
	clock clockKind // the parser's clock after the first pass
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
	// Appended, then written in place: a keptRead literal was built on
	// the stack and then copied in.
	k.reads = append(k.reads, keptRead{})
	kr := &k.reads[len(k.reads)-1]
	kr.req, kr.rel, kr.ok, kr.lastLine, kr.rowsRead = *r, rel, ok, t.lastLine, t.rowsRead
	return true
}

// next sets *r to the replay's next read from the kept ones, with the
// state the first pass had after it. The replay stops where the first
// pass did (at the end, or at the same row past the window), so it never
// reads past the last one kept.
func (k *reread) next(t *Trace, r *Request) (time.Duration, bool) {
	if len(k.reads) == 0 {
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
