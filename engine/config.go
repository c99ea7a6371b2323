package engine

import (
	"errors"
	"fmt"
	"math"

	"github.com/servesim/servesim/costmodel"
)

// Atlas TP4 defaults (the reference chapter): 35 GiB of KV per accelerator at
// 80 KiB per token is 458,752 tokens, 28,672 blocks of 16; batch 32.
const (
	DefaultBlockSize        = costmodel.AtlasKVBlockSize
	DefaultKVBlocks         = costmodel.AtlasKVBlocks
	DefaultMaxSeqs          = costmodel.AtlasBatch
	DefaultMaxBatchedTokens = 2048
)

// The largest values Validate accepts; above them a field is refused,
// named, with its bound. None costs the event loop anything: they are
// checked once, by Validate (and Add checks a request's length).
const (
	// MaxKVBlocks bounds KVBlocks: the pool names its blocks by int32 ids
	// and keeps runs of free blocks as int32 lengths, so that a node of the
	// free queue is 32 bytes. 2³¹ − 1 blocks of 16 tokens are 34 billion
	// tokens of KV, 2.8 PB at Atlas's 80 KiB a token. Memory grows with
	// the blocks that carry cached content, about 62 bytes each (a node
	// and its index entry; measured over 2²⁰ warmed blocks), not with
	// KVBlocks: free blocks without content are one node per run.
	MaxKVBlocks = math.MaxInt32
	// MaxTokens bounds every count of tokens: MaxBatchedTokens, ChunkCap,
	// BlockSize, SpeculativeTokens and MaxModelLen, so a request's prompt
	// + output, cut at MaxModelLen, within it too. 2³¹ − 1, the range of a
	// trace's lengths and far above any context window, so that the sums
	// and products the engine forms of them (a request's blocks × steps,
	// a run's tokens) stay within an int.
	MaxTokens = math.MaxInt32
	// MaxSeqsLimit bounds MaxSeqs: 16,384 sequences, 64 times vLLM's
	// default max_num_seqs (256) and costmodel.MaxEstimateBatch, the
	// capacity estimate's own bound. The engine keeps a buffer of MaxSeqs
	// decode contexts, and LargestStep searches every split of the batch
	// between decodes and prefill chunks (work quadratic in MaxSeqs).
	MaxSeqsLimit = costmodel.MaxEstimateBatch
)

// Config sets one replica's scheduler. Every field's zero value means the
// documented default, so Config{} is the Atlas TP4 replica scheduled the way
// vLLM's V1 scheduler does by default (chunked prefill on, FCFS, no per-request
// chunk cap, recompute preemption).
type Config struct {
	// MaxBatchedTokens is the token budget of one step (vLLM's
	// max_num_batched_tokens), at most MaxTokens. Default 2048.
	MaxBatchedTokens int
	// MaxSeqs caps the running list (vLLM's max_num_seqs), at most
	// MaxSeqsLimit. Default 32.
	MaxSeqs int
	// ChunkCap caps the prefill tokens one request may schedule in a step
	// (vLLM's long_prefill_token_threshold). 0 means no cap beyond the budget.
	ChunkCap int
	// DisableChunkedPrefill turns chunked prefill off as vLLM V1 does
	// (enable_chunked_prefill=False): running requests are scheduled as
	// with it on, decodes first; a waiting prompt is admitted only whole,
	// its remaining tokens (after those the prefix cache serves) within the
	// budget the step has left, and admission stops at the first that is
	// not. (vLLM V0's prefill-only steps, in which decoders stall, are not
	// modelled.) A request whose prompt + output - 1 tokens exceed
	// MaxBatchedTokens is rejected at once (it could never be recomputed
	// after a preemption), as vLLM requires max_num_batched_tokens >=
	// max_model_len without chunking. ChunkCap must be 0.
	DisableChunkedPrefill bool
	// BlockSize is the KV block size in tokens, at most MaxTokens.
	// Default 16.
	BlockSize int
	// KVBlocks is the number of KV blocks, at most MaxKVBlocks. Default
	// 28,672 (Atlas TP4).
	KVBlocks int
	// MaxModelLen is the longest sequence a request may reach, prompt and
	// output together (vLLM's max_model_len), at most MaxTokens and at
	// most the KV capacity, KVBlocks × BlockSize tokens, as vLLM refuses
	// to start with a max_model_len its KV cache cannot hold one sequence
	// of. Add refuses a prompt of MaxModelLen tokens or more
	// (ErrPromptTooLong), as vLLM's front end does
	// (InputProcessor._validate_prompt_len); a request whose prompt +
	// output exceeds it is served and stopped when it holds MaxModelLen
	// tokens, after MaxModelLen − Input output tokens (vLLM's
	// FINISHED_LENGTH_CAPPED, sched/utils.py check_stop). 0 means the KV
	// capacity (or MaxTokens, if less).
	MaxModelLen int
	// Watermark is the fraction of KV blocks that admission keeps free
	// while anything runs (vLLM V0's watermark, and V1's since mid-2026,
	// e.g. 0.01). Running requests may use them. Default 0.
	Watermark float64
	// MaxWaiting caps the waiting queue; an arrival that finds it full is
	// rejected. 0 means unbounded.
	MaxWaiting int
	// Policy orders the waiting queue. nil means FCFS.
	Policy Policy
	// DisablePrefixCache turns off the prefix cache, which is on by
	// default as in vLLM V1: requests share blocks whose content the
	// workload's Prefix ids determine, and a preempted request finds its
	// own blocks again (see prefix.go).
	DisablePrefixCache bool
	// AdmitOnFirstChunk admits a waiting request once its next chunk fits,
	// as vLLM V1 did before 0.19 (April 2026) added
	// scheduler_reserve_full_isl (PR #37307), on by default. By default, as
	// in vLLM since, a waiting request is admitted
	// only if the blocks for its whole sequence (prompt, and for a
	// preempted request the tokens it had emitted) are free, so that a
	// long prompt is not admitted on its first chunk only to be preempted
	// half-way, again and again.
	AdmitOnFirstChunk bool
	// FreeBlocksFirst allocates never-cached free blocks before evicting
	// any cached one. By default, as in vLLM V1, all free blocks share one
	// queue in the order they were freed, cached or not, and allocation
	// takes its head: an old cached block goes before a recently freed
	// uncached one.
	FreeBlocksFirst bool
	// SpeculativeTokens is K, the draft tokens each decoding sequence
	// verifies per step (vLLM's num_speculative_tokens); 0 means no
	// speculative decoding. A decode then schedules 1 + K tokens (fewer
	// near its last token, or when the step's budget runs short, as vLLM
	// trims the drafts), takes KV for all of them (vLLM's lookahead
	// slots) and keeps the blocks of rejected drafts for its next step;
	// the driver says how many drafts were accepted (SetAcceptor), and the
	// step emits those plus the token it samples, as one streamed chunk.
	// Such steps are planned one at a time (ScheduleUntil plans no runs).
	SpeculativeTokens int
	// RemoteKV lets the engine take Remote requests (vLLM's
	// kv_transfer_config kv_role "kv_consumer"/"kv_both"): requests whose
	// prompt's KV another replica computed and a transfer brings
	// (Request.Remote, Land, remote.go). The zero value refuses them (Add
	// returns ErrRemoteOff). It turns joins that change nothing off
	// (FastPaths): a transfer lands between steps, and a driver cuts a
	// run at a landing as at an arrival (Land); Continue declines while a
	// landed request waits to be admitted.
	RemoteKV bool
}

// WithDefaults returns c with every zero field set to its documented
// default: the configuration the engine actually runs.
func (c Config) WithDefaults() Config {
	if c.MaxBatchedTokens == 0 {
		c.MaxBatchedTokens = DefaultMaxBatchedTokens
	}
	if c.MaxSeqs == 0 {
		c.MaxSeqs = DefaultMaxSeqs
	}
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	if c.KVBlocks == 0 {
		c.KVBlocks = DefaultKVBlocks
	}
	if c.Policy == nil {
		c.Policy = FCFS{}
	}
	if c.MaxModelLen == 0 {
		c.MaxModelLen = c.capacity()
	}
	return c
}

// ServedOutput is how many output tokens a request of input prompt
// tokens that asks for output tokens emits under c: output, or
// MaxModelLen − input when input + output exceeds MaxModelLen (the
// request is length-capped, as vLLM's FINISHED_LENGTH_CAPPED); 0 for a
// request Add refuses for its prompt (input >= MaxModelLen).
func (c Config) ServedOutput(input, output int) int {
	m := c.MaxModelLen
	if m == 0 {
		m = c.WithDefaults().capacity()
	}
	if input >= m {
		return 0
	}
	return min(output, m-input)
}

// capacity is the KV cache's tokens, KVBlocks × BlockSize, at most
// MaxTokens (0 when either is negative: Validate refuses them), with
// their defaults filled in.
func (c Config) capacity() int {
	if c.KVBlocks <= 0 || c.BlockSize <= 0 {
		return 0
	}
	if c.KVBlocks > MaxTokens/c.BlockSize {
		return MaxTokens
	}
	return c.KVBlocks * c.BlockSize
}

// defaultNote says that a zero field stands for its default.
func defaultNote(v int) string {
	if v == 0 {
		return ", the default"
	}
	return ""
}

// Validate reports every nonsense field in one error, naming each field
// and, for a value above its bound (MaxKVBlocks, MaxTokens,
// MaxSeqsLimit), the bound and why. MaxWaiting has no upper bound: it is
// only compared with the waiting queue's length.
func (c Config) Validate() error {
	var errs []error
	neg := func(name string, v int) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("engine: %s must be >= 0 (0 means the default), got %d", name, v))
		}
	}
	over := func(name string, v, bound int, why string) {
		if v > bound {
			errs = append(errs, fmt.Errorf("engine: %s must be <= %d (%s), got %d", name, bound, why, v))
		}
	}
	neg("MaxBatchedTokens", c.MaxBatchedTokens)
	neg("MaxSeqs", c.MaxSeqs)
	neg("ChunkCap", c.ChunkCap)
	neg("BlockSize", c.BlockSize)
	neg("KVBlocks", c.KVBlocks)
	neg("MaxWaiting", c.MaxWaiting)
	neg("SpeculativeTokens", c.SpeculativeTokens)
	neg("MaxModelLen", c.MaxModelLen)
	const tokens = "MaxTokens: token counts beyond it would overflow the engine's sums"
	over("MaxBatchedTokens", c.MaxBatchedTokens, MaxTokens, tokens)
	over("MaxSeqs", c.MaxSeqs, MaxSeqsLimit, "MaxSeqsLimit: the engine keeps a buffer of MaxSeqs decodes and LargestStep's search is quadratic in it")
	over("ChunkCap", c.ChunkCap, MaxTokens, tokens)
	over("BlockSize", c.BlockSize, MaxTokens, tokens)
	over("KVBlocks", c.KVBlocks, MaxKVBlocks, "MaxKVBlocks: block ids and runs of free blocks are int32")
	over("SpeculativeTokens", c.SpeculativeTokens, MaxTokens, tokens)
	over("MaxModelLen", c.MaxModelLen, MaxTokens, tokens)
	if !(c.Watermark >= 0 && c.Watermark < 1) { // also refuses NaN
		errs = append(errs, fmt.Errorf("engine: Watermark must be in [0, 1), got %v", c.Watermark))
	}
	d := c.WithDefaults()
	if capacity := d.capacity(); c.MaxModelLen > capacity && capacity > 0 && c.MaxModelLen <= MaxTokens {
		errs = append(errs, fmt.Errorf("engine: MaxModelLen must be <= %d, the KV capacity (KVBlocks %d × BlockSize %d), as vLLM refuses a max_model_len its KV cache cannot hold, got %d",
			capacity, d.KVBlocks, d.BlockSize, c.MaxModelLen))
	}
	if c.DisableChunkedPrefill && c.ChunkCap > 0 {
		errs = append(errs, fmt.Errorf("engine: ChunkCap (%d) has no meaning with DisableChunkedPrefill", c.ChunkCap))
	}
	if c.ChunkCap > d.MaxBatchedTokens && c.MaxBatchedTokens >= 0 {
		errs = append(errs, fmt.Errorf("engine: ChunkCap (%d) must not exceed MaxBatchedTokens (%d)", c.ChunkCap, d.MaxBatchedTokens))
	}
	if c.SpeculativeTokens >= d.MaxBatchedTokens && c.MaxBatchedTokens >= 0 {
		errs = append(errs, fmt.Errorf("engine: SpeculativeTokens (%d) must be below MaxBatchedTokens (%d): one decode could not verify its drafts in a step", c.SpeculativeTokens, d.MaxBatchedTokens))
	}
	if d.MaxSeqs > d.MaxBatchedTokens && c.MaxBatchedTokens >= 0 && c.MaxSeqs >= 0 {
		// One rule whether the budget is given or the default, as vLLM
		// requires max_num_batched_tokens >= max_num_seqs.
		errs = append(errs, fmt.Errorf("engine: MaxSeqs (%d) must not exceed MaxBatchedTokens (%d%s): a step could not decode every running sequence", d.MaxSeqs, d.MaxBatchedTokens, defaultNote(c.MaxBatchedTokens)))
	}
	return errors.Join(errs...)
}
