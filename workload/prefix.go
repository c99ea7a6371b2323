package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
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
// uniformly), and its full blocks carry that group's ids; otherwise it is
// private. Every other block gets a fresh id, never seen before in the
// stream.
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
}

// LowReuse and HighReuse are illustrative presets: a few short prompts
// rarely shared, against a handful of long system prompts almost always
// shared (an assistant product with a fixed instruction preamble).
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
	return errors.Join(errs...)
}

func (p PrefixReuse) String() string {
	if !p.Enabled() {
		return "no prefix ids"
	}
	return fmt.Sprintf("%d-token system prompt shared with p=%g among %d groups, %d-token blocks",
		p.PrefixTokens, p.Probability, p.Groups, p.block())
}

// blockIDs hands out hash ids: group g's shared blocks are
// g·shared … g·shared+shared−1, fresh ids follow all of them.
type blockIDs struct {
	cfg    PrefixReuse
	shared int // full blocks in a system prompt
	fresh  uint64
}

func newBlockIDs(cfg PrefixReuse) *blockIDs {
	shared := cfg.PrefixTokens / cfg.block()
	return &blockIDs{cfg: cfg, shared: shared, fresh: uint64(cfg.Groups) * uint64(shared)}
}

// prompt returns the hash ids of a new prompt of input tokens whose first
// PrefixTokens are the system prompt, drawing the reuse decision from r;
// nil if prefixes are disabled.
func (b *blockIDs) prompt(r *rand.Rand, input int) []uint64 {
	if !b.cfg.Enabled() {
		return nil
	}
	ids := make([]uint64, 0, blocks(input, b.cfg.block()))
	if b.cfg.Probability > 0 && r.Float64() < b.cfg.Probability {
		g := uint64(r.IntN(b.cfg.Groups))
		for k := range min(b.shared, cap(ids)) {
			ids = append(ids, g*uint64(b.shared)+uint64(k))
		}
	}
	return b.fill(ids, input)
}

// extend returns the ids of a prompt of input tokens that begins with a
// previous prompt of prevTokens tokens whose ids were prev: the previous
// prompt's full blocks are kept, the rest are fresh.
func (b *blockIDs) extend(prev []uint64, prevTokens, input int) []uint64 {
	if !b.cfg.Enabled() {
		return nil
	}
	keep := min(prevTokens/b.cfg.block(), len(prev))
	ids := make([]uint64, keep, blocks(input, b.cfg.block()))
	copy(ids, prev)
	return b.fill(ids, input)
}

func (b *blockIDs) fill(ids []uint64, input int) []uint64 {
	for len(ids) < blocks(input, b.cfg.block()) {
		ids = append(ids, b.fresh)
		b.fresh++
	}
	return ids
}

// blocks is ceil(tokens/size).
func blocks(tokens, size int) int {
	if tokens <= 0 {
		return 0
	}
	return (tokens + size - 1) / size
}
