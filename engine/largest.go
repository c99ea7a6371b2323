package engine

import (
	"time"

	"github.com/servesim/servesim/costmodel"
)

// LargestStep is the longest step the scheduler configured by cfg can
// form, priced by m (nil: costmodel.Frozen{}), with every decoding
// sequence at context tokens, and the batch that forms it. With chunked
// prefill a step holds d decodes and up to budget − d prefill tokens, in
// chunks of at most ChunkCap, from at most prefills requests (0: as many
// as the sequence cap leaves room for); the largest is taken over d from
// 1 to MaxSeqs (a step with no decode holds no inter-token gap). With
// prefills = 0 it is the worst case: a decoding request emits a token
// every step it is in, so without preemption none of its inter-token gaps
// is longer. With prefills = 1 it is the chapter's mixed step, one chunk
// beside the decodes: the ITL tax a chunk cap sets. Without chunked
// prefill the same steps form, the prefill a whole prompt of up to the
// budget the decodes leave (vLLM V1 schedules running decodes first either
// way; ChunkCap is 0 then). With speculative decoding (SpeculativeTokens
// = K) each decode verifies 1 or K + 1 positions, all within the budget,
// and m should price the drafter too (costmodel.Drafting).
func LargestStep(cfg Config, m costmodel.Model, context, prefills int) (time.Duration, costmodel.Batch) {
	cfg = cfg.WithDefaults()
	if m == nil {
		m = costmodel.Frozen{}
	}
	decodes := func(d int) []int {
		out := make([]int, d)
		for i := range out {
			out[i] = context
		}
		return out
	}
	var best time.Duration
	var shape costmodel.Batch
	consider := func(b costmodel.Batch) {
		if t := m.StepTime(b); t > best {
			best, shape = t, b
		}
	}
	widths := []int{1} // positions each decode verifies
	if k := cfg.SpeculativeTokens; k > 0 {
		widths = append(widths, k+1)
	}
	for _, w := range widths {
		for d := 1; d*w <= cfg.MaxBatchedTokens && d <= cfg.MaxSeqs; d++ {
			b := costmodel.Batch{Decode: decodes(d)}
			if cfg.SpeculativeTokens > 0 {
				b.Verify = make([]int, d)
				for i := range b.Verify {
					b.Verify[i] = w
				}
			}
			left, seqs := cfg.MaxBatchedTokens-d*w, cfg.MaxSeqs-d
			if prefills > 0 {
				seqs = min(seqs, prefills)
			}
			for left > 0 && seqs > 0 {
				n := left
				if cfg.ChunkCap > 0 {
					n = min(n, cfg.ChunkCap)
				}
				b.Prefill = append(b.Prefill, costmodel.Chunk{NewTokens: n})
				left -= n
				seqs--
			}
			consider(b)
		}
	}
	return best, shape
}
