package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// traceStats describes a trace replay's offered requests.
type traceStats struct {
	n               int
	span            time.Duration
	meanIn, meanOut float64
	failed          int
}

func (s traceStats) rate() float64 {
	if s.span <= 0 {
		return 0
	}
	return float64(s.n) / s.span.Seconds()
}

// measure reads the trace once and returns the statistics of its rows as
// recorded (whatever the replay keeps of its conversations).
func measure(path string, cfg workload.TraceConfig) (traceStats, error) {
	cfg.Conversations = workload.ConversationReplay{} // the rows at their recorded instants
	tr, err := workload.OpenTrace(path, cfg)
	if err != nil {
		return traceStats{}, err
	}
	defer tr.Close()
	var s traceStats
	var in, out float64
	for {
		r, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return traceStats{}, err
		}
		s.n++
		s.span = r.Arrival
		in += float64(r.InputTokens)
		out += float64(r.OutputTokens)
		if r.Failed {
			s.failed++
		}
	}
	if s.n > 0 {
		s.meanIn, s.meanOut = in/float64(s.n), out/float64(s.n)
	}
	return s, nil
}

// describe prints the trace, the replay, its attribution and its
// fingerprint.
func describe(w io.Writer, o options, cfg workload.TraceConfig, s traceStats) error {
	fp, err := workload.FingerprintFile(o.trace, cfg)
	if err != nil {
		return err
	}
	src, err := source(o.trace, o.format)
	if err != nil {
		return err
	}
	rep, err := workload.OpenReplay(o.trace, cfg)
	if err != nil {
		return err
	}
	defer rep.Close()
	fmt.Fprintf(w, "trace      %s (-format %s)\n", filepath.Base(o.trace), o.format)
	// The replay's own description, its file named without the directory.
	fmt.Fprintf(w, "replay     %s\n", strings.Replace(rep.String(), o.trace, filepath.Base(o.trace), 1))
	if src != "" {
		fmt.Fprintf(w, "source     %s\n", strings.ReplaceAll(src, "\n", "\n           "))
	}
	window := "whole trace"
	if o.window > 0 {
		window = fmt.Sprintf("first %v of the trace", o.window)
	}
	fmt.Fprintf(w, "window     %s: %d requests over %v, %.2f req/s, mean %.0f in / %.0f out tokens, %d failed\n",
		window, s.n, s.span.Round(time.Millisecond), s.rate(), s.meanIn, s.meanOut, s.failed)
	fmt.Fprintf(w, "workload   %s\n", fp)
	fmt.Fprintf(w, "replica    Atlas TP4 (engine.Config{} priced by costmodel.Frozen{}), SLO TTFT <= %v, every ITL <= %v\n\n",
		sim.DefaultTTFT, sim.DefaultITL)
	return nil
}

// point is one replay's offered load and summary.
type point struct {
	label string
	rate  float64
	sum   sim.Summary
}

// replay runs the trace at its own pace, then at each rate, and prints a
// table and the load where attainment falls.
func replay(w io.Writer, o options, cfg workload.TraceConfig, s traceStats) error {
	points := make([]point, 0, len(o.rates)+1)
	own, err := runAt(o.trace, cfg, 0, s.rate())
	if err != nil {
		return err
	}
	points = append(points, own)
	for _, rate := range o.rates {
		p, err := runAt(o.trace, cfg, rate, rate)
		if err != nil {
			return err
		}
		points = append(points, p)
	}
	printTable(w, points)
	fmt.Fprintln(w)
	fmt.Fprintln(w, knee(points[1:], o.target))
	return nil
}

// runAt replays the trace time-scaled to rate requests/s (0: own pace,
// whose mean rate is offered), by timestamp or keeping conversations as
// cfg says.
func runAt(path string, cfg workload.TraceConfig, rate, offered float64) (point, error) {
	cfg.Transform.TargetRate = rate
	tr, err := workload.OpenReplay(path, cfg)
	if err != nil {
		return point{}, err
	}
	defer tr.Close()
	sum, err := sim.Run(sim.Config{}, tr, nil)
	if err != nil {
		return point{}, err
	}
	label := fmt.Sprintf("scaled to %g/s", rate)
	if rate == 0 {
		label = "own pace"
	}
	return point{label: label, rate: offered, sum: sum}, nil
}

func printTable(w io.Writer, points []point) {
	fmt.Fprintf(w, "%-16s %8s %7s %6s %7s %8s %9s %9s %8s %13s\n",
		"replay", "offered", "reqs", "good", "attain", "goodput", "TTFT p50", "TTFT p99", "ITL p99", "miss ¬ok/T/I")
	fmt.Fprintf(w, "%-16s %8s %7s %6s %7s %8s %9s %9s %8s %13s\n",
		"", "req/s", "", "", "", "req/s", "ms", "ms", "ms", "")
	for _, p := range points {
		s := p.sum
		if s.NoMeasured() {
			fmt.Fprintf(w, "%-16s %8.2f %7d  %s\n", p.label, p.rate, s.Offered, noMeasured)
			continue
		}
		fmt.Fprintf(w, "%-16s %8.2f %7d %6d %7.3f %8.2f %9.0f %9.0f %8.0f %13s\n",
			p.label, p.rate, s.Offered, s.Good, s.Attainment, s.Goodput, s.TTFT.Median, s.TTFT.P99, s.ITL.P99,
			fmt.Sprintf("%d/%d/%d", s.Misses.NotOK, s.Misses.TTFT, s.Misses.ITL))
	}
}

// noMeasured stands where a replay measured no request: it has no
// attainment, and no part in the knee.
const noMeasured = "no measured requests"

// knee names the highest scaled load meeting the target and the first
// after it that does not, among the replays that measured a request.
func knee(points []point, target float64) string {
	last := -1
	for i, p := range points {
		if p.sum.NoMeasured() {
			continue // no evidence either way
		}
		if p.sum.Attainment < target {
			if last < 0 {
				return fmt.Sprintf("attainment is below %.0f%% already at %.2f req/s, the lowest load replayed", 100*target, p.rate)
			}
			return fmt.Sprintf("attainment falls below %.0f%% between %.2f req/s (%.3f) and %.2f req/s (%.3f)",
				100*target, points[last].rate, points[last].sum.Attainment, p.rate, p.sum.Attainment)
		}
		last = i
	}
	if last < 0 && len(points) > 0 {
		return "no scaled load measured a request: no attainment to compare with the target"
	}
	if last < 0 {
		return "no scaled load replayed"
	}
	return fmt.Sprintf("attainment stays at or above %.0f%% up to %.2f req/s, the highest load replayed", 100*target, points[last].rate)
}
