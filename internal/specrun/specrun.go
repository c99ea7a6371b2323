// Package specrun is the path between the engine and sim for speculative
// runs (engine/specrun.go, sim/specrun.go), which the exported API does
// not carry: a run of speculative steps of the speculative cohort alone,
// planned as one move, whose outcome lists each member once with its
// tokens over the run, and whose tokens a step the driver reads here, by
// member, to account each member's gaps. The engine sets the two
// functions in its init; only sim calls them. A leaf.
package specrun

// Allow lets eng (an *engine.Engine) plan speculative runs, or stops it.
// The driver promises to read nothing of the engine inside such a run
// (SyncTo, FreeBlocks, Outstanding, its cache), whose later steps take
// their blocks and count their tokens only as the driver collects or
// cuts it (CompleteUntil, Truncate, Complete), and to account an outcome
// of several steps from Of's counts.
var Allow func(eng any, on bool)

// Of is where eng (an *engine.Engine) keeps the counts of its last
// outcome of several speculative steps (Outcome.Steps > 1 with drafts):
// valid from that outcome until the next call into the engine.
var Of func(eng any) *Counts

// Counts are an outcome's speculative steps by member, each member in
// the order of Outcome.Emitted. Every step of a speculative run drafts
// K tokens for each member (K1 = 1 + K) and emits from 1 to K1 of them.
type Counts struct {
	K1 int
	// Total counts the steps of all the members by the tokens they
	// emitted: Total[n − 1] steps emitted n.
	Total []int32
	// Least is each member's fewest tokens in a step of the outcome.
	Least []uint8
	// Accepted holds each member's drafts accepted a step: member i's in
	// the outcome's j-th step is Accepted[i*Stride + j] (it emitted one
	// token more).
	Accepted []uint8
	Stride   int
}
