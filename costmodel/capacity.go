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
	Cost     Model // prices the decode, prefill and mixed steps; nil means Frozen{}
}

// OperatingPoint is the load at which the estimate is made.
type OperatingPoint struct {
	Batch        int // decoding sequences per step, in [1, MaxEstimateBatch]
	Context      int // context tokens of each decoding sequence, >= 0
	SeqTokens    int // KV tokens a resident sequence may reach (prompt + output), >= 1
	PromptTokens int // prompt tokens of one request, >= 1
	ChunkTokens  int // prefill chunk mixed into a decode step, >= 1
	OutputTokens int // output tokens of a response, >= 1
	SLO          SLO
}

// SLO is the latency objective a request must meet to count as good.
type SLO struct {
	TTFT time.Duration // time to first token, > 0
	ITL  time.Duration // every inter-token latency, > 0
}

// MaxEstimateBatch bounds OperatingPoint.Batch: the estimate prices a batch
// of that many decoding sequences, so it refuses absurd sizes instead of
// allocating them.
const MaxEstimateBatch = 1 << 20

// Validate names every field that is out of range, and runs the cost
// model's own Validate when it has one.
func (r Replica) Validate() error {
	errs := []error{
		r.Hardware.validate("Replica.Hardware"),
		r.Model.validate("Replica.Model"),
		r.Point.validate("Replica.Point"),
	}
	if v, ok := r.Cost.(interface{ Validate() error }); ok {
		errs = append(errs, v.Validate())
	}
	return errors.Join(errs...)
}

func (p OperatingPoint) validate(path string) error {
	errs := []error{
		atLeast(path+".Batch", p.Batch, 1),
		atLeast(path+".Context", p.Context, 0),
		atLeast(path+".SeqTokens", p.SeqTokens, 1),
		atLeast(path+".PromptTokens", p.PromptTokens, 1),
		atLeast(path+".ChunkTokens", p.ChunkTokens, 1),
		atLeast(path+".OutputTokens", p.OutputTokens, 1),
		durationPositive(path+".SLO.TTFT", p.SLO.TTFT),
		durationPositive(path+".SLO.ITL", p.SLO.ITL),
	}
	if p.Batch > MaxEstimateBatch {
		errs = append(errs, fmt.Errorf("costmodel: %s.Batch must be <= %d, got %d", path, MaxEstimateBatch, p.Batch))
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

// steps are the three step times the estimate takes as given, in ms.
type steps struct {
	decode  float64 // Batch decodes at Context
	prefill float64 // one PromptTokens prompt alone
	mixed   float64 // Batch-1 decodes at Context plus one ChunkTokens chunk
}

// price asks the cost model for the three steps and refuses a model that
// calls real work free.
func (r Replica) price() (steps, error) {
	p, m := r.Point, r.cost()
	mixed := uniformDecode(p.Batch-1, p.Context)
	mixed.Prefill = []Chunk{{NewTokens: p.ChunkTokens}}
	s := steps{
		decode:  milliseconds(m.StepTime(uniformDecode(p.Batch, p.Context))),
		prefill: milliseconds(m.StepTime(lonePrefill(p.PromptTokens))),
		mixed:   milliseconds(m.StepTime(mixed)),
	}
	if !(s.decode > 0 && s.prefill > 0 && s.mixed > 0) {
		return s, fmt.Errorf("costmodel: Replica.Cost priced a non-empty step at 0 (decode %v ms, prefill %v ms, mixed %v ms)", s.decode, s.prefill, s.mixed)
	}
	return s, nil
}
