package costmodeltest

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/servesim/servesim/costmodel"
)

// randomBatch draws a non-empty batch: up to 64 decodes with context up to
// 32k tokens and up to 4 chunks of up to 8k tokens on up to 32k context,
// with small batches as likely as large ones.
func randomBatch(rng *rand.Rand) costmodel.Batch {
	var b costmodel.Batch
	for b.Empty() {
		for range rng.IntN(65) {
			b.Decode = append(b.Decode, rng.IntN(1<<15))
		}
		for range rng.IntN(5) {
			b.Prefill = append(b.Prefill, costmodel.Chunk{NewTokens: 1 + rng.IntN(1<<13), Context: rng.IntN(1 << 15)})
		}
	}
	if len(b.Decode) > 0 && rng.IntN(3) == 0 { // speculative: up to 8 drafts each
		b.Verify = make([]int, len(b.Decode))
		for i := range b.Verify {
			b.Verify[i] = 1 + rng.IntN(9)
		}
	}
	return b
}

// growth is a batch with more work than some base batch, and how it grew.
type growth struct {
	what  string
	batch costmodel.Batch
}

// growths lists b grown in every way the Model contract covers: one more
// decode, one more chunk, and, for the first decode and the first chunk,
// more context or more tokens. Each is a fresh copy.
func growths(b costmodel.Batch) []growth {
	var gs []growth
	add := func(what string, edit func(*costmodel.Batch)) {
		g := clone(b)
		edit(&g)
		gs = append(gs, growth{what, g})
	}
	addDecode := func(g *costmodel.Batch, ctx int) {
		g.Decode = append(g.Decode, ctx)
		if g.Verify != nil {
			g.Verify = append(g.Verify, 1)
		}
	}
	add("adding a decode at context 0", func(g *costmodel.Batch) { addDecode(g, 0) })
	add("adding a decode at context 4096", func(g *costmodel.Batch) { addDecode(g, 4096) })
	add("adding a 1-token chunk", func(g *costmodel.Batch) { g.Prefill = append(g.Prefill, costmodel.Chunk{NewTokens: 1}) })
	add("adding a 512-token chunk on 1024 context", func(g *costmodel.Batch) {
		g.Prefill = append(g.Prefill, costmodel.Chunk{NewTokens: 512, Context: 1024})
	})
	if len(b.Decode) > 0 {
		add("one more context token on decode 0", func(g *costmodel.Batch) { g.Decode[0]++ })
		add("1000 more context tokens on decode 0", func(g *costmodel.Batch) { g.Decode[0] += 1000 })
		add("one more verified position on decode 0", func(g *costmodel.Batch) {
			if g.Verify == nil {
				g.Verify = ones(len(g.Decode))
			}
			g.Verify[0]++
		})
	}
	if len(b.Prefill) > 0 {
		add("one more token in chunk 0", func(g *costmodel.Batch) { g.Prefill[0].NewTokens++ })
		add("1000 more tokens in chunk 0", func(g *costmodel.Batch) { g.Prefill[0].NewTokens += 1000 })
		add("1000 more context tokens under chunk 0", func(g *costmodel.Batch) { g.Prefill[0].Context += 1000 })
	}
	return gs
}

func clone(b costmodel.Batch) costmodel.Batch {
	return costmodel.Batch{Prefill: slices.Clone(b.Prefill), Decode: slices.Clone(b.Decode), Verify: slices.Clone(b.Verify)}
}

func equal(a, b costmodel.Batch) bool {
	return slices.Equal(a.Prefill, b.Prefill) && slices.Equal(a.Decode, b.Decode) && slices.Equal(a.Verify, b.Verify)
}

// ones is n positions of 1: every decode verifying only its own token.
func ones(n int) []int {
	v := make([]int, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// describe summarises a batch for a message, without listing every entry.
func describe(b costmodel.Batch) string {
	return fmt.Sprintf("{%d decodes, Σcontext %d, %d drafts verified; %d chunks, %d tokens}",
		len(b.Decode), b.DecodeContext(), b.ExtraVerified(), len(b.Prefill), b.PrefillTokens())
}
