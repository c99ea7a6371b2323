package costmodel

import (
	"errors"
	"fmt"
	"time"
)

// Roofline prices a step from hardware and model figures: the larger of its
// memory time and its compute time, plus fixed overheads.
//
//	memory  = (WeightBytes + KVBytesPerToken × KV tokens) / (MemBandwidth × MemEfficiency)
//	compute = FLOPsPerToken × tokens computed / (Accelerators × PeakFLOPS × ComputeEfficiency)
//	step    = StepOverhead + SeqOverhead × sequences + max(memory, compute)
//
// KV tokens are those read (decode and chunk context) plus those written (one
// per computed token); attention FLOPs are taken to be folded into
// FLOPsPerToken. Draft positions a speculative decode verifies
// (Batch.Verify) are computed tokens too, each written to KV. The empty
// batch costs 0.
//
// The zero efficiencies mean 1 (the bare roofline); Calibrate scales them so
// the model matches a measured step. AtlasRoofline is the calibrated Atlas
// TP4 model. The zero Roofline is invalid (no hardware figures).
type Roofline struct {
	Hardware Hardware
	Model    ModelSpec

	MemEfficiency     float64       // achieved fraction of MemBandwidth, in (0, 1]; 0 means 1
	ComputeEfficiency float64       // achieved fraction of PeakFLOPS, in (0, 1]; 0 means 1
	StepOverhead      time.Duration // fixed cost per non-empty step, >= 0
	SeqOverhead       time.Duration // cost per scheduled sequence, >= 0
}

// Validate names every field that is out of range.
func (r Roofline) Validate() error {
	return errors.Join(
		r.Hardware.validate("Roofline.Hardware"),
		r.Model.validate("Roofline.Model"),
		fraction("Roofline.MemEfficiency", r.MemEfficiency),
		fraction("Roofline.ComputeEfficiency", r.ComputeEfficiency),
		durationNonNegative("Roofline.StepOverhead", r.StepOverhead),
		durationNonNegative("Roofline.SeqOverhead", r.SeqOverhead),
	)
}

// DecodeSum reports true: a batch's decode contexts enter its price only
// through the KV tokens it reads, their sum (see DecodeSum).
func (Roofline) DecodeSum() bool { return true }

// StepTime prices b. It does not allocate.
func (r Roofline) StepTime(b Batch) time.Duration {
	if b.Empty() {
		return 0
	}
	s := shapeOf(b)
	mem, compute := r.roofs(s)
	return stepDuration(r.overheadMs(s) + max(mem, compute))
}

// roofs returns the memory and compute times of a batch, in milliseconds, at
// the configured efficiencies.
func (r Roofline) roofs(s shape) (memMs, computeMs float64) {
	kvTokens := s.decodeContext + s.prefillContext + s.tokens()
	bytes := r.Model.WeightBytes + r.Model.KVBytesPerToken*kvTokens
	memMs = r.Hardware.streamMs(bytes) / orOne(r.MemEfficiency)
	computeMs = r.Hardware.computeMs(r.Model.FLOPsPerToken*s.tokens()) / orOne(r.ComputeEfficiency)
	return memMs, computeMs
}

// overheadMs is the fixed part of a step, in milliseconds.
func (r Roofline) overheadMs(s shape) float64 {
	return milliseconds(r.StepOverhead) + milliseconds(r.SeqOverhead)*s.seqs
}

// orOne maps the zero efficiency to 1.
func orOne(eff float64) float64 {
	if eff == 0 {
		return 1
	}
	return eff
}

// Calibrate returns a copy of r whose efficiency on the roof that binds at
// anchor (memory or compute) is scaled so that StepTime(anchor) equals
// measured, to the nanosecond's rounding. The other roof is left alone, so a
// memory-bound decode anchor and a compute-bound prefill anchor can be
// applied one after the other.
//
// It fails when r or anchor is invalid or empty, when measured does not
// exceed the overheads, when the other roof alone is already slower than
// measured, or when hitting measured would need an efficiency above 1.
func (r Roofline) Calibrate(anchor Batch, measured time.Duration) (Roofline, error) {
	if err := errors.Join(r.Validate(), anchor.Validate()); err != nil {
		return r, err
	}
	if anchor.Empty() {
		return r, errors.New("costmodel: Roofline.Calibrate needs a non-empty anchor batch")
	}
	s := shapeOf(anchor)
	target := milliseconds(measured) - r.overheadMs(s)
	if !(target > 0) {
		return r, fmt.Errorf("costmodel: Roofline.Calibrate: measured %v does not exceed the overheads %.6g ms", measured, r.overheadMs(s))
	}
	mem, compute := r.roofs(s)
	var err error
	if mem >= compute {
		r.MemEfficiency, err = scaledEfficiency(r.MemEfficiency, "MemEfficiency", mem, compute, target)
	} else {
		r.ComputeEfficiency, err = scaledEfficiency(r.ComputeEfficiency, "ComputeEfficiency", compute, mem, target)
	}
	return r, err
}

// scaledEfficiency returns the efficiency at which the binding roof, taking
// binding ms at eff, takes target ms instead; on error it returns eff.
func scaledEfficiency(eff float64, name string, binding, other, target float64) (float64, error) {
	if other > target {
		return eff, fmt.Errorf("costmodel: Roofline.Calibrate: the other roof alone takes %.6g ms, more than the measured %.6g ms", other, target)
	}
	scaled := orOne(eff) * binding / target
	if scaled > 1 {
		return eff, fmt.Errorf("costmodel: Roofline.Calibrate: the anchor would need %s %.4g > 1 (faster than the declared roof)", name, scaled)
	}
	return scaled, nil
}
