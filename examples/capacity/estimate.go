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
func writeEstimate(w io.Writer, name string, r costmodel.Replica) error {
	e, err := r.Estimate()
	if err != nil {
		return err
	}
	h, m, p := r.Hardware, r.Model, r.Point
	fmt.Fprintf(w, "Capacity estimate of %s, from declared figures, before measuring\n\n", name)
	fmt.Fprintf(w, "hardware:  %d accelerators × %.4g TB/s, %.4g PFLOP/s peak, %.4g GiB for KV each\n",
		h.Accelerators, h.MemBandwidth/1e12, h.PeakFLOPS/1e15, h.KVCapacity/(1<<30))
	fmt.Fprintf(w, "model:     %.4g GB weight shard, %.4g KiB KV per token per accelerator, %.4g GFLOP per token\n",
		m.WeightBytes/1e9, m.KVBytesPerToken/(1<<10), m.FLOPsPerToken/1e9)
	fmt.Fprintf(w, "operating: batch %d at %d context, %d-token sequences, %d-token prompts, %d output tokens; %d-token budget, chunk cap %d\n",
		p.Batch, p.Context, p.SeqTokens, p.PromptTokens, p.OutputTokens, p.Budget, p.ChunkCap)
	fmt.Fprintf(w, "SLO:       TTFT ≤ %v, every ITL ≤ %v\n", p.SLO.TTFT, p.SLO.ITL)
	for _, s := range sections(e) {
		if err := writeSection(w, s.title, s.figures); err != nil {
			return err
		}
	}
	if len(e.Warnings) > 0 {
		fmt.Fprintln(w, "\nWarnings")
		for _, msg := range e.Warnings {
			fmt.Fprintf(w, "  %s\n", msg)
		}
	}
	return nil
}

// section is a heading and its figures.
type section struct {
	title   string
	figures []costmodel.Figure
}

// sections groups the estimate the way the chapter walks it.
func sections(e costmodel.Estimate) []section {
	return []section{
		{"Decode throughput (bounded by step time)", []costmodel.Figure{
			e.WeightStream, e.KVStream, e.RooflineFloor, e.DecodeStep, e.RooflineShare, e.DecodeThroughput}},
		{"Concurrency (bounded by KV bytes)", []costmodel.Figure{
			e.KVTokens, e.KVPerSequence, e.KVSequences, e.KVOccupancy}},
		{"Cross-check with utilisation", []costmodel.Figure{e.DecodeMFU, e.PrefillMFU}},
		{"Latency (TTFT bounded by prefill + queue, ITL by the step)", []costmodel.Figure{
			e.PrefillTime, e.TTFTQueueBudget, e.MixedStep, e.MixedStepShare, e.LargestStep, e.LargestStepShare}},
		{"Assemble", []costmodel.Figure{e.DecodeRequests, e.ServingCapacity, e.ChunkedCapacity, e.TTFTQualified}},
	}
}

// writeSection writes one heading and a table of its figures: name, value
// and unit, the arithmetic, and the knob.
func writeSection(w io.Writer, title string, figures []costmodel.Figure) error {
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range figures {
		fmt.Fprintf(tw, "  %s\t%9s %s\t%s\tknob: %s\n", f.Name, number(f.Value), f.Unit, f.Basis, f.Knob)
	}
	return tw.Flush()
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
