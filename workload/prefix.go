package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// MooncakeBlockTokens is the number of prompt tokens one hash id covers in
// Mooncake's published traces.
const MooncakeBlockTokens = 512

// PrefixReuse describes shared system prompts, expressed as block hash ids
// the way Mooncake's traces are: one id per BlockTokens tokens of the
// prompt, equal ids meaning an identical block (and so an identical prefix
// up to it).
//
// Every request's prompt is a system prompt of PrefixTokens tokens followed
// by its sampled input (as in vLLM's random dataset, whose prompt is
// --random-prefix-len tokens plus the sampled length), so InputTokens =
// PrefixTokens + sampled input whatever the reuse. With probability
// Probability the system prompt is one of Groups shared prompts (chosen
// uniformly, or with Zipf popularity), and its full blocks carry that
// group's ids; otherwise it is private. Every other block gets a fresh id,
// never seen before in the stream. So two requests of the same group share
// exactly the PrefixTokens/BlockTokens full blocks of the system prompt: a
// common leading run of ids, which is what a prefix cache (and a
// prefix-aware router) can find.
//
// The zero value disables prefixes: requests carry no hash ids.
type PrefixReuse struct {
	// Groups is the number of distinct shared system prompts (>= 1 when
	// Probability > 0).
	Groups int
	// PrefixTokens is the system prompt's length in tokens (>= 0).
	PrefixTokens int
	// Probability is the chance in [0, 1] that a request uses a shared
	// system prompt.
	Probability float64
	// BlockTokens is the number of tokens per hash id; 0 means 512
	// (Mooncake's).
	BlockTokens int
	// Zipf is the exponent s (finite, >= 0) of the shared prompts'
	// popularity: group k, counted from 0, is chosen with probability
	// (k+1)^−s / Σⱼ (j+1)^−s over the Groups groups, so group 0 is the most
	// popular. 0 means uniform, drawn exactly as before this field existed
	// (the same seed gives the same requests). Any s >= 0 is allowed,
	// s <= 1 included, where most measured popularities lie; the draw is an
	// inverse-CDF table of 8 bytes a group, built once per source.
	Zipf float64
}

// LowReuse and HighReuse are illustrative presets: a few short prompts
// rarely shared, against a handful of long system prompts almost always
// shared (an assistant product with a fixed instruction preamble). The
// routing experiment's presets, sized against a fleet's KV cache, are
// FleetLowReuse and FleetHighReuse.
var (
	LowReuse  = PrefixReuse{Groups: 32, PrefixTokens: 256, Probability: 0.2}
	HighReuse = PrefixReuse{Groups: 4, PrefixTokens: 2048, Probability: 0.9}
)

// Enabled reports whether requests carry hash ids.
func (p PrefixReuse) Enabled() bool { return p != PrefixReuse{} }

func (p PrefixReuse) block() int {
	if p.BlockTokens == 0 {
		return MooncakeBlockTokens
	}
	return p.BlockTokens
}

// Validate reports every problem with the configuration.
func (p PrefixReuse) Validate() error {
	var errs []error
	if p.PrefixTokens < 0 {
		errs = append(errs, fmt.Errorf("workload: PrefixReuse.PrefixTokens must be >= 0, got %d", p.PrefixTokens))
	}
	if !(p.Probability >= 0 && p.Probability <= 1) {
		errs = append(errs, fmt.Errorf("workload: PrefixReuse.Probability must be in [0, 1], got %v", p.Probability))
	}
	if p.Probability > 0 && p.Groups < 1 {
		errs = append(errs, fmt.Errorf("workload: PrefixReuse.Groups must be >= 1 when Probability > 0, got %d", p.Groups))
	}
	if p.Groups < 0 {
		errs = append(errs, fmt.Errorf("workload: PrefixReuse.Groups must be >= 0, got %d", p.Groups))
	}
	if p.BlockTokens < 0 {
		errs = append(errs, fmt.Errorf("workload: PrefixReuse.BlockTokens must be >= 0 (0 for 512), got %d", p.BlockTokens))
	}
	if !(p.Zipf >= 0) || math.IsInf(p.Zipf, 0) {
		errs = append(errs, fmt.Errorf("workload: PrefixReuse.Zipf must be finite and >= 0 (0 for uniform), got %v", p.Zipf))
	}
	return errors.Join(errs...)
}

func (p PrefixReuse) String() string {
	if !p.Enabled() {
		return "no prefix ids"
	}
	popularity := "" // uniform, as printed before Zipf existed
	if p.Zipf > 0 {
		popularity = fmt.Sprintf(" of Zipf popularity s=%g", p.Zipf)
	}
	return fmt.Sprintf("%d-token system prompt shared with p=%g among %d groups%s, %d-token blocks",
		p.PrefixTokens, p.Probability, p.Groups, popularity, p.block())
}

// blockIDs hands out hash ids: group g's shared blocks are
// g·shared … g·shared+shared−1, fresh ids follow all of them.
type blockIDs struct {
	cfg    PrefixReuse
	on     bool // cfg.Enabled(), read at every request: a struct compare
	shared int  // full blocks in a system prompt
	bt     int  // cfg.block(), read at every request
	fresh  uint64
	// cumulative holds Σ_{j<=k} (j+1)^−Zipf for each group k; nil when
	// groups are chosen uniformly.
	cumulative []float64
	// guide is cumulative's guide table (zipfGuide), nil with it.
	guide []int32
	// slab is the array prompts' ids are cut from (promptIDs).
	slab []uint64
	// groupIDs holds each group's shared ids once a prompt drew it, to
	// copy into the next ones (sharedIDs); nil when every group's would
	// not fit in maxGroupIDs ids, and then they are counted each time.
	groupIDs [][]uint64
	// spare holds, by group, the arrays of prompts of that group handed
	// back (recycle), their shared ids in place, for the next prompts of
	// the group (reused); nil until the first is handed back.
	spare [][][]uint64
	// groupsEnd is Groups·shared, the first id past every group's,
	// when groupIDs is kept, 0 otherwise: recycle takes back an array
	// whose first id is below it.
	groupsEnd uint64
}

// maxGroupIDs bounds the ids blockIDs keeps of its groups: 1 MiB of
// them (FleetHighReuse's 256 groups of 256 ids are 512 KiB).
const maxGroupIDs = 1 << 17

func newBlockIDs(cfg PrefixReuse) *blockIDs {
	shared := cfg.PrefixTokens / cfg.block()
	b := &blockIDs{cfg: cfg, on: cfg.Enabled(), shared: shared, bt: cfg.block(), fresh: uint64(cfg.Groups) * uint64(shared),
		cumulative: zipfTable(cfg.Groups, cfg.Zipf)}
	b.guide = zipfGuide(b.cumulative)
	if cfg.Probability > 0 && shared > 0 && cfg.Groups <= maxGroupIDs/shared {
		b.groupIDs = make([][]uint64, cfg.Groups)
		b.groupsEnd = b.fresh
	}
	return b
}

// zipfTable returns the cumulative weights Σ_{j<=k} (j+1)^−s of groups
// 0 … groups−1, or nil for uniform popularity (s == 0) or no groups.
//
// Why a table of our own: math/rand/v2's Zipf needs s > 1 (measured
// popularities are often below), and gonum's distuv has no Zipf; its
// Categorical would draw the same distribution but binds its random
// source when it is built, while every conversation draws its prefix from
// a stream of its own, so it would be rebuilt (O(Groups)) per draw.
func zipfTable(groups int, s float64) []float64 {
	if s == 0 || groups < 1 {
		return nil
	}
	cum := make([]float64, groups)
	sum := 0.0
	for k := range cum {
		sum += math.Pow(float64(k+1), -s)
		cum[k] = sum
	}
	return cum
}

// group draws the shared prompt's group from r: uniformly with one IntN
// (as before Zipf existed), or by inverting the Zipf table with one
// Float64 — the first group whose cumulative weight exceeds u·total.
func (b *blockIDs) group(r *rand.Rand) uint64 {
	if b.cumulative == nil {
		return uint64(r.IntN(b.cfg.Groups))
	}
	n := len(b.cumulative)
	u := r.Float64() * b.cumulative[n-1]
	return uint64(min(firstAbove(b.cumulative, b.guide, u), n-1)) // u < total, so k < n; min guards rounding
}

// guideBuckets is how many buckets of the total weight a Zipf table's
// guide has a group: four, so that a bucket spans about one of
// FleetHighReuse's least popular groups' weight.
const guideBuckets = 4

// zipfGuide is the guide table of cum, a non-decreasing table of
// cumulative weights (zipfTable's): bucket j of its len(cum) ·
// guideBuckets buckets of the total holds the first group whose weight
// passes the bucket's start. nil for a nil table.
func zipfGuide(cum []float64) []int32 {
	if len(cum) == 0 {
		return nil
	}
	total, g := cum[len(cum)-1], make([]int32, len(cum)*guideBuckets)
	for j := range g {
		at := float64(j) * total / float64(len(g))
		g[j] = int32(sort.Search(len(cum), func(k int) bool { return cum[k] > at }))
	}
	return g
}

// firstAbove is the first k with cum[k] > u (len(cum) when none), for u
// in [0, total): sort.Search's answer (firstAboveSearch, its twin, which
// TestFirstAboveIsTheSearch holds it to), found from the guide's bucket
// of u by a step or two instead of eight halvings. It steps back while
// the group before is above u, and on while the group is not, so the
// answer does not rest on the guide's rounding, only on cum being
// non-decreasing. Regime/Fleet8LeastLoaded, the search then this:
// group took 137 then 74 instructions a request (SERVESIM_BUDGET_FUNCS, the marginal
// count).
func firstAbove(cum []float64, guide []int32, u float64) int {
	j := int(u * float64(len(guide)) / cum[len(cum)-1])
	k := int(guide[min(max(j, 0), len(guide)-1)])
	for k > 0 && cum[k-1] > u {
		k--
	}
	for k < len(cum) && cum[k] <= u {
		k++
	}
	return k
}

// firstAboveSearch is firstAbove's twin: the binary search.
func firstAboveSearch(cum []float64, u float64) int {
	return sort.Search(len(cum), func(k int) bool { return cum[k] > u })
}

// prompt returns the hash ids of a new prompt of input tokens whose first
// PrefixTokens are the system prompt, drawing the reuse decision from r;
// nil if prefixes are disabled. They are at most two runs of
// consecutive ids (Request.PrefixTwoRuns): the group's shared ids count
// up from g·shared, the fresh ones from where the last prompt's ended.
// Their array has room for room ids when that is more (a conversation
// whose turns extend it in place, extendInPlace).
func (b *blockIDs) prompt(r *rand.Rand, input, room int) []uint64 {
	if !b.on {
		return nil
	}
	n := blocks(input, b.bt)
	if b.cfg.Probability > 0 && r.Float64() < b.cfg.Probability {
		g, k := b.group(r), min(b.shared, n)
		if ids := b.reused(g, max(n, room)); ids != nil {
			// Its first k are the group's; its own written in place,
			// its room known (fillTo's, without its tests and Grow's
			// call: Regime/Fleet8PrefixApprox 9,926 then 9,901
			// instructions a request, the budget test).
			ids = ids[:n]
			countFrom(ids[k:], b.fresh)
			b.fresh += uint64(n - k)
			return ids
		}
		ids := b.promptIDs(max(n, room))
		b.sharedIDs(ids[:k], g)
		return b.fillTo(ids[:k], n)
	}
	return b.fillTo(b.promptIDs(max(n, room)), n)
}

// recycle takes back ids, a prompt's that prompt gave and no one reads
// any longer, for a later prompt of its group (reused): its array then
// holds the group's shared ids already, and that prompt costs its own
// ids alone, neither a slab's allocation nor a copy of the shared ones
// (FleetHighReuse's 256 ids, 2 KiB). A private prompt's (its first id
// fresh, past every group's) is left to the collector, as are all of
// them when the groups' ids are not kept (groupIDs). Only sim's runner
// calls it (generatorInto.Recycle), after readySpare.
func (b *blockIDs) recycle(ids []uint64) {
	if len(ids) < b.shared || len(ids) == 0 || ids[0] >= b.groupsEnd {
		return
	}
	g := ids[0] / uint64(b.shared) // groupsEnd > 0: so is b.shared
	b.spare[g] = append(b.spare[g], ids[:0])
}

// readySpare makes the spare lists (makeSpare) before a first recycle
// when the groups' ids are kept: out of recycle, whose lines then fit
// the inliner's budget in generatorInto.Recycle, one call a request
// fewer (with recycle's one test of the first id against groupsEnd,
// Regime/Fleet8PrefixApprox 9,862 then 9,847 instructions a request,
// the budget test).
func (b *blockIDs) readySpare() {
	if b.spare == nil && b.groupsEnd != 0 {
		b.makeSpare()
	}
}

// makeSpare makes every group's spare list, empty, with room for
// spareRoom arrays (readySpare's, out of recycle's lines).
func (b *blockIDs) makeSpare() {
	b.spare = make([][][]uint64, len(b.groupIDs))
	room := make([][]uint64, spareRoom*len(b.spare))
	for k := range b.spare {
		b.spare[k] = room[k*spareRoom : k*spareRoom : (k+1)*spareRoom]
	}
}

// spareRoom is the arrays each group's spare list holds before it grows
// on its own, cut from one array at the first recycle: grown from
// empty, Regime/Fleet8PrefixApprox's lists took 22 instructions a
// request (growslice's, cachegrind's marginal count).
const spareRoom = 8

// reused is a prompt's empty slice of capacity n or more whose array
// holds group g's shared ids, one recycle took back; nil when none is
// kept of that group (or the last kept is too short: it is left for a
// shorter prompt).
func (b *blockIDs) reused(g uint64, n int) []uint64 {
	if b.spare == nil {
		return nil
	}
	s := b.spare[g]
	k := len(s) - 1
	if k < 0 || cap(s[k]) < n {
		return nil
	}
	b.spare[g] = s[:k]
	return s[k]
}

// promptIDs is an empty slice of capacity n for a prompt's ids, cut
// from a slab of promptSlab ids (or one of its own, when n is more): a
// prompt's few hundred ids took an allocation each. Its capacity is
// exactly n, as an array of its own, so an append past it (fill's, a
// conversation's next turn) moves to an array of its own and never
// writes into the next prompt's ids. Regime/Fleet8LeastLoaded, an
// allocation a prompt then this: prompt and the runtime's allocation
// took 272 then 113 instructions a request (SERVESIM_BUDGET_FUNCS, the marginal count).
func (b *blockIDs) promptIDs(n int) []uint64 {
	if n > cap(b.slab)-len(b.slab) {
		if n > promptSlab/2 {
			return make([]uint64, 0, n)
		}
		b.slab = make([]uint64, 0, promptSlab)
	}
	k := len(b.slab)
	b.slab = b.slab[:k+n]
	return b.slab[k : k : k+n]
}

// promptSlab is how many ids a slab of promptIDs holds: 32 KiB, the
// runtime's largest small allocation, FleetHighReuse's 288-id prompts
// fourteen to a slab. A slab is kept while a prompt cut from it is.
const promptSlab = 4096

// sharedIDs sets ids (at most the shared ids) to group g's first shared
// ids, g·shared, g·shared+1, …: copied from the group's kept ids (a
// prompt's hundreds of ids are one copy, the runtime's memmove, not a
// store and an add an id), written the first time; counted when none
// are kept. TestGroupIDsAreCounted holds the two to counting.
func (b *blockIDs) sharedIDs(ids []uint64, g uint64) {
	if b.groupIDs == nil {
		countFrom(ids, g*uint64(b.shared))
		return
	}
	kept := b.groupIDs[g]
	if kept == nil {
		kept = make([]uint64, b.shared)
		countFrom(kept, g*uint64(b.shared))
		b.groupIDs[g] = kept
	}
	copy(ids, kept)
}

// extendIn returns the ids of a prompt of input tokens that begins with
// a previous prompt of prevTokens tokens whose ids were prev (a
// conversation's turn: its prompt and its answer, ChatSource.Finished):
// the previous prompt's full blocks are kept, the rest are fresh. Ids
// that rose (a prompt's, and those extendIn gives) still do
// (Request.PrefixTwoRuns' ascend.Rising): the fresh ids count up from
// more than every id handed out before, the groups' shared ids
// included. The array is cut from promptIDs' slab, as a prompt's: one
// made a turn (the runtime's allocation and clearing) cost Regime/
// Conversations 150 instructions a request more: 18,014 then 17,864
// (SERVESIM_BUDGET_FUNCS, the marginal count).
func (b *blockIDs) extendIn(prev []uint64, prevTokens, input int) []uint64 {
	if !b.on {
		return nil
	}
	keep := min(prevTokens/b.bt, len(prev))
	ids := b.promptIDs(blocks(input, b.bt))[:keep]
	copy(ids, prev)
	return b.fill(ids, input)
}

// extendInPlace is extendIn writing the fresh ids into prev's array
// after its full blocks (grown when it has no room), not into a copy: a
// conversation's turn, which resends its history, then costs its new
// ids alone, not a copy of every id so far. It writes over prev's last
// id when that block was partial: a caller that still reads prev (a
// request it yielded) must call extendIn.
func (b *blockIDs) extendInPlace(prev []uint64, prevTokens, input int) []uint64 {
	if !b.on {
		return nil
	}
	return b.fill(prev[:min(prevTokens/b.bt, len(prev))], input)
}

// fill appends fresh ids to ids up to input tokens' blocks.
func (b *blockIDs) fill(ids []uint64, input int) []uint64 {
	return b.fillTo(ids, blocks(input, b.bt))
}

// fillTo appends fresh ids to ids up to want ids (fill, its blocks
// counted by the caller).
func (b *blockIDs) fillTo(ids []uint64, want int) []uint64 {
	n := len(ids)
	if want <= n {
		return ids
	}
	ids = slices.Grow(ids, want-n)[:want]
	countFrom(ids[n:], b.fresh)
	b.fresh += uint64(len(ids) - n)
	return ids
}

// countFrom sets ids to x, x+1, x+2, …: sixteen a pass (a prompt's
// shared ids are hundreds), then one at a time. TestCountFrom holds it to
// the plain loop.
func countFrom(ids []uint64, x uint64) {
	for len(ids) >= 16 {
		w := (*[16]uint64)(ids)
		w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7] = x, x+1, x+2, x+3, x+4, x+5, x+6, x+7
		w[8], w[9], w[10], w[11], w[12], w[13], w[14], w[15] = x+8, x+9, x+10, x+11, x+12, x+13, x+14, x+15
		x, ids = x+16, ids[16:]
	}
	for len(ids) >= 4 {
		w := (*[4]uint64)(ids)
		w[0], w[1], w[2], w[3] = x, x+1, x+2, x+3
		x, ids = x+4, ids[4:]
	}
	for k := range ids {
		ids[k] = x + uint64(k)
	}
}

// blocks is ceil(tokens/size).
func blocks(tokens, size int) int {
	if tokens <= 0 {
		return 0
	}
	return (tokens + size - 1) / size
}
