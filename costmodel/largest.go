package costmodel

// This file holds the steps a scheduler configuration can form: the
// largest (against the ITL bound) and a prompt's prefill in the chunks the
// scheduler cuts it into (against the serving capacity). The package is a
// leaf, so it cannot ask the engine: it forms the steps from the limits of
// the operating point (Batch, Budget, ChunkCap) the way the engine's
// scheduler does, and engine.LargestStep must agree with it (the capacity
// report's tests hold them to the same durations).

// formed is a step the scheduler can form: its time and shape.
type formed struct {
	ms      float64 // its time, ms
	decodes int     // decoding sequences in it
	tokens  int     // prefill tokens in it
	chunks  int     // prefill chunks (requests in prefill) in it
}

// largestStep is the longest step the scheduler can form, every decoding
// sequence at ctx context: d decodes and up to Budget − d prefill tokens in
// chunks of at most ChunkCap, from at most prefills requests (0: as many
// as the Batch − d seats left allow), the longest over d from 1 to Batch (a
// step without a decode holds no inter-token gap). Chunks are priced on no
// context, prompts as long as the budget allows, as engine.LargestStep
// does. With prefills = 0 it is the worst case: short of a preemption no
// inter-token gap is longer. With prefills = 1 it is the chapter's mixed
// step, one chunk beside the decodes, which every prompt's prefill forms.
// On a tie the step with more decodes is kept: the one more requests meet.
func (p OperatingPoint) largestStep(m Model, ctx, prefills int) formed {
	decodes := uniformDecode(p.Batch, ctx).Decode
	var chunks []Chunk
	var best formed
	for d := 1; d <= min(p.Batch, p.Budget); d++ {
		left, seats := p.Budget-d, p.Batch-d
		if prefills > 0 {
			seats = min(seats, prefills)
		}
		chunks = chunks[:0]
		tokens := 0
		for left > 0 && seats > 0 {
			n := left
			if p.ChunkCap > 0 {
				n = min(n, p.ChunkCap)
			}
			chunks = append(chunks, Chunk{NewTokens: n})
			left, tokens, seats = left-n, tokens+n, seats-1
		}
		if t := milliseconds(m.StepTime(Batch{Decode: decodes[:d], Prefill: chunks})); t >= best.ms {
			best = formed{ms: t, decodes: d, tokens: tokens, chunks: len(chunks)}
		}
	}
	return best
}

// chunkSize is the largest chunk one prompt gets in a step of a busy
// replica: the chunk cap, within the budget the other Batch − 1 seats'
// decodes leave.
func (p OperatingPoint) chunkSize() int {
	n := p.Budget - (p.Batch - 1)
	if p.ChunkCap > 0 {
		n = min(n, p.ChunkCap)
	}
	return n
}

// chunkedPrefill is the prefill of one PromptTokens prompt in the chunks a
// busy replica cuts it into (chunkSize each, the last shorter), each chunk
// on the context of the chunks before it, in steps beside the given
// decodes. With no decodes every chunk is priced as a step of its own: the
// prompt's prefill work when no other prompt shares its steps (each chunk
// pays the step's fixed cost). Beside Batch − 1 decodes it is how long the
// prompt's prefill takes on a busy replica, its first token coming at the
// end of the last chunk's step. It returns the time in ms and the chunks.
func (p OperatingPoint) chunkedPrefill(m Model, decodes []int) (ms float64, chunks int) {
	size := p.chunkSize()
	chunks = p.promptChunks()
	for i := range chunks {
		done := i * size
		n := min(size, p.PromptTokens-done)
		ms += milliseconds(m.StepTime(Batch{Decode: decodes, Prefill: []Chunk{{NewTokens: n, Context: done}}}))
	}
	return ms, chunks
}

// promptChunks is how many chunks of chunkSize a prompt takes.
func (p OperatingPoint) promptChunks() int {
	size := p.chunkSize()
	k := p.PromptTokens / size
	if p.PromptTokens%size != 0 {
		k++
	}
	return k
}
