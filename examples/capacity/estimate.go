package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/servesim/servesim/costmodel"
)

// writeEstimate writes the estimate section of the report: the replica's
// inputs, then the chapter's bounds in its order, grouped as it walks them.
func writeEstimate(w io.Writer, name string, r costmodel.Replica, e costmodel.Estimate) {
	h, m, p := r.Hardware, r.Model, r.Point
	fmt.Fprintf(w, "Capacity estimate of %s, from declared figures, before measuring\n\n", name)
	fmt.Fprintf(w, "hardware:  %d accelerators × %.4g TB/s, %.4g PFLOP/s peak, %.4g GiB for KV each\n",
		h.Accelerators, h.MemBandwidth/1e12, h.PeakFLOPS/1e15, h.KVCapacity/(1<<30))
	fmt.Fprintf(w, "model:     %.4g GB weight shard, %.4g KiB KV per token per accelerator, %.4g GFLOP per token; step times from %s\n",
		m.WeightBytes/1e9, m.KVBytesPerToken/(1<<10), m.FLOPsPerToken/1e9, modelName(r.Cost))
	fmt.Fprintf(w, "engine:    %s: the simulated engine's limits\n", limits(p))
	fmt.Fprintf(w, "workload:  %d-token prompts, %d output tokens: sequences reach %d tokens and decode at %d context on average\n",
		p.PromptTokens, p.OutputTokens, p.SeqTokens, p.Context)
	fmt.Fprintf(w, "SLO:       TTFT ≤ %v, every ITL ≤ %v, for %.0f %% of requests\n", p.SLO.TTFT, p.SLO.ITL, 100*p.Target)
	if p.Offered > 0 {
		fmt.Fprintf(w, "offered:   %.4g req/s (the operating load)\n", p.Offered)
	}
	for _, s := range sections(e) {
		writeSection(w, s.title, s.figures)
	}
	if len(e.Warnings) > 0 {
		fmt.Fprintln(w, "\nWarnings")
		for _, msg := range e.Warnings {
			fmt.Fprintf(w, "  %s\n", msg)
		}
	}
}

// limits names the scheduler's limits: batch, budget and chunk cap.
func limits(p costmodel.OperatingPoint) string {
	chunk := "no chunk cap"
	if p.ChunkCap > 0 {
		chunk = fmt.Sprintf("%d-token chunk cap", p.ChunkCap)
	}
	return fmt.Sprintf("batch cap %d, %d-token budget, %s", p.Batch, p.Budget, chunk)
}

// modelName names a cost model: its String, else its type.
func modelName(m costmodel.Model) string {
	if s, ok := m.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", m)
}

// section is a heading and its figures.
type section struct {
	title   string
	figures []costmodel.Figure
}

// sections groups the estimate the way the chapter walks it.
func sections(e costmodel.Estimate) []section {
	assemble := []costmodel.Figure{e.DecodeRequests, e.ServingCapacity, e.ChunkedCapacity, e.TTFTQualified}
	if e.Utilisation.Name != "" {
		assemble = append(assemble, e.Utilisation)
	}
	return []section{
		{"Decode throughput (bounded by step time)", []costmodel.Figure{
			e.WeightStream, e.KVStream, e.RooflineFloor, e.DecodeStep, e.RooflineShare, e.DecodeThroughput}},
		{"Concurrency (bounded by KV bytes)", []costmodel.Figure{
			e.KVTokens, e.KVPerSequence, e.KVSequences, e.KVOccupancy}},
		{"Cross-check with utilisation", []costmodel.Figure{e.DecodeMFU, e.PrefillMFU}},
		{"Latency (TTFT bounded by prefill + queue, ITL by the step)", []costmodel.Figure{
			e.PrefillTime, e.TTFTQueueBudget, e.BusyTTFT, e.BusyQueueBudget,
			e.MixedStep, e.MixedStepShare, e.LargestStep, e.LargestStepShare}},
		{"Assemble (load bounded by step time, prefill and queueing)", assemble},
	}
}

// writeSection writes one heading and a table of its figures: name, value
// and unit, the arithmetic, and the knob.
func writeSection(w io.Writer, title string, figures []costmodel.Figure) {
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range figures {
		fmt.Fprintf(tw, "  %s\t%9s %s\t%s\tknob: %s\n", f.Name, number(f.Value), f.Unit, f.Basis, f.Knob)
	}
	tw.Flush()
}

// number formats a figure's value: four significant digits, and whole
// numbers of a thousand or more with thousands separators (458,752).
func number(v float64) string {
	if math.Abs(v) < 1000 || v != math.Trunc(v) || math.Abs(v) >= 1e15 {
		return fmt.Sprintf("%.4g", v)
	}
	s := fmt.Sprintf("%.0f", math.Abs(v))
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
