package costmodel

import "errors"

// Hardware holds the declared figures of one replica's accelerators. Every
// per-accelerator figure assumes the model is sharded evenly (tensor
// parallelism over Accelerators).
//
// The zero Hardware is invalid; AtlasTP4 holds the chapter's figures.
type Hardware struct {
	Accelerators int     // accelerators in the replica (tensor-parallel degree), >= 1
	MemBandwidth float64 // memory bandwidth per accelerator, bytes/s, > 0
	PeakFLOPS    float64 // peak dense compute per accelerator, FLOP/s, > 0
	KVCapacity   float64 // memory per accelerator left for the KV cache, bytes, > 0
}

// Validate names every field that is out of range.
func (h Hardware) Validate() error { return h.validate("Hardware") }

// validate names the fields under path, the way the caller reached h.
func (h Hardware) validate(path string) error {
	return errors.Join(
		atLeast(path+".Accelerators", h.Accelerators, 1),
		positive(path+".MemBandwidth", h.MemBandwidth),
		positive(path+".PeakFLOPS", h.PeakFLOPS),
		positive(path+".KVCapacity", h.KVCapacity),
	)
}

// streamMs is the time to move bytes through one accelerator's memory at
// the declared bandwidth, in milliseconds.
func (h Hardware) streamMs(bytes float64) float64 { return bytes / h.MemBandwidth * 1e3 }

// computeMs is the time to compute flops over all accelerators at peak, in
// milliseconds.
func (h Hardware) computeMs(flops float64) float64 {
	return flops / (float64(h.Accelerators) * h.PeakFLOPS) * 1e3
}

// ModelSpec holds the figures of the served model as sharded over a
// replica.
//
// The zero ModelSpec is invalid; AtlasTP4 holds the chapter's 70B figures.
type ModelSpec struct {
	WeightBytes     float64 // weight shard per accelerator, bytes, > 0
	KVBytesPerToken float64 // KV cache per token per accelerator, bytes, > 0
	FLOPsPerToken   float64 // forward-pass work per token, whole model, FLOP (≈ 2 × parameters), > 0
}

// Validate names every field that is out of range.
func (m ModelSpec) Validate() error { return m.validate("ModelSpec") }

// validate names the fields under path, the way the caller reached m.
func (m ModelSpec) validate(path string) error {
	return errors.Join(
		positive(path+".WeightBytes", m.WeightBytes),
		positive(path+".KVBytesPerToken", m.KVBytesPerToken),
		positive(path+".FLOPsPerToken", m.FLOPsPerToken),
	)
}
