package costmodel_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/costmodel"
)

// The frozen Atlas model prices the chapter's steps.
func ExampleFrozen() {
	m := costmodel.Frozen{}
	decode := costmodel.Batch{Decode: make([]int, 32)}
	mixed := costmodel.Batch{Decode: make([]int, 31), Prefill: []costmodel.Chunk{{NewTokens: 256}}}
	prefill := costmodel.Batch{Prefill: []costmodel.Chunk{{NewTokens: 2000}}}
	fmt.Println(m.StepTime(decode), m.StepTime(mixed), m.StepTime(prefill))
	// Output: 45ms 73.96ms 90ms
}

// The capacity estimate of the Atlas TP4 replica, bound by bound.
func ExampleReplica_Estimate() {
	e, err := costmodel.AtlasTP4().Estimate()
	if err != nil {
		panic(err)
	}
	for _, f := range []costmodel.Figure{e.RooflineFloor, e.DecodeThroughput, e.KVSequences, e.KVOccupancy, e.DecodeMFU, e.PrefillMFU,
		e.LargestStep, e.DecodeRequests, e.ServingCapacity, e.TTFTQualified} {
		fmt.Printf("%-21s %6.4g %-9s knob: %s\n", f.Name, f.Value, f.Unit, f.Knob)
	}
	fmt.Println(e.Warnings)
	// Output:
	// roofline floor         13.41 ms        knob: memory bandwidth, bytes moved per step
	// decode throughput      711.1 tokens/s  knob: step time, batch
	// KV concurrency            57 sequences knob: KV bytes: memory for KV, KV bytes per token, sequence length
	// KV occupancy            55.8 %         knob: batch, KV bytes
	// decode MFU             2.489 %         knob: batch (decode is memory-bound)
	// prefill MFU            77.78 %         knob: prefill kernels (a low measured MFU is a diagnosis queue)
	// largest formable step  136.6 ms        knob: token budget, batch, chunk cap
	// decode-only capacity   3.556 req/s     knob: step time, batch, output length
	// serving capacity       2.694 req/s     knob: step time, batch, output length, prefill cost (prompt length, prefix cache)
	// TTFT-qualified load    1.971 req/s     knob: serving capacity, busy TTFT queue budget (chunk cap), batch (seats)
	// [a 2047-token prefill chunk stretches the step to 136.6 ms, 91 % of the 150ms ITL bound: 10 % of cost error fails every request decoding beside a prefill; a chunk cap moves it]
}

// A roofline from hardware figures, calibrated on one measured step.
func ExampleRoofline_Calibrate() {
	atlas := costmodel.AtlasTP4()
	r := costmodel.Roofline{Hardware: atlas.Hardware, Model: atlas.Model}
	anchor := costmodel.Batch{Decode: make([]int, 32)} // 32 sequences at 2,000 context
	for i := range anchor.Decode {
		anchor.Decode[i] = 2000
	}
	fmt.Println("bare:", r.StepTime(anchor))
	r, err := r.Calibrate(anchor, 45*time.Millisecond)
	if err != nil {
		panic(err)
	}
	fmt.Printf("calibrated: %v at MemEfficiency %.3f\n", r.StepTime(anchor), r.MemEfficiency)
	// Output:
	// bare: 13.415167ms
	// calibrated: 45ms at MemEfficiency 0.298
}

// A table of measured step times, read inside and outside its samples.
func ExampleTable() {
	m, err := costmodel.Table{
		Decode:  []costmodel.TablePoint{{X: 1, Ms: 30}, {X: 32, Ms: 45}},
		Prefill: []costmodel.TablePoint{{X: 256, Ms: 28.96}, {X: 2048, Ms: 91.68}},
	}.Build()
	if err != nil {
		panic(err)
	}
	for _, b := range []costmodel.Batch{
		{Decode: make([]int, 32)},
		{Prefill: []costmodel.Chunk{{NewTokens: 4096}}},
	} {
		d, warning := m.Lookup(b)
		fmt.Println(d)
		if warning != "" {
			fmt.Println("warning:", warning)
		}
	}
	// Output:
	// 45ms
	// 163.36ms
	// warning: costmodel: Table.Prefill read at 4096 tokens, outside the measured 256–2048; extrapolated from the last segment
}

// Fitting the three-coefficient form to measured steps.
func ExampleFit() {
	var samples []costmodel.Sample
	for _, s := range []struct {
		decodes, prefill int
		ms               float64
	}{
		{32, 0, 26.1}, {16, 0, 17.9}, {8, 512, 32}, {0, 1024, 45.8}, {31, 256, 34.5}, {4, 2048, 83.8},
	} {
		b := costmodel.Batch{Decode: make([]int, s.decodes)}
		if s.prefill > 0 {
			b.Prefill = []costmodel.Chunk{{NewTokens: s.prefill}}
		}
		samples = append(samples, costmodel.Sample{Batch: b, Time: time.Duration(s.ms * 1e6)})
	}
	res, err := costmodel.Fit{}.Run(samples)
	if err != nil {
		panic(err)
	}
	l := res.Linear
	fmt.Printf("%.3g ms + %.3g ms/prefill token + %.3g ms/decode; MAPE %.2g%%, R² %.4f\n",
		l.PerStep, l.PerPrefillToken, l.PerDecodeToken, res.MAPE, res.R2)
	// Output: 9.89 ms + 0.0351 ms/prefill token + 0.505 ms/decode; MAPE 0.18%, R² 1.0000
}

// A model's error band: the chapter's mixed step at ±10 %.
func ExampleScaled() {
	step := costmodel.Batch{Decode: make([]int, 31), Prefill: []costmodel.Chunk{{NewTokens: 256}}}
	for _, f := range []float64{0.9, 1, 1.1} {
		fmt.Println(costmodel.Scaled{Factor: f}.StepTime(step))
	}
	// Output:
	// 66.564ms
	// 73.96ms
	// 81.356ms
}
