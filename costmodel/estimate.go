package costmodel

import (
	"fmt"
	"math"
)

// Figure is one number of a capacity estimate: its value in Unit, the
// arithmetic it came from, and the knob that would move it.
type Figure struct {
	Name  string  // what the number is, e.g. "KV concurrency"
	Value float64 // in Unit
	Unit  string  // "ms", "tokens/s", "sequences", "%", "req/s", ...
	Basis string  // the arithmetic, with its inputs
	Knob  string  // what moves the bound
}

// String formats the figure on one line: name, value, unit.
func (f Figure) String() string { return fmt.Sprintf("%s: %.4g %s", f.Name, f.Value, f.Unit) }

// Estimate is the chapter's capacity estimate of one replica, bound by
// bound, made from declared figures before any measurement. Figures lists
// the same figures in reading order.
type Estimate struct {
	WeightStream     Figure // ms to stream the weight shard once
	KVStream         Figure // ms to stream the batch's KV context once
	RooflineFloor    Figure // ms, the sum: no decode step can be faster
	DecodeStep       Figure // ms, the decode step the cost model declares
	RooflineShare    Figure // %, roofline floor / decode step
	DecodeThroughput Figure // output tokens/s at the batch
	KVTokens         Figure // tokens the KV cache holds
	KVPerSequence    Figure // GiB of KV per full-length sequence
	KVSequences      Figure // whole sequences the KV cache holds
	KVOccupancy      Figure // % of KV used by the batch at full length
	DecodeMFU        Figure // % of peak compute used by a decode step
	PrefillTime      Figure // ms for one prompt alone: the TTFT floor
	PrefillMFU       Figure // % of peak compute used by that prefill
	TTFTQueueBudget  Figure // ms of queueing the TTFT SLO leaves
	MixedStep        Figure // ms of a decode step carrying one chunk: the ITL under prefill
	DecodeRequests   Figure // requests/s that decode alone sustains

	// Warnings says, in plain sentences, where the operating point already
	// breaks a bound: a batch the KV cache cannot hold, or a step or a
	// prefill longer than its SLO. Empty when none.
	Warnings []string
}

// Figures lists the estimate's figures in reading order.
func (e Estimate) Figures() []Figure {
	return []Figure{
		e.WeightStream, e.KVStream, e.RooflineFloor, e.DecodeStep, e.RooflineShare,
		e.DecodeThroughput, e.KVTokens, e.KVPerSequence, e.KVSequences, e.KVOccupancy,
		e.DecodeMFU, e.PrefillTime, e.PrefillMFU, e.TTFTQueueBudget, e.MixedStep,
		e.DecodeRequests,
	}
}

// Estimate computes the capacity estimate of r, or says why r is invalid.
func (r Replica) Estimate() (Estimate, error) {
	if err := r.Validate(); err != nil {
		return Estimate{}, err
	}
	s, err := r.price()
	if err != nil {
		return Estimate{}, err
	}
	var e Estimate
	r.roofline(&e, s)
	r.concurrency(&e)
	r.utilisation(&e, s)
	r.latency(&e, s)
	e.Warnings = r.warnings(e, s)
	return e, nil
}

// warnings lists the bounds the operating point breaks.
func (r Replica) warnings(e Estimate, s steps) []string {
	p := r.Point
	var w []string
	if float64(p.Batch) > e.KVSequences.Value {
		w = append(w, fmt.Sprintf("batch %d exceeds the %v sequences of %d tokens the KV cache holds: expect preemption", p.Batch, e.KVSequences.Value, p.SeqTokens))
	}
	if itl := milliseconds(p.SLO.ITL); s.decode > itl {
		w = append(w, fmt.Sprintf("the decode step (%.4g ms) exceeds the ITL SLO (%v): every token misses", s.decode, p.SLO.ITL))
	} else if s.mixed > itl {
		w = append(w, fmt.Sprintf("a %d-token chunk stretches the step to %.4g ms, over the ITL SLO (%v): use smaller chunks", p.ChunkTokens, s.mixed, p.SLO.ITL))
	}
	for _, f := range []Figure{e.DecodeMFU, e.PrefillMFU} {
		if f.Value > 100 {
			w = append(w, fmt.Sprintf("%s is %.4g %%: the cost model is faster than the declared peak compute", f.Name, f.Value))
		}
	}
	if s.prefill > milliseconds(p.SLO.TTFT) {
		w = append(w, fmt.Sprintf("a %d-token prefill alone (%.4g ms) exceeds the TTFT SLO (%v), before any queueing", p.PromptTokens, s.prefill, p.SLO.TTFT))
	}
	return w
}

// roofline fills the decode-throughput figures.
func (r Replica) roofline(e *Estimate, s steps) {
	h, m, p := r.Hardware, r.Model, r.Point
	kvBytes := float64(p.Batch) * float64(p.Context) * m.KVBytesPerToken
	w, kv := h.streamMs(m.WeightBytes), h.streamMs(kvBytes)
	bw := si(h.MemBandwidth, "B/s")
	e.WeightStream = Figure{"weight streaming", w, "ms",
		fmt.Sprintf("%s / %s", si(m.WeightBytes, "B"), bw),
		"weight bytes per accelerator (quantisation, wider tensor parallelism)"}
	e.KVStream = Figure{"KV streaming", kv, "ms",
		fmt.Sprintf("%d seq × %d tokens × %s = %s / %s", p.Batch, p.Context, binary(m.KVBytesPerToken), binary(kvBytes), bw),
		"batch × context, KV bytes per token"}
	e.RooflineFloor = Figure{"roofline floor", w + kv, "ms",
		fmt.Sprintf("%.4g + %.4g ms", w, kv), "memory bandwidth, bytes moved per step"}
	e.DecodeStep = Figure{"decode step", s.decode, "ms",
		fmt.Sprintf("cost model, %d seq × %d context", p.Batch, p.Context),
		"step time: launch overhead, attention, sampling, collectives"}
	e.RooflineShare = Figure{"roofline share", 100 * (w + kv) / s.decode, "%",
		fmt.Sprintf("%.4g / %.4g ms", w+kv, s.decode), "engine overheads above the roofline"}
	e.DecodeThroughput = Figure{"decode throughput", float64(p.Batch) / s.decode * 1e3, "tokens/s",
		fmt.Sprintf("%d tokens / %.4g ms", p.Batch, s.decode), "step time, batch"}
	e.DecodeRequests = Figure{"decode-only capacity", e.DecodeThroughput.Value / float64(p.OutputTokens), "req/s",
		fmt.Sprintf("%.4g tokens/s / %d output tokens", e.DecodeThroughput.Value, p.OutputTokens),
		"step time, batch, output length"}
}

// concurrency fills the KV figures.
func (r Replica) concurrency(e *Estimate) {
	h, m, p := r.Hardware, r.Model, r.Point
	perSeq := float64(p.SeqTokens) * m.KVBytesPerToken
	seqs := h.KVCapacity / perSeq
	e.KVTokens = Figure{"KV capacity", math.Floor(h.KVCapacity / m.KVBytesPerToken), "tokens",
		fmt.Sprintf("%s / %s", binary(h.KVCapacity), binary(m.KVBytesPerToken)),
		"KV bytes: memory for KV, KV bytes per token (KV quantisation, GQA)"}
	e.KVPerSequence = Figure{"KV per sequence", perSeq / (1 << 30), "GiB",
		fmt.Sprintf("%d tokens × %s", p.SeqTokens, binary(m.KVBytesPerToken)), "sequence length, KV bytes per token"}
	e.KVSequences = Figure{"KV concurrency", math.Floor(seqs), "sequences",
		fmt.Sprintf("%s / %.3g GiB per sequence", binary(h.KVCapacity), perSeq/(1<<30)),
		"KV bytes: memory for KV, KV bytes per token, sequence length"}
	e.KVOccupancy = Figure{"KV occupancy", 100 * float64(p.Batch) / seqs, "%",
		fmt.Sprintf("%d / %.4g sequences", p.Batch, seqs), "batch, KV bytes"}
}

// utilisation fills the MFU cross-checks.
func (r Replica) utilisation(e *Estimate, s steps) {
	h, m, p := r.Hardware, r.Model, r.Point
	peak := fmt.Sprintf("%d × %s", h.Accelerators, si(h.PeakFLOPS, "FLOP/s"))
	decode := m.FLOPsPerToken * float64(p.Batch)
	prefill := m.FLOPsPerToken * float64(p.PromptTokens)
	e.DecodeMFU = Figure{"decode MFU", 100 * h.computeMs(decode) / s.decode, "%",
		fmt.Sprintf("%s × %d = %s in %.4g ms over %s", si(m.FLOPsPerToken, "FLOP"), p.Batch, si(decode, "FLOP"), s.decode, peak),
		"batch (decode is memory-bound)"}
	e.PrefillMFU = Figure{"prefill MFU", 100 * h.computeMs(prefill) / s.prefill, "%",
		fmt.Sprintf("%s × %d = %s in %.4g ms over %s", si(m.FLOPsPerToken, "FLOP"), p.PromptTokens, si(prefill, "FLOP"), s.prefill, peak),
		"prefill kernels (a low measured MFU is a diagnosis queue)"}
}

// latency fills the TTFT and ITL figures.
func (r Replica) latency(e *Estimate, s steps) {
	p := r.Point
	e.PrefillTime = Figure{"TTFT floor (prefill alone)", s.prefill, "ms",
		fmt.Sprintf("cost model, %d-token prompt", p.PromptTokens), "prefill cost: prompt length, prefix cache"}
	e.TTFTQueueBudget = Figure{"TTFT queue budget", milliseconds(p.SLO.TTFT) - s.prefill, "ms",
		fmt.Sprintf("%v SLO − %.4g ms prefill", p.SLO.TTFT, s.prefill), "queueing: admission, routing, utilisation"}
	e.MixedStep = Figure{"ITL under a prefill chunk", s.mixed, "ms",
		fmt.Sprintf("cost model, %d decodes + %d-token chunk; SLO %v", p.Batch-1, p.ChunkTokens, p.SLO.ITL),
		"chunk size"}
}
