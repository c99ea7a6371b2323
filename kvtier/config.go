package kvtier

import "fmt"

// Config sizes a tier. The zero value is no tier: capacity 0, every
// Insert is refused and every Lookup misses.
type Config struct {
	// Blocks is the capacity in KV blocks (the engine's block size). Zero
	// means no tier. vLLM sizes its CPU tier in bytes
	// (--kv-offloading-size GiB, total over TP ranks, config/cache.py:167-176):
	// Blocks = bytes / (bytes of one block over all layers and ranks),
	// as cpu/spec.py:25-46 computes num_blocks.
	Blocks int
	// Chained promises that the tier's keys are chained: a key names
	// every key before it in any chain it is given in (the engine's
	// content keys, whose every block key mixes its parent's:
	// engine.BlockKeys), so that two chains that agree at a place agree
	// before it. The tier then matches a chain against the runs its
	// touches and stores placed (segments.go) by single keys, the last
	// first, then by halving (lcp.Chain), where it compares them whole as
	// memory (lcp.Len). A tier given keys that are not chained must
	// leave it false: its order would go wrong. Every answer is the same
	// either way.
	Chained bool
}

// MaxBlocks bounds Config.Blocks: node indexes are int32.
const MaxBlocks = 1<<31 - 1

// Validate reports a negative or too large capacity, naming the field.
func (c Config) Validate() error {
	if c.Blocks < 0 {
		return fmt.Errorf("kvtier: Config.Blocks is %d: a capacity cannot be negative (0 means no tier)", c.Blocks)
	}
	if c.Blocks > MaxBlocks {
		return fmt.Errorf("kvtier: Config.Blocks is %d: at most %d", c.Blocks, MaxBlocks)
	}
	return nil
}
