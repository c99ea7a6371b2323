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
	TTFTQueueBudget  Figure // ms of queueing the TTFT SLO leaves after a lone prefill
	BusyTTFT         Figure // ms to a first token on a busy replica: the step in progress, then the prompt's chunks beside the decodes
	BusyQueueBudget  Figure // ms of queueing the TTFT SLO leaves on a busy replica
	MixedStep        Figure // ms of the longest step with one prefill chunk beside the decodes: the ITL every prompt's prefill sets
	MixedStepShare   Figure // %, MixedStep / the ITL bound
	LargestStep      Figure // ms of the longest step the scheduler can form: no ITL is longer, short of a preemption
	LargestStepShare Figure // %, LargestStep / the ITL bound
	DecodeRequests   Figure // requests/s that decode alone sustains
	ServingCapacity  Figure // requests/s at which the replica saturates: 1 / (output × decode step / batch + prefill(prompt))
	ChunkedCapacity  Figure // requests/s, the same with every prefill chunk of a prompt paying a step of its own
	TTFTQualified    Figure // requests/s whose TTFT queueing stays within its budget for Target of requests (M/M/c)
	// Utilisation is Point.Offered over ServingCapacity, %; the zero
	// Figure (and not in Figures) without an offered load.
	Utilisation Figure

	// Warnings says, in plain sentences, where the operating point already
	// breaks a bound: a batch the KV cache cannot hold, a step or a prefill
	// longer than its SLO, or a prefill chunk that stretches the step to
	// 90 % of the ITL bound or more (a small cost error then fails every
	// request that meets it). Empty when none.
	Warnings []string
}

// Figures lists the estimate's figures in reading order (Utilisation only
// when an offered load was given).
func (e Estimate) Figures() []Figure {
	f := []Figure{
		e.WeightStream, e.KVStream, e.RooflineFloor, e.DecodeStep, e.RooflineShare,
		e.DecodeThroughput, e.KVTokens, e.KVPerSequence, e.KVSequences, e.KVOccupancy,
		e.DecodeMFU, e.PrefillTime, e.PrefillMFU, e.TTFTQueueBudget, e.BusyTTFT, e.BusyQueueBudget,
		e.MixedStep, e.MixedStepShare, e.LargestStep, e.LargestStepShare,
		e.DecodeRequests, e.ServingCapacity, e.ChunkedCapacity, e.TTFTQualified,
	}
	if e.Utilisation.Name != "" {
		f = append(f, e.Utilisation)
	}
	return f
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
	r.mfu(&e, s)
	r.latency(&e, s)
	r.serving(&e, s)
	e.Warnings = r.warnings(e, s)
	return e, nil
}

// warnings lists the bounds the operating point breaks.
func (r Replica) warnings(e Estimate, s steps) []string {
	p := r.Point
	var w []string
	switch {
	case e.KVSequences.Value < 1 && float64(p.PromptTokens) >= e.KVTokens.Value:
		// Not a batch to preempt from: a vLLM-like engine's
		// max_model_len is at most its KV capacity, and it refuses a
		// prompt that long at arrival, at every load.
		w = append(w, fmt.Sprintf("a prompt of %d tokens is at or above the KV cache's %.0f tokens, the most a vLLM-like engine's max_model_len can be: an engine refuses every such request at arrival, at any load (nothing is served, nothing preempted); shorter prompts, or more KV memory, move it",
			p.PromptTokens, e.KVTokens.Value))
	case e.KVSequences.Value < 1:
		// vLLM serves it and stops it at max_model_len, length-capped.
		w = append(w, fmt.Sprintf("a sequence of %d tokens exceeds the KV cache's %.0f tokens, the most a vLLM-like engine's max_model_len can be: an engine stops every such request there, length-capped, its user getting fewer output tokens than asked, and this estimate of full sequences does not hold; shorter outputs, or more KV memory, move it",
			p.SeqTokens, e.KVTokens.Value))
	case float64(p.Batch) > e.KVSequences.Value:
		w = append(w, fmt.Sprintf("batch %d exceeds the %v sequences of %d tokens the KV cache holds: expect preemption", p.Batch, e.KVSequences.Value, p.SeqTokens))
	}
	w = append(w, r.stepWarnings(s)...)
	for _, f := range []Figure{e.DecodeMFU, e.PrefillMFU} {
		if f.Value > 100 {
			w = append(w, fmt.Sprintf("%s is %.4g %%: the cost model is faster than the declared peak compute", f.Name, f.Value))
		}
	}
	if ttft := milliseconds(p.SLO.TTFT); s.prefill > ttft {
		w = append(w, fmt.Sprintf("a %d-token prefill alone (%.4g ms) exceeds the TTFT SLO (%v), before any queueing", p.PromptTokens, s.prefill, p.SLO.TTFT))
	} else if e.BusyTTFT.Value > ttft {
		w = append(w, fmt.Sprintf("on a busy replica a %d-token prompt waits for the step in progress and is prefilled in %s beside the decodes, %.4g ms, over the TTFT SLO (%v) before any queueing: no load qualifies; a larger chunk cap moves it", p.PromptTokens, plural(s.chunks, "chunk"), e.BusyTTFT.Value, p.SLO.TTFT))
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

// mfu fills the MFU cross-checks.
func (r Replica) mfu(e *Estimate, s steps) {
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
	itl := milliseconds(p.SLO.ITL)
	e.PrefillTime = Figure{"TTFT floor (prefill alone)", s.prefill, "ms",
		fmt.Sprintf("cost model, %d-token prompt", p.PromptTokens), "prefill cost: prompt length, prefix cache"}
	e.TTFTQueueBudget = Figure{"TTFT queue budget", milliseconds(p.SLO.TTFT) - s.prefill, "ms",
		fmt.Sprintf("%v SLO − %.4g ms prefill", p.SLO.TTFT, s.prefill), "queueing: admission, routing, utilisation"}
	busy := s.mixed.ms + s.busy
	e.BusyTTFT = Figure{"TTFT floor on a busy replica", busy, "ms",
		fmt.Sprintf("%.4g ms step in progress + %s beside %s, %.4g ms", s.mixed.ms, plural(s.chunks, "chunk"), plural(p.Batch-1, "decode"), s.busy),
		"chunk cap (chunks per prompt), prompt length, decode step"}
	e.BusyQueueBudget = Figure{"TTFT queue budget on a busy replica", milliseconds(p.SLO.TTFT) - busy, "ms",
		fmt.Sprintf("%v SLO − %.4g ms", p.SLO.TTFT, busy), "queueing: admission, routing, utilisation; chunk cap"}
	e.MixedStep = Figure{"one-chunk mixed step", s.mixed.ms, "ms",
		fmt.Sprintf("cost model, %s beside %s (%s)", chunkWords(s.mixed), plural(s.mixed.decodes, "decode"), p.limits()),
		"chunk cap (token budget without one)"}
	e.MixedStepShare = Figure{"one-chunk step / ITL bound", 100 * s.mixed.ms / itl, "%",
		fmt.Sprintf("%.4g / %v", s.mixed.ms, p.SLO.ITL), "chunk cap"}
	e.LargestStep = Figure{"largest formable step", s.largest.ms, "ms",
		fmt.Sprintf("cost model, %s beside %s (%s)", chunkWords(s.largest), plural(s.largest.decodes, "decode"), p.limits()),
		"token budget, batch, chunk cap"}
	e.LargestStepShare = Figure{"largest step / ITL bound", 100 * s.largest.ms / itl, "%",
		fmt.Sprintf("%.4g / %v", s.largest.ms, p.SLO.ITL), "token budget, batch, chunk cap"}
}

// limits names the scheduler limits a step is formed within.
func (p OperatingPoint) limits() string {
	chunk := "no chunk cap"
	if p.ChunkCap > 0 {
		chunk = fmt.Sprintf("chunk cap %d", p.ChunkCap)
	}
	return fmt.Sprintf("budget %d, batch %d, %s", p.Budget, p.Batch, chunk)
}

// chunkWords says what prefill a formed step holds: "one 256-token chunk",
// "2047 prefill tokens in 8 chunks", "no prefill".
func chunkWords(f formed) string {
	switch f.chunks {
	case 0:
		return "no prefill"
	case 1:
		return fmt.Sprintf("one %d-token chunk", f.tokens)
	}
	return fmt.Sprintf("%d prefill tokens in %d chunks", f.tokens, f.chunks)
}

// stepWarnings says where a step the scheduler forms breaks the ITL bound
// or sits so close to it (90 % or more) that a small cost error would: the
// step every prompt's prefill forms first, then the largest, which forms
// only when enough prompts prefill at once (so how much it matters depends
// on the load: the model band of a sweep measures it).
func (r Replica) stepWarnings(s steps) []string {
	p := r.Point
	itl := milliseconds(p.SLO.ITL)
	switch {
	case s.decode > itl:
		return []string{fmt.Sprintf("the decode step (%.4g ms) exceeds the ITL SLO (%v): every token misses", s.decode, p.SLO.ITL)}
	case s.mixed.ms > itl:
		return []string{fmt.Sprintf("a %d-token prefill chunk stretches the step to %.4g ms, over the ITL SLO (%v): every request decoding beside a prefill misses; use a smaller chunk cap", s.mixed.tokens, s.mixed.ms, p.SLO.ITL)}
	case s.mixed.ms >= 0.9*itl:
		return []string{fmt.Sprintf("a %d-token prefill chunk stretches the step to %.4g ms, %.0f %% of the %v ITL bound: %.0f %% of cost error fails every request decoding beside a prefill; a chunk cap moves it", s.mixed.tokens, s.mixed.ms, 100*s.mixed.ms/itl, p.SLO.ITL, 100*(itl/s.mixed.ms-1))}
	case s.largest.ms > itl:
		return []string{fmt.Sprintf("the largest step this configuration can form (%s beside %s, %.4g ms) is over the ITL SLO (%v): a request decoding while %s prefill at once misses; a smaller token budget moves it",
			chunkWords(s.largest), plural(s.largest.decodes, "decode"), s.largest.ms, p.SLO.ITL, plural(s.largest.chunks, "prompt"))}
	case s.largest.ms >= 0.9*itl:
		return []string{fmt.Sprintf("the largest step this configuration can form (%s beside %s, %.4g ms) is %.0f %% of the %v ITL bound: %.0f %% of cost error fails every request that meets one, which forms when %s prefill at once; a smaller token budget moves it",
			chunkWords(s.largest), plural(s.largest.decodes, "decode"), s.largest.ms, 100*s.largest.ms/itl, p.SLO.ITL, 100*(itl/s.largest.ms-1), plural(s.largest.chunks, "prompt"))}
	}
	return nil
}
