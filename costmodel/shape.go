package costmodel

// numTerms is the number of terms of the Linear form.
const numTerms = 6

// shape holds the sums over a batch that the Linear, Fit and Roofline models
// use, computed in one allocation-free pass. Floats, so that no sum can
// overflow an int.
//
// A decode that verifies P > 1 positions (speculative decoding) is its one
// decoded token plus P − 1 tokens computed like a prefill chunk on its
// context, without a chunk's per-sequence terms: the drafts add to the
// prefill tokens and to the attention pairs (each of the P − 1 attends to
// the context and the positions before it). So every model built on shape
// prices verification by its own prefill rates.
type shape struct {
	seqs           float64 // scheduled sequences
	decodes        float64 // decoding sequences (one token each)
	decodeContext  float64 // Σ decode context tokens
	prefillTokens  float64 // Σ chunk new tokens
	prefillContext float64 // Σ chunk context tokens
	attention      float64 // Σ n·c + n(n+1)/2 over chunks (causal attention pairs)
}

func shapeOf(b Batch) shape {
	s := shape{
		seqs:    float64(b.Seqs()),
		decodes: float64(len(b.Decode)),
	}
	if b.Verify == nil {
		s.decodeContext = contextSum(b.Decode)
	} else {
		for i, c := range b.Decode {
			s.decodeContext += float64(c)
			if n := float64(b.Verified(i) - 1); n > 0 {
				ctx := float64(c) + 1
				s.prefillTokens += n
				s.attention += n*ctx + n*(n+1)/2
			}
		}
	}
	for _, c := range b.Prefill {
		n, ctx := float64(c.NewTokens), float64(c.Context)
		s.prefillTokens += n
		s.prefillContext += ctx
		s.attention += n*ctx + n*(n+1)/2
	}
	return s
}

// contextSum is Σ contexts as the float sum in order would give it, by an
// integer sum when that is the same number: contexts in [0, 2³²) and
// fewer than 2²¹ of them keep every partial sum an integer below 2⁵³,
// which a float holds exactly. Pricing a decode step reads every context
// (a decode cohort's step lists its sum and zeros), and the integer loop
// is the cheaper; anything else takes the float loop.
func contextSum(contexts []int) float64 {
	if len(contexts) < 1<<21 {
		sum := 0
		for _, c := range contexts {
			if uint(c) >= 1<<32 {
				return floatSum(contexts)
			}
			sum += c
		}
		return float64(sum)
	}
	return floatSum(contexts)
}

func floatSum(contexts []int) float64 {
	s := 0.0
	for _, c := range contexts {
		s += float64(c)
	}
	return s
}

// tokens is the number of tokens computed in the step.
func (s shape) tokens() float64 { return s.prefillTokens + s.decodes }

// vector lists the features in the order of Linear.coefficients; the first,
// the per-step term, is 1 for a non-empty step.
func (s shape) vector() [numTerms]float64 {
	return [numTerms]float64{1, s.seqs, s.decodes, s.decodeContext, s.prefillTokens, s.attention}
}
