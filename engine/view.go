package engine

import (
	"math"
	"time"

	"github.com/servesim/servesim/internal/ascend"
)

// What a router reads of a replica, without changing it (no LRU touch, no
// scratch state): see sim.View.

// Outstanding is the work the engine holds at instant t, in tokens: the
// prompt tokens not yet in KV and the output tokens not yet emitted, over
// every request it holds (a Remote request's prompt counts until its KV
// lands: the replica still waits for it). Inside a run it counts the tokens of the steps
// that ended by t as emitted, as a step-by-step engine would.
func (e *Engine) Outstanding(t time.Duration) int {
	// lazy only while a plan is in flight (Check's lazyOnlyInFlight):
	// inFlight is not read.
	if !e.lazy || t < e.plan.Start+e.plan.StepTime {
		return e.outstanding
	}
	// Unsigned: t-Start ≥ StepTime > 0 here, and the division needs no
	// test of a divisor of -1 (3 instructions of about 35 a replica that
	// LeastLoaded reads an arrival).
	j := min(int(uint64(t-e.plan.Start)/uint64(e.plan.StepTime)), e.plan.Steps)
	return e.outstanding - j*e.live
}

// OutstandingUntil is Outstanding(t), or inside a mixed move (which
// only a driver that asked for them gets) mixedOutstanding(t), as
// leastMixed reads them, and the instant until which it holds while the
// engine is not changed (no call of its but the readers'): the next
// step end of the move in flight that lowers it, or math.MaxInt64 when
// none does. A fleet behind LeastLoaded keeps each replica's load so and
// reads its engine again only past that instant or once the engine has
// changed (sim's leastKept).
func (e *Engine) OutstandingUntil(t time.Duration) (int, time.Duration) {
	if e.mixed {
		return e.mixedOutstandingUntil(t)
	}
	if !e.lazy {
		return e.outstanding, math.MaxInt64
	}
	p := &e.plan
	if next := p.Start + p.StepTime; t < next {
		return e.outstanding, next
	}
	j := int(uint64(t-p.Start) / uint64(p.StepTime)) // unsigned, as Outstanding's
	if j >= p.Steps {
		return e.outstanding - p.Steps*e.live, math.MaxInt64
	}
	return e.outstanding - j*e.live, p.Start + time.Duration(j+1)*p.StepTime
}

// mixedOutstanding is Outstanding inside a mixed move whose first step
// is not collected (mixed), as the step-by-step engine counts it: until
// that step ends, the admitted prompt's chunk is not in KV (resHeld
// tokens more than seq.left counts from the plan on: mixRun) and no
// token is out; from its end, j steps ended, the prompt's chunk and
// first token are done (the prompt token seq.left counted, which
// listFirst gives back at the collection, and a token of each member),
// and each later step takes a token of each decode (live, the prompt
// among them). A mixed move that goes on through its members' finishes
// (thruOK: the one replica's, which no router reads) is not counted so.
// (Outstanding, which LeastLoaded reads of every replica
// at every arrival, counts the prompt as decoding from the plan on
// rather than take this test, which kept it from inlining: a fleet
// asking for mixed moves reads the engines through leastMixed.)
func (e *Engine) mixedOutstanding(t time.Duration) int {
	p := &e.plan
	first := p.End - time.Duration(p.Steps-1)*p.StepTime // the later steps are StepTime long
	if t < first {
		return e.outstanding + e.resHeld
	}
	// Unsigned, as Outstanding's: t-first ≥ 0 and StepTime > 0 here.
	j := min(int(uint64(t-first)/uint64(p.StepTime))+1, p.Steps)
	return e.outstanding - j*e.live - 1
}

// mixedOutstandingUntil is mixedOutstanding(t) and the instant until
// which it holds (OutstandingUntil): the first step's end, then each
// later step's, to the move's last.
func (e *Engine) mixedOutstandingUntil(t time.Duration) (int, time.Duration) {
	p := &e.plan
	first := p.End - time.Duration(p.Steps-1)*p.StepTime
	if t < first {
		return e.outstanding + e.resHeld, first
	}
	j := int(uint64(t-first)/uint64(p.StepTime)) + 1 // unsigned, as mixedOutstanding's
	if j >= p.Steps {
		return e.outstanding - p.Steps*e.live - 1, math.MaxInt64
	}
	return e.outstanding - j*e.live - 1, first + time.Duration(j)*p.StepTime
}

// leastMixed is mixedrun.Least's function of es (one or more engines):
// the engine of es with the fewest outstanding tokens at t, ties to the
// lowest index, read as
// Outstanding reads them, and inside a mixed move as mixedOutstanding
// does, each in one loop (through the two methods, 2,302 and 1,242
// instructions a request in BenchmarkRunFleet64/workload=atlas/
// router=LeastLoaded, against leastOutstanding's 1,617 before mixed
// moves). An engine inside a mixed move is read by mixedOutstanding
// alone: Outstanding's count taken first and then dropped, and a
// signed division, cost Regime/Fleet8LeastLoaded 342 instructions a
// request here against 277. The function it returns is the loop
// itself, over the es it holds, not a closure that calls a loop of its
// own with them: Regime/Fleet8LeastLoaded 10,296 then 10,283
// instructions a request (the budget test; the closure's 14 gone). It
// is not inlined: inlined into mixedrun.Least's setter (engine's init),
// the loop left Outstanding and mixedOutstanding out of line, 10,368.
//
//go:noinline
func leastMixed(es []*Engine) func(t time.Duration) int {
	return func(t time.Duration) int {
		best, least := 0, 0
		if e := es[0]; e.mixed {
			least = e.mixedOutstanding(t)
		} else {
			least = e.Outstanding(t)
		}
		for i := 1; i < len(es); i++ {
			e, o := es[i], 0
			if e.mixed {
				o = e.mixedOutstanding(t)
			} else {
				o = e.Outstanding(t)
			}
			if o < least {
				best, least = i, o
			}
		}
		return best
	}
}

// CachedPrefix is how many of a prompt's leading tokens the prefix cache
// holds, for a request not yet added: the blocks of shared content (those
// its prefix ids determine; see prefix.go) found cached, leading run, at
// most all but the block of its last token. Inside a run, call SyncTo
// first so that the cache is what it is at the instant of the question.
// It computes the prompt's keys as it goes, stopping at the first miss;
// to ask many engines about one prompt, compute its keys once
// (PrefixKeys) and ask each with CachedKeys, which answers the same.
func (e *Engine) CachedPrefix(prefix []uint64, prefixBlockTokens, input int) int {
	r := Request{Input: input, Prefix: prefix, PrefixBlockTokens: prefixBlockTokens}
	limit := min(e.sharedBlocks(&r), (input-1)/e.cfg.BlockSize)
	if e.pool.runs != nil && limit > 0 {
		var buf [8]runLabel
		path := appendRunPath(nil, buf[:0], prefix, prefixBlockTokens, e.cfg.BlockSize, limit, false, 0)
		return e.pool.runLeading(path, limit, childKey(0, path[0].c)) * e.cfg.BlockSize
	}
	key := rootKey
	for j := range limit {
		key = mix(key, sharedContent(&r, e.cfg.BlockSize, j))
		if _, ok := e.pool.lookup(key); !ok {
			return j * e.cfg.BlockSize
		}
	}
	return limit * e.cfg.BlockSize
}

// PrefixKeys appends to dst, and returns, the content keys of the blocks
// of a prompt that a prefix cache of blockSize-token blocks may find
// cached, in order: its leading blocks of shared content (those wholly
// inside the units its prefix ids cover, prefixBlockTokens tokens an id),
// at most all but the block of its last token (vLLM's
// max_cache_hit_length = num_tokens − 1). They are the keys the engine
// files those blocks under, each chained on the one before as vLLM's
// block hashes are, so a router computes them once per arrival and asks
// every replica with CachedKeys, as llm-d's precise prefix scorer does
// (llm-d-kv-cache-manager, pkg/kvcache/indexer.go at 0bc6dd9, GetPodScores:
// TokensToKVBlockKeys once for the prompt, then one index lookup of the
// keys for all pods).
//
// A key depends on the replica only through its block size: no salt or
// seed enters it (the chain's root is a constant). In vLLM the chain
// starts at NONE_HASH, random per process unless PYTHONHASHSEED is set
// (vllm/v1/core/kv_cache_utils.py at bbf906a), and llm-d's token
// processor takes a HashSeed that must equal the pods' PYTHONHASHSEED
// (llm-d-kv-cache-manager, pkg/kvcache/kvblock/token_processor.go at
// 10638d8): servesim's replicas are that deployment, one seed for all,
// so engines of one block size share one chain. (vLLM's per-request
// cache_salt, which servesim's requests do not have, would be a property
// of the request, not of the replica.) It appends nothing for a prompt
// without prefix ids, or for a prefixBlockTokens or blockSize that is
// not positive.
func PrefixKeys(dst, prefix []uint64, prefixBlockTokens, input, blockSize int) []uint64 {
	limit := prefixKeysLimit(prefix, prefixBlockTokens, input, blockSize)
	if limit == 0 {
		return dst
	}
	return appendShared(dst, rootKey, prefix, prefixBlockTokens, blockSize, 0, limit)
}

// ExtendPrefixKeys is PrefixKeys for a prompt whose leading keys are
// known: keys holds the first len(keys) keys of its chain (those of
// another prompt whose prefix ids agree over the units those blocks
// overlap), and it returns the prompt's whole chain, keys cut to it or
// with the rest appended. A router that keys many prompts of one shared
// prefix computes that prefix's keys once.
func ExtendPrefixKeys(keys, prefix []uint64, prefixBlockTokens, input, blockSize int) []uint64 {
	limit := prefixKeysLimit(prefix, prefixBlockTokens, input, blockSize)
	if len(keys) >= limit {
		return keys[:limit]
	}
	key := rootKey
	if len(keys) > 0 {
		key = keys[len(keys)-1]
	}
	return appendShared(keys, key, prefix, prefixBlockTokens, blockSize, len(keys), limit)
}

// prefixKeysLimit is the number of keys in a prompt's chain (PrefixKeys).
func prefixKeysLimit(prefix []uint64, p, input, b int) int {
	if p <= 0 || b <= 0 || len(prefix) == 0 || input <= 1 {
		return 0
	}
	units := min(len(prefix), input/p)
	return min(units*p/b, (input-1)/b) // Engine.sharedBlocks, and CachedPrefix's limit
}

// CachedKeys is CachedPrefix for a prompt whose keys were computed once
// by PrefixKeys at this engine's block size (Config().BlockSize): the
// tokens of the leading run of keys found in the prefix cache (none when
// the cache is off). It reads the cache without changing it; inside a
// run, call SyncTo first.
func (e *Engine) CachedKeys(keys []uint64) int {
	if !e.cacheOn {
		return 0
	}
	e.keysRead = true // keep the pool by blocks, if it is not decided yet (decideRuns)
	if e.pool.runs != nil {
		return e.pool.runKeys(keys) * e.cfg.BlockSize
	}
	for j, key := range keys {
		if _, ok := e.pool.lookup(key); !ok {
			return j * e.cfg.BlockSize
		}
	}
	return len(keys) * e.cfg.BlockSize
}

// PrefixPath is a prompt's leading blocks of shared content, those
// CachedPrefix may find, named as a prefix cache kept by runs names them
// (runs of consecutive prefix ids; engine/runpool.go): made once by
// Reset to ask many engines of one block size about one prompt with
// CachedPath, as PrefixKeys is made once for CachedKeys. Unlike
// CachedKeys, CachedPath lets an engine keep its cache by runs, whose
// tree holds no keys; an engine that keeps it by blocks is asked by the
// path's keys, computed at its first such question. The zero value is
// the path of a prompt without prefix ids.
type PrefixPath struct {
	labels    []runLabel
	prefix    []uint64
	p, input  int
	blockSize int
	limit     int // blocks of the prompt a cache may find (prefixKeysLimit)
	keys      []uint64
	keyed     bool
	promise   ascend.Promise // the ids' shape, as the source promised it (ResetPromised)
	labeled   bool           // labels and first are made (label)
	first     uint64         // childKey(0, labels[0].c): runLeading's first lookup, alike in every tree
}

// Reset makes p the path of a prompt of input tokens whose prefix ids
// (prefixBlockTokens tokens an id) are prefix, at blockSize-token
// blocks, reusing p's memory. p reads prefix until the next Reset.
func (p *PrefixPath) Reset(prefix []uint64, prefixBlockTokens, input, blockSize int) {
	p.prefix, p.p, p.input, p.blockSize = prefix, prefixBlockTokens, input, blockSize
	p.limit = prefixKeysLimit(prefix, prefixBlockTokens, input, blockSize)
	p.labels, p.keys, p.keyed, p.labeled = p.labels[:0], p.keys[:0], false, false
	p.promise = ascend.Promise{}
}

// ResetPromised is Reset for a prompt whose prefix ids come with their
// source's promise of their shape (workload.Request.PrefixTwoRuns, as
// Request.PrefixTwoRuns takes it): the path's runs are then found as an
// engine finds a request's, by bisection where the promise allows, not
// by reading every id. The zero promise is Reset.
func (p *PrefixPath) ResetPromised(prefix []uint64, prefixBlockTokens, input, blockSize int, promise ascend.Promise) {
	p.Reset(prefix, prefixBlockTokens, input, blockSize)
	p.promise = promise
}

// label makes p's labels, at the first question of an engine that keeps
// its cache by runs, as makeRuns makes a request's: by the promise
// (ResetPromised), and through that engine's key memo (a fleet's,
// shared: the runs of a group's prompt are found again from the last
// prompt of its slot, keyMemo.appendRuns, not scanned id by id; the
// labels are the scan's, TestTwoRunsIsScan, TestRisingIsScan,
// TestRunMemoIsAscending). Made there, not in Reset, a path no such
// engine is asked about costs none. sim's BenchmarkRunFleet64/
// workload=prefix/router=PrefixAffinity (SERVESIM_BUDGET_FUNCS), whose router asks few
// replicas an arrival: made in Reset, scanned (ascend.Len 1,232 and
// appendRunPath 342 instructions a request), 17,586 a request; made
// here through the memo, 17,443; by the promise too, 15,790 (16,865
// without it, heldRange's cut in both).
func (p *PrefixPath) label(memo *keyMemo) {
	if p.promise.Rises() { // as makeRuns makes a request's path
		p.labels = appendRisingPath(memo, p.labels, p.prefix, p.p, p.blockSize, p.limit, 0)
	} else {
		p.labels = appendRunPath(memo, p.labels, p.prefix, p.p, p.blockSize, p.limit, p.promise.Two(), 0)
	}
	p.first = childKey(0, p.labels[0].c)
	p.labeled = true
}

// Blocks is the number of blocks of p's prompt a prefix cache may find:
// 0 for a prompt no cache can help.
func (p *PrefixPath) Blocks() int { return p.limit }

// CachedPath is CachedPrefix for the prompt of p: the tokens of its
// leading blocks of shared content that the prefix cache holds. It reads
// the cache without changing it; inside a run, call SyncTo first. An
// engine of another block size than p's is answered by CachedPrefix.
func (e *Engine) CachedPath(p *PrefixPath) int {
	if p.blockSize != e.cfg.BlockSize {
		return e.CachedPrefix(p.prefix, p.p, p.input)
	}
	if !e.cacheOn || p.limit == 0 {
		return 0
	}
	if e.pool.runs != nil {
		if !p.labeled {
			p.label(e.memo)
		}
		return e.pool.runLeading(p.labels, p.limit, p.first) * e.cfg.BlockSize
	}
	if !p.keyed {
		p.keys, p.keyed = PrefixKeys(p.keys[:0], p.prefix, p.p, p.input, p.blockSize), true
	}
	for j, key := range p.keys {
		if _, ok := e.pool.lookup(key); !ok {
			return j * e.cfg.BlockSize
		}
	}
	return p.limit * e.cfg.BlockSize
}
