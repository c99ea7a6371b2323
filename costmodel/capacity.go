package costmodel

import (
	"errors"
	"fmt"
	"time"
)

// Replica is what a capacity estimate needs: the hardware, the model sharded
// over it, an operating point, and the step costs taken as given.
//
// The zero Replica is invalid; start from AtlasTP4 and edit fields.
type Replica struct {
	Hardware Hardware
	Model    ModelSpec
	Point    OperatingPoint
	Cost     Model // prices every step the estimate forms; nil means Frozen{}
}

// OperatingPoint is the replica's configuration and load at which the
// estimate is made: the scheduler's limits (the same as the engine's, so
// that the estimate describes the replica a simulation runs), the
// workload's lengths, the SLO and the offered load.
type OperatingPoint struct {
	// Batch is the sequences one step may hold (the engine's sequence
	// cap, vLLM's max_num_seqs), in [1, MaxEstimateBatch]: the decode
	// figures price a step of Batch decodes.
	Batch int
	// Budget is the tokens one step may compute (the engine's token
	// budget, vLLM's max_num_batched_tokens), >= Batch.
	Budget int
	// ChunkCap is the prefill tokens one request may compute in a step
	// (vLLM's long_prefill_token_threshold), in [0, Budget]; 0 means no
	// cap beyond the budget, vLLM's default.
	ChunkCap     int
	Context      int // context tokens of each decoding sequence, >= 0
	SeqTokens    int // KV tokens a resident sequence may reach (prompt + output), >= 1
	PromptTokens int // prompt tokens of one request, >= 1
	OutputTokens int // output tokens of a response, >= 1
	SLO          Objective
	// Target is the attainment the TTFT-qualified load keeps: the
	// fraction of requests whose queueing must fit the TTFT queue budget,
	// in (0, 1). analysis.Sweep's default is 0.95.
	Target float64
	// Offered is the offered load, requests/s, whose utilisation the
	// estimate reports; 0 means none.
	Offered float64
}

// Objective is the latency objective a request must meet to count as good.
type Objective struct {
	TTFT time.Duration // time to first token, > 0
	ITL  time.Duration // every inter-token latency, > 0
}

// MaxEstimateBatch bounds OperatingPoint.Batch: the estimate prices
// batches of that many decoding sequences, and searches the largest step
// over every split of the batch between decodes and prefill chunks (work
// quadratic in Batch), so it refuses absurd sizes instead of allocating
// them.
const MaxEstimateBatch = 1 << 14

// MaxEstimateChunks bounds the chunks one prompt may take
// (OperatingPoint.PromptTokens over its chunk size): the estimate prices
// each chunk's step.
const MaxEstimateChunks = 1 << 16

// Validate names every field that is out of range, and runs the cost
// model's own Validate when it has one.
func (r Replica) Validate() error { return r.validate("Replica") }

// validate names the fields under path, the way the caller reached r; a
// cost model's own error is prefixed with path's Cost unless path is
// Replica.
func (r Replica) validate(path string) error {
	errs := []error{
		r.Hardware.validate(path + ".Hardware"),
		r.Model.validate(path + ".Model"),
		r.Point.validate(path + ".Point"),
	}
	if v, ok := r.Cost.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil && path != "Replica" {
			errs = append(errs, fmt.Errorf("%s.Cost: %w", path, err))
		} else {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (p OperatingPoint) validate(path string) error {
	errs := []error{
		atLeast(path+".Batch", p.Batch, 1),
		atLeast(path+".Context", p.Context, 0),
		atLeast(path+".SeqTokens", p.SeqTokens, 1),
		atLeast(path+".PromptTokens", p.PromptTokens, 1),
		atLeast(path+".ChunkCap", p.ChunkCap, 0),
		atLeast(path+".OutputTokens", p.OutputTokens, 1),
		durationPositive(path+".SLO.TTFT", p.SLO.TTFT),
		durationPositive(path+".SLO.ITL", p.SLO.ITL),
		nonNegative(path+".Offered", p.Offered),
	}
	if p.Batch > MaxEstimateBatch {
		errs = append(errs, fmt.Errorf("costmodel: %s.Batch must be <= %d, got %d", path, MaxEstimateBatch, p.Batch))
	}
	if p.Budget < p.Batch {
		// As the engine and vLLM require max_num_batched_tokens >= max_num_seqs.
		errs = append(errs, fmt.Errorf("costmodel: %s.Budget (%d) must be >= Batch (%d): a step could not decode every running sequence", path, p.Budget, p.Batch))
	}
	if p.ChunkCap > p.Budget {
		errs = append(errs, fmt.Errorf("costmodel: %s.ChunkCap (%d) must not exceed Budget (%d)", path, p.ChunkCap, p.Budget))
	}
	if p.Budget >= p.Batch && p.ChunkCap >= 0 && p.PromptTokens >= 1 && p.promptChunks() > MaxEstimateChunks {
		errs = append(errs, fmt.Errorf("costmodel: %s.PromptTokens (%d) takes %d chunks of %d tokens, more than the %d the estimate prices", path, p.PromptTokens, p.promptChunks(), p.chunkSize(), MaxEstimateChunks))
	}
	if !(p.Target > 0 && p.Target < 1) {
		errs = append(errs, fmt.Errorf("costmodel: %s.Target must be in (0, 1) (0.95 keeps 95 %% of requests), got %v", path, p.Target))
	}
	return errors.Join(errs...)
}

// cost is the replica's step model, Frozen{} when unset.
func (r Replica) cost() Model {
	if r.Cost == nil {
		return Frozen{}
	}
	return r.Cost
}

// steps are the step times the estimate takes from the cost model, in ms.
type steps struct {
	decode  float64 // Batch decodes at Context
	prefill float64 // one PromptTokens prompt alone
	mixed   formed  // the longest step with one prefill chunk beside the decodes
	largest formed  // the longest step the scheduler can form
	chunked float64 // the prompt's prefill in the engine's chunks, each chunk a step of its own
	busy    float64 // the same chunks, each in a step beside Batch − 1 decodes
	chunks  int     // the chunks the prompt takes
}

// price asks the cost model for the steps and refuses a model that calls
// real work free.
func (r Replica) price() (steps, error) {
	p, m := r.Point, r.cost()
	longest := max(p.Context, p.SeqTokens-1)
	s := steps{
		decode:  milliseconds(m.StepTime(uniformDecode(p.Batch, p.Context))),
		prefill: milliseconds(m.StepTime(lonePrefill(p.PromptTokens))),
		mixed:   p.largestStep(m, longest, 1),
		largest: p.largestStep(m, longest, 0),
	}
	s.chunked, s.chunks = p.chunkedPrefill(m, nil)
	s.busy, _ = p.chunkedPrefill(m, uniformDecode(p.Batch-1, p.Context).Decode)
	if !(s.decode > 0 && s.prefill > 0 && s.mixed.ms > 0 && s.chunked > 0) {
		return s, fmt.Errorf("costmodel: Replica.Cost priced a non-empty step at 0 (decode %v ms, prefill %v ms, mixed %v ms)", s.decode, s.prefill, s.mixed.ms)
	}
	return s, nil
}
