package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/chart"
	"github.com/servesim/servesim/sim/report"
	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
)

// runExperiment runs the scenario's A/B experiment and writes its verdict
// at each load and the card. An experiment's runs are not observed: it
// writes no events.
func runExperiment(w io.Writer, s scenario.Scenario, out *outputs) error {
	x := *s.Experiment
	heading(w, s, "experiment")
	fmt.Fprintf(w, "hypothesis, declared before the runs: %s (%s, threshold %+.3g %%)\n", x.Hypothesis.Claim, x.Hypothesis.Metric.Name, 100*x.Hypothesis.Threshold)
	fmt.Fprintf(w, "workload:  %v\n\n", x.Workload)
	res, err := x.Run()
	if err != nil {
		return err
	}
	for _, l := range res.Loads {
		fmt.Fprintf(w, "  at %s: A %s, B %s, improvement %s -> %v\n", num(l.Load), l.A, l.B, improvement(l.Improvement), l.Verdict)
	}
	fmt.Fprintf(w, "\n%s\n", report.VerdictLine(s.NameOrDefault(), []string{"A"}, []*analysis.ExperimentResult{res}, ""))
	card := report.NewExperimentCard(x, res)
	card.Title = title(s)
	if err := describe(&card, x.Workload, x.BaseSeed); err != nil {
		return err
	}
	out.card(s.NameOrDefault()+"-card", card)
	return nil
}

// runDial runs the scenario's dial sweep and writes each value's knee and
// its paired difference to the baseline's, the dial's chart and the card.
// Its runs are not observed (every value runs the same loads and seeds,
// whose event files would share their names): it writes no events.
func runDial(w io.Writer, s scenario.Scenario, out *outputs) error {
	d := *s.DialSweep
	heading(w, s, "dial sweep")
	writeSetup(w, d.Sweep)
	r, err := d.Run()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\ndial %s (%s), baseline %v\n", r.Dial.Name, r.Dial.Unit, r.Values[r.Baseline])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  value\tknee [95%% CI]\tknee − baseline's [95%% CI]\tpeak goodput\n")
	labels := make([]string, len(r.Values))
	for i, v := range r.Values {
		labels[i] = fmt.Sprint(v)
		fmt.Fprintf(tw, "  %v\t%s\t%s\t%s at %s\n", v, knee(r.Curves[i]), diff(r.KneeDiff[i]), num(r.Curves[i].Peak.Goodput.Center), num(r.Curves[i].Peak.Load))
	}
	tw.Flush()
	panels, err := chart.Dial(r, labels)
	if err != nil {
		return err
	}
	out.chart(s.NameOrDefault()+"-dial", panels)
	card := report.NewDialCard(d, r)
	card.Title, card.Claim = title(s), s.Claim
	if err := describe(&card, d.Sweep.Workload, d.Sweep.BaseSeed); err != nil {
		return err
	}
	out.card(s.NameOrDefault()+"-card", card)
	return nil
}

// diff prints a knee difference with its interval.
func diff(e stats.Interval) string {
	if e.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%+.3g %s", e.Center, interval(e, "%+.3g"))
}

// runReplay runs the configuration over the trace once and writes its
// summary (vLLM's result keys, report.WriteServe), the latency CDFs and
// the per-request events. One run has no curve and no verdict: a replay
// writes no card.
func runReplay(w io.Writer, s scenario.Scenario, out *outputs) error {
	rp := s.Replay
	heading(w, s, "replay")
	src, err := workload.OpenReplay(rp.Path, rp.Trace)
	if err != nil {
		return err
	}
	defer src.Close()
	fmt.Fprintf(w, "replay:    %v\n", src)
	var obs sim.Observer
	var events *report.EventJSONL
	var f *os.File
	if out.writes(scenario.WriteEvents) {
		if err := os.MkdirAll(out.dir, 0o755); err != nil {
			return err
		}
		if f, err = os.Create(filepath.Join(out.dir, s.NameOrDefault()+"-events.jsonl")); err != nil {
			return err
		}
		events = report.NewEventJSONL(f)
		obs = events
	}
	sum, err := sim.Run(rp.Config, src, obs)
	if events != nil {
		err = errors.Join(err, events.Flush(), f.Close())
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "measured:  %d requests, %d good; goodput %.3f req/s, attainment %.3f over %v\n",
		sum.Offered, sum.Good, sum.Goodput, sum.Attainment, sum.Window)
	fmt.Fprintf(w, "TTFT:      p50 %s ms, p99 %s ms; ITL p99 %s ms; E2E p99 %s ms\n",
		millis(sum.TTFT.Median), millis(sum.TTFT.P99), millis(sum.ITL.P99), millis(sum.E2E.P99))
	fmt.Fprintf(w, "summary:   ")
	if err := report.WriteServe(w, &sum, report.Meta{Label: s.NameOrDefault()}); err != nil {
		return err
	}
	cdf, err := chart.CDF(&sum)
	if err != nil {
		return err
	}
	out.chart(s.NameOrDefault()+"-cdf", cdf)
	return nil
}
