package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/servesim/servesim/costmodel"
)

// estimate is the capacity estimate's disaggregated bounds for the
// workload's mean request on Atlas TP4 in both pools, over a link of bw
// GB/s per accelerator.
func estimate(l load, bw float64) (costmodel.DisaggEstimate, error) {
	r := costmodel.AtlasTP4()
	r.Point.PromptTokens, r.Point.OutputTokens = l.prompt, l.output
	r.Point.SeqTokens = l.prompt + l.output
	return costmodel.Disaggregated{Prefill: r, Decode: r, LinkBandwidth: bw * 1e9}.Estimate()
}

// writeEstimate writes the capacity estimate's disaggregated bounds, from
// declared figures before any run: each pool's capacity per replica, the
// link's bound at each bandwidth, the balancing ratio and the splits of
// the fleet it points to.
func writeEstimate(w io.Writer, l load, o options) {
	mid := o.bandwidths[len(o.bandwidths)/2]
	e, err := estimate(l, mid)
	if err != nil {
		fmt.Fprintf(w, "  estimate: none (%v)\n", err)
		return
	}
	fmt.Fprintf(w, "  estimate at the mean request (%d-token prompt, %d-token answer), before any run:\n", l.prompt, l.output)
	for _, f := range []costmodel.Figure{e.PrefillCapacity, e.DecodeCapacity, e.CoLocated, e.Ratio} {
		fmt.Fprintf(w, "    %s: %.4g %s (%s; knob: %s)\n", f.Name, f.Value, f.Unit, f.Basis, f.Knob)
	}
	var links []string
	for _, bw := range o.bandwidths {
		if x, err := estimate(l, bw); err == nil {
			links = append(links, fmt.Sprintf("%g GB/s %.4g req/s (%.3g ms a prompt)", bw, x.TransferBound.Value, x.TransferTime.Value))
		}
	}
	fmt.Fprintf(w, "    transfer bound per prefill replica: %s (knob: %s)\n", strings.Join(links, ", "), e.TransferBound.Knob)
	splits, err := e.Split(o.replicas)
	if err != nil {
		return
	}
	for _, s := range splits {
		fmt.Fprintf(w, "    %s at %g GB/s: %.4g req/s, %.3g per replica, against %.4g co-located (%s)\n", s.Capacity.Name, mid,
			s.Capacity.Value, s.Capacity.Value/float64(o.replicas), float64(o.replicas)*e.CoLocated.Value, s.Capacity.Basis)
	}
}
