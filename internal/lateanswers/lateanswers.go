// Package lateanswers is the path between the engine and sim for
// caching a running answer's blocks of shared content late: at the
// request's release (its finish, abort or preemption) rather than by
// the decode that computes each (engine's prefix.go, lateCache). It
// changes nothing a driver can see only under a promise of the
// workload's, which the exported API has no word for, so the engine
// does it only for a driver that asked (Allow); only sim calls it. A
// leaf.
package lateanswers

// Allow lets eng (an *engine.Engine) cache the blocks of shared output
// (Request.PrefixCoversOutput) of each request added from then on at
// its release, or stops it. The driver promises that no request looks
// those blocks up (is added with their content in its prompt) before
// the request that computes them leaves the engine, and that it aborts
// no request: a conversation's next turn, which resends the answer,
// arrives only once the answer has ended (a closed-loop source). The
// engine does it only with the prefix cache on and none of KV events,
// a tier, remote KV, recorded steps, speculative decoding or runs
// through finishes, which could see a block cached (decideFast). Until
// the release, Engine.CachedBlocks counts none of the answer's blocks:
// the driver does not read it.
var Allow func(eng any, on bool)
