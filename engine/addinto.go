package engine

import (
	"time"

	"github.com/servesim/servesim/internal/addinto"
)

// The in-place Add (internal/addinto): sim's runner writes each request
// it sends into the seq that will hold it (staged), and commitInPlace
// adds it as Add would, without the Request Add takes by value and
// copies into its seq. Add is its twin: commitInPlace hands Add every
// request that Add would refuse or treat apart (TestAddIntoEqualsAdd and
// FuzzEngine here; sim's TestAddIntoEqualsAdd for whole runs).
func init() {
	addinto.Next, addinto.Commit, addinto.CommitRemote = (*Engine).nextInPlace, (*Engine).commitInPlace, (*Engine).commitRemote
}

// nextInPlace is the record the next commitInPlace adds, zero (as
// recycle leaves a spare seq, or new): the staged seq, taken from the
// spares at the first call. It stays staged until a commit adds it.
func (e *Engine) nextInPlace() *Request {
	if e.staged == nil {
		e.staged = e.newSeq()
	}
	return &e.staged.req
}

// commitInPlace is Add(now, r) of the request r written into the record
// nextInPlace (or the commit before) returned, and returns the record of
// the next request, zero. A request Add would refuse or treat apart, or
// whose Ref is past the Ref table's dense part, goes to commitApart; any
// other takes Add's last steps in place. (One call a request: a Next and
// a Commit a request, each through an interface, cost as much as the
// copy they saved, 262.5 then 262.8 instructions a request in send and
// its calls, RunAtlas.)
func (e *Engine) commitInPlace(now time.Duration) (*Request, error) {
	s := e.staged
	r := &s.req
	// A duplicate Ref read in the Ref table's dense part at once
	// (refTable.get, then put's usual case below: Commit 113 then 97
	// instructions a request); with a map, which may hold it, the request
	// goes to Add.
	dense := e.reqs.dense
	if !e.plain(r) || uint32(r.Ref) >= uint32(len(dense)) || dense[r.Ref] != nil || e.reqs.sparse != nil {
		return e.commitApart(now)
	}
	r.Output = min(r.Output, e.cfg.MaxModelLen-r.Input) // Add's cut at MaxModelLen
	s.order, s.known = e.nextSeq, r.Input
	s.keyed = e.sharedBlocks(r) // setShared's lines, inline here: its call cost RunAtlas 10 instructions a request (5,019 then 5,009, the budget test)
	s.shared = s.keyed
	if e.late && r.PrefixCoversOutput {
		e.lateShared(s)
	}
	e.outstanding += s.left()
	e.nextSeq++
	dense[r.Ref] = s // refTable.put's usual case
	e.reqs.n++
	e.waiting.push(s)
	e.staged = e.newSeq()
	return &e.staged.req, nil
}

// plain says whether Add would accept r at once and add it as its
// common case, its Ref aside: valid, with room for a token, not Remote,
// chunked prefill on and the waiting queue not full.
func (e *Engine) plain(r *Request) bool {
	return r.Input > 0 && r.Output > 0 && (r.Deadline == 0 || r.Deadline >= r.Arrival) && r.Input < e.cfg.MaxModelLen &&
		!r.Remote && !e.cfg.DisableChunkedPrefill && (e.cfg.MaxWaiting <= 0 || e.waiting.len() < e.cfg.MaxWaiting)
}

// commitApart is commitInPlace of a request it does not take as it is:
// one whose Ref the Ref table's dense part would grow for (put) has the
// table grown as put grows it, then is committed; any other is handed
// to Add, copied, and its record zeroed again for the next.
func (e *Engine) commitApart(now time.Duration) (*Request, error) {
	r := &e.staged.req
	if t := &e.reqs; e.plain(r) && t.sparse == nil && r.Ref >= 0 && int(r.Ref) >= len(t.dense) && int(r.Ref) < 2*len(t.dense)+1024 {
		t.dense = append(t.dense, make([]*seq, int(r.Ref)+1-len(t.dense))...)
		return e.commitInPlace(now)
	}
	q := *r
	*r = Request{}
	return r, e.Add(now, q)
}

// commitRemote is commitInPlace of a Remote request (addinto's
// CommitRemote: a decode replica's, handed over by its prefill replica):
// one Add would accept at once, its Ref in the Ref table's dense part
// and free, takes Add's and addRemote's steps in place, without the
// Request Add takes by value and copies into its seq; any other goes to
// commitApart, and so to Add. Add accepts a Remote request when it is
// valid, with room for a token, on a KV consumer, serves 2 output tokens
// or more once cut at MaxModelLen (so Input < MaxModelLen and Output >
// 0), fits the budget without chunked prefill, and the waiting queue is
// not full; a Deadline (a handed-over request has none) goes to Add.
// Regime/Disagg 10,593 then 10,548 instructions a request (servesim's
// own 10,570 then 10,530, the budget test); as a case of commitInPlace,
// through its tests and commitApart's, the route cost more than Add
// (own 10,585). Its last steps are addRemote's (queueRemote), not
// commitInPlace's, whose tail as a call cost RunAtlas 11 instructions a
// request (servesim's own 4,721 then 4,733).
//
// The twin is Add (sim's noAddInto; TestAddIntoEqualsAdd here and in
// sim).
func (e *Engine) commitRemote(now time.Duration) (*Request, error) {
	s := e.staged
	r := &s.req
	dense, out := e.reqs.dense, min(r.Output, e.cfg.MaxModelLen-r.Input)
	if !r.Remote || r.Input <= 0 || out < 2 || r.Deadline != 0 || !e.cfg.RemoteKV ||
		e.cfg.DisableChunkedPrefill || e.cfg.MaxWaiting > 0 && e.waiting.len() >= e.cfg.MaxWaiting ||
		uint32(r.Ref) >= uint32(len(dense)) || dense[r.Ref] != nil || e.reqs.sparse != nil {
		return e.commitApart(now)
	}
	r.Output = out // Add's cut at MaxModelLen
	e.queueRemote(s)
	e.staged = e.newSeq()
	return &e.staged.req, nil
}
