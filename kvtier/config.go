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
