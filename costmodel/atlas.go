package costmodel

import "time"

// The Atlas TP4 replica of the reference chapter: a 70B dense model served
// with tensor parallelism over four accelerators. Other packages use these
// figures as their defaults (the engine's KV pool is AtlasKVBlocks blocks of
// AtlasKVBlockSize tokens).
const (
	AtlasAccelerators    = 4                                      // tensor-parallel degree
	AtlasMemBandwidth    = 3e12                                   // bytes/s per accelerator (~3 TB/s)
	AtlasPeakFLOPS       = 1e15                                   // FLOP/s per accelerator (~1 PFLOPS class)
	AtlasWeightBytes     = 35e9                                   // bytes of weight shard per accelerator (35 GB)
	AtlasFLOPsPerToken   = 2 * 70e9                               // FLOP per token (2 × 70 G parameters)
	AtlasKVBytesPerToken = 80 << 10                               // bytes per token per accelerator: 80 layers × 8 KV heads × 128 dim × K,V × 2 B / 4
	AtlasKVCapacity      = 35 << 30                               // bytes of KV cache per accelerator (35 GiB)
	AtlasKVBlockSize     = 16                                     // tokens per KV block
	AtlasKVTokens        = AtlasKVCapacity / AtlasKVBytesPerToken // 458,752 tokens
	AtlasKVBlocks        = AtlasKVTokens / AtlasKVBlockSize       // 28,672 blocks

	AtlasBatch        = 32                     // operating batch, decoding sequences
	AtlasTokenBudget  = 2048                   // tokens one step may compute (vLLM's default max_num_batched_tokens)
	AtlasContext      = 2000                   // context tokens per decoding sequence at the roofline anchor
	AtlasSeqTokens    = 8000                   // KV tokens a resident sequence may reach
	AtlasPromptTokens = 2000                   // prompt tokens of the prefill cross-check
	AtlasChunkTokens  = 256                    // the prefill chunk of the chapter's mixed step (not a cap: vLLM's default has none)
	AtlasOutputTokens = 200                    // output tokens of a typical response
	AtlasTTFT         = 600 * time.Millisecond // SLO: time to first token
	AtlasITL          = 150 * time.Millisecond // SLO: every inter-token gap
	AtlasTarget       = 0.95                   // attainment target: the fraction of requests that must meet the SLO
)

// AtlasTP4 returns the chapter's Atlas TP4 replica at its operating point,
// priced by the Frozen model, scheduled as sim.Config{} schedules it
// (vLLM's defaults: a 2,048-token budget, no chunk cap; set ChunkCap to
// AtlasChunkTokens for the chapter's 73.96 ms mixed step). Copy it and edit
// a field to explore.
func AtlasTP4() Replica {
	return Replica{
		Hardware: Hardware{
			Accelerators: AtlasAccelerators,
			MemBandwidth: AtlasMemBandwidth,
			PeakFLOPS:    AtlasPeakFLOPS,
			KVCapacity:   AtlasKVCapacity,
		},
		Model: ModelSpec{
			WeightBytes:     AtlasWeightBytes,
			KVBytesPerToken: AtlasKVBytesPerToken,
			FLOPsPerToken:   AtlasFLOPsPerToken,
		},
		Point: OperatingPoint{
			Batch:        AtlasBatch,
			Budget:       AtlasTokenBudget,
			Context:      AtlasContext,
			SeqTokens:    AtlasSeqTokens,
			PromptTokens: AtlasPromptTokens,
			OutputTokens: AtlasOutputTokens,
			SLO:          Objective{TTFT: AtlasTTFT, ITL: AtlasITL},
			Target:       AtlasTarget,
		},
		Cost: Frozen{},
	}
}

// AtlasRoofline returns the Atlas TP4 roofline calibrated on the chapter's
// two anchors: the 45 ms decode step of 32 sequences at 2,000 context
// (memory-bound: sets MemEfficiency ≈ 0.30) and the 90 ms lone prefill of
// 2,000 tokens (compute-bound: sets ComputeEfficiency ≈ 0.78).
func AtlasRoofline() Roofline {
	r := Roofline{Hardware: AtlasTP4().Hardware, Model: AtlasTP4().Model}
	r, err := r.Calibrate(uniformDecode(AtlasBatch, AtlasContext), AtlasDecodeStep)
	if err != nil {
		panic("costmodel: Atlas decode anchor must calibrate: " + err.Error())
	}
	r, err = r.Calibrate(lonePrefill(AtlasPromptTokens), Frozen{}.PrefillTime(AtlasPromptTokens))
	if err != nil {
		panic("costmodel: Atlas prefill anchor must calibrate: " + err.Error())
	}
	return r
}

// uniformDecode is a batch of n decoding sequences of ctx context each.
func uniformDecode(n, ctx int) Batch {
	d := make([]int, n)
	for i := range d {
		d[i] = ctx
	}
	return Batch{Decode: d}
}

// lonePrefill is a batch holding one n-token prompt chunk and nothing else.
func lonePrefill(n int) Batch { return Batch{Prefill: []Chunk{{NewTokens: n}}} }
