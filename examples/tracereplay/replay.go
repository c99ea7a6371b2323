package main

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"slices"
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
	conversations   int // rows that name a conversation
}

// timeless reports whether the trace has no span to scale: its rows (one
// or more) share one instant, so it has no pace of its own and no factor
// takes it to a rate.
func (s traceStats) timeless() bool { return s.n > 0 && s.span <= 0 }

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
		if r.Conversation != 0 {
			s.conversations++
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
	how := ""
	if !o.formatSet && o.detected != "" && o.detected != "azure" {
		how = ", read from its header"
	}
	fmt.Fprintf(w, "trace      %s (-format %s%s)\n", filepath.Base(o.trace), o.format, how)
	// The replay's own description, its file named without the directory.
	fmt.Fprintf(w, "replay     %s\n", strings.Replace(rep.String(), o.trace, filepath.Base(o.trace), 1))
	if src != "" {
		fmt.Fprintf(w, "source     %s\n", strings.ReplaceAll(src, "\n", "\n           "))
	}
	window := "whole trace"
	if o.window > 0 {
		window = fmt.Sprintf("first %v of the trace", o.window)
	}
	pace := fmt.Sprintf("%.2f req/s", s.rate())
	if s.timeless() {
		pace = "all at one instant"
	}
	fmt.Fprintf(w, "window     %s: %d requests over %v, %s, mean %.0f in / %.0f out tokens, %d failed\n",
		window, s.n, s.span.Round(time.Millisecond), pace, s.meanIn, s.meanOut, s.failed)
	fmt.Fprintf(w, "workload   %s\n", fp)
	fmt.Fprintf(w, "replica    Atlas TP4 (engine.Config{} priced by costmodel.Frozen{}), SLO TTFT <= %v, every ITL <= %v\n\n",
		sim.DefaultTTFT, sim.DefaultITL)
	return nil
}

// ownPace labels the replay of the trace at its recorded instants.
const ownPace = "own pace"

// point is one replay's offered load and summary.
type point struct {
	label  string
	rate   float64
	sum    sim.Summary
	resent int // turns given their predecessor's answer ids (keeping conversations)
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
	if s.timeless() {
		printTable(w, points)
		fmt.Fprintln(w)
		rows := fmt.Sprintf("the trace's %d requests share one instant:", s.n)
		if s.n == 1 {
			rows = "the trace holds one request:"
		}
		fmt.Fprintf(w, "%s it has no span, so no pace of its own to scale; no scaled replay ran (-rates needs a trace whose rows span some time)\n", rows)
		return nil
	}
	for _, rate := range o.rates {
		p, err := runAt(o.trace, cfg, rate, rate)
		if err != nil {
			return err
		}
		points = append(points, p)
	}
	printTable(w, points)
	fmt.Fprintln(w)
	fmt.Fprintln(w, knee(points, o.target))
	if cfg.Conversations.Keep {
		fmt.Fprintln(w, answers(cfg.Conversations, own.resent, s))
	}
	return nil
}

// answers says how many turns resend their predecessor's answer and so
// find it in the prefix cache (workload.ConversationReplay.Answers).
func answers(c workload.ConversationReplay, resent int, s traceStats) string {
	if c.Answers < 0 {
		return "answers: every turn keeps the trace's ids over its prompt (-answers < 0), so no answer is ever found in the prefix cache"
	}
	return fmt.Sprintf("answers: %d of the %d rows that name a conversation resend the previous turn's prompt and answer and carry its answer's ids, so they find it in the prefix cache as vLLM, which caches generated tokens, would", resent, s.conversations)
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
		label = ownPace
	}
	p := point{label: label, rate: offered, sum: sum}
	if c, ok := tr.(*workload.ConversationTrace); ok {
		p.resent = c.Resent()
	}
	return p, nil
}

func printTable(w io.Writer, points []point) {
	fmt.Fprintf(w, "%-16s %8s %7s %6s %7s %8s %9s %9s %8s %13s\n",
		"replay", "offered", "reqs", "good", "attain", "goodput", "TTFT p50", "TTFT p99", "ITL p99", "miss ¬ok/T/I")
	fmt.Fprintf(w, "%-16s %8s %7s %6s %7s %8s %9s %9s %8s %13s\n",
		"", "req/s", "", "", "", "req/s", "ms", "ms", "ms", "")
	for _, p := range points {
		s := p.sum
		rate := fmt.Sprintf("%8.2f", p.rate)
		if p.rate == 0 {
			rate = fmt.Sprintf("%8s", "-") // rows at one instant: no rate
		}
		if s.NoMeasured() {
			fmt.Fprintf(w, "%-16s %s %7d  %s\n", p.label, rate, s.Offered, noMeasured)
			continue
		}
		fmt.Fprintf(w, "%-16s %s %7d %6d %7.3f %8.2f %9.0f %9.0f %8.0f %13s\n",
			p.label, rate, s.Offered, s.Good, s.Attainment, s.Goodput, s.TTFT.Median, s.TTFT.P99, s.ITL.P99,
			fmt.Sprintf("%d/%d/%d", s.Misses.NotOK, s.Misses.TTFT, s.Misses.ITL))
	}
}

// noMeasured stands where a replay measured no request: it has no
// attainment, and no part in the knee.
const noMeasured = "no measured requests"

// knee names the highest load meeting the target and the first above it
// that does not, among the replays that measured a request: the own-pace
// replay (the trace at its mean rate) and the scaled ones, in increasing
// offered load.
func knee(points []point, target float64) string {
	sorted := slices.Clone(points)
	slices.SortStableFunc(sorted, func(a, b point) int { return cmp.Compare(a.rate, b.rate) })
	last := -1
	for i, p := range sorted {
		if p.sum.NoMeasured() {
			continue // no evidence either way
		}
		if p.sum.Attainment < target {
			if last < 0 {
				return fmt.Sprintf("attainment is below %.0f%% already at %s, the lowest load replayed", 100*target, at(p))
			}
			return fmt.Sprintf("attainment falls below %.0f%% between %s and %s",
				100*target, at(sorted[last]), at(p))
		}
		last = i
	}
	if last < 0 {
		return "no replay measured a request: no attainment to compare with the target"
	}
	return fmt.Sprintf("attainment stays at or above %.0f%% up to %s, the highest load replayed", 100*target, at(sorted[last]))
}

// at names a replay's load and attainment: "2.00 req/s (0.991)", and
// "4.71 req/s (own pace, 0.981)" for the trace at its own pace.
func at(p point) string {
	if p.label == ownPace {
		return fmt.Sprintf("%.2f req/s (own pace, %.3f)", p.rate, p.sum.Attainment)
	}
	return fmt.Sprintf("%.2f req/s (%.3f)", p.rate, p.sum.Attainment)
}
