package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/chart"
	"github.com/servesim/servesim/sim/report"
)

// writeTimeline runs the -claim chunk cap once at the probe load, on
// replication 0's seed, and writes every step of it: a Chrome trace (a
// track of steps, KV and queue counters, request spans), the step log
// (JSON Lines) and the KV occupancy and queue lengths over time (PNG and
// SVG).
func writeTimeline(w io.Writer, o options) error {
	base := filepath.Join(o.out, "chunksweep-timeline")
	tf, err := os.Create(base + ".trace.json")
	if err != nil {
		return err
	}
	defer tf.Close()
	sf, err := os.Create(base + ".steps.jsonl")
	if err != nil {
		return err
	}
	defer sf.Close()
	trace, steps, tl := report.NewChromeTrace(tf), report.NewStepLog(sf), &chart.Timeline{}

	seed := analysis.Seed(o.seed, 0)
	cfg := analysis.DialChunkCap.Set(baseConfig(o.horizon), float64(o.claim))
	cfg.Seed = seed
	src, err := documents(o.horizon).Source(o.probe, seed)
	if err != nil {
		return err
	}
	sum, err := sim.Run(cfg, src, report.Observers(trace, steps, tl))
	if err != nil {
		return fmt.Errorf("the timeline run: %w", err)
	}
	if err := trace.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", tf.Name(), err)
	}
	if err := steps.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", sf.Name(), err)
	}
	for _, f := range []*os.File{tf, sf} {
		if err := f.Close(); err != nil {
			return err
		}
	}
	ps, err := chart.Occupancy(tl, 0)
	if err != nil {
		return err
	}
	ps[0].Title.Text = fmt.Sprintf("Chunk cap %d at %s req/s: KV occupancy (of %d blocks)", o.claim, rate(o.probe), cfg.Engine.WithDefaults().KVBlocks)
	ps[1].Title.Text = "Queue lengths"
	for _, ext := range []string{".png", ".svg"} {
		if err := chart.Save(base+"-occupancy"+ext, ps); err != nil {
			return err
		}
	}
	m := sum.Steps
	fmt.Fprintf(w, "\ntimeline: chunk cap %d at %s req/s (seed %d): %d steps in the window, busy time decode %.0f %%, mixed %.0f %%, prefill %.0f %%; mixed step p50 %.2f ms, max %.2f ms\n",
		o.claim, rate(o.probe), seed, m.Decode.Steps+m.Mixed.Steps+m.Prefill.Steps,
		100*m.Decode.Share, 100*m.Mixed.Share, 100*m.Prefill.Share, m.Mixed.Dist.Median, m.Mixed.Dist.Max)
	for _, p := range []string{tf.Name(), sf.Name(), base + "-occupancy.png", base + "-occupancy.svg"} {
		fmt.Fprintf(w, "wrote %s\n", p)
	}
	return nil
}
