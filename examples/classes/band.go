package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/report"
	"github.com/servesim/servesim/sim/stats"
)

// modelBand is the verdict's model band the flags declare, before the
// runs: every step time ±o.modelError and, with -shapes atlas,
// analysis.AtlasBand's shapes (atlas-linear, atlas-roofline,
// atlas-profiled: each holds Frozen's 45 ms decode step at batch 32 /
// 2,000 context and its prefill line, the model both policies run), each
// model on the first -band-reps seeds (repsOf). The zero value (nothing
// declared) with one replication, which takes no verdict.
func modelBand(o options) analysis.ModelError {
	if o.reps < 2 {
		return analysis.ModelError{}
	}
	m := analysis.ModelError{Scale: o.modelError}
	if o.shapes == "atlas" {
		m = analysis.AtlasBand(o.modelError)
	}
	if m.Declared() {
		m.Reps = o.bandReps
	}
	return m
}

// repsOf is the seeds each model of band m runs, as the sweeps run
// them: m.Reps (-band-reps), at most -reps, and all of them for 0.
func repsOf(o options, m analysis.ModelError) int {
	if m.Reps == 0 || m.Reps > o.reps {
		return o.reps
	}
	return m.Reps
}

// bandModels are the band's models in its order (analysis.ModelError's:
// step times ×(1+e) and ×(1−e), then each shape), each with the name the
// band gives it: what a variant of the band replaces a configuration's
// model with. The policies run costmodel.Frozen's defaults (a nil Model),
// so a scale variant is costmodel.Scaled of nil, as the band builds it.
func bandModels(m analysis.ModelError) []costmodel.NamedModel {
	var out []costmodel.NamedModel
	if m.Scale > 0 {
		for _, f := range []float64{1 + m.Scale, 1 - m.Scale} {
			out = append(out, costmodel.NamedModel{Name: fmt.Sprintf("step times ×%.4g", f), Model: costmodel.Scaled{Factor: f}})
		}
	}
	return append(out, m.Shapes...)
}

// modelReading is the two classes under one model of the band.
type modelReading struct {
	name string
	knee analysis.Knee // FCFS's knee, all requests, from its sweep under the model
	// fixed is each class's attainment under FCFS and Priority and the
	// change paired on each seed, averaged over the verdict loads.
	fixed []classPair
	// loads are the model's own verdict loads: the verdict loads'
	// multiples of FCFS's nominal knee times its knee under the model.
	// nil when they are the verdict loads (no knee of its own placed
	// them); empty when none could be placed (its knee lies below every
	// load of the sweep). own is fixed's over them, nil without them.
	loads []float64
	own   []classPair
}

// bandStudy is the verdict under each model of the band, read twice: at
// the verdict loads (-near, the experiment as declared, rerun under each
// model) and near each model's own knee (the same multiples of FCFS's
// knee under it as -near are of FCFS's nominal knee).
type bandStudy struct {
	declared analysis.ModelError
	reps     int
	// fixed and own are the nominal verdict with the band at the verdict
	// loads and at each model's own loads (own nil when FCFS's nominal
	// knee was not found: nothing places them).
	fixed, own *analysis.ExperimentResult
	factors    []float64 // -near over FCFS's nominal knee; nil without it
	models     []modelReading
}

// runBand reads the verdict under every model of band m: at the
// verdict loads from the sweeps' own band (each model swept over -loads
// on the first -band-reps seeds, FCFS and Priority alike), and at each
// model's own loads from sweeps of both policies there, on the same
// seeds. Each model's verdict is the experiment's (Experiment.ResultOf
// over its blocks), as Experiment.Run with the band declared gives it.
func runBand(o options, s *classStudy, m analysis.ModelError) (*bandStudy, error) {
	b := &bandStudy{declared: m, reps: repsOf(o, m)}
	models := bandModels(m)
	va, vb := s.curves[0].Band.Variants, s.curves[1].Band.Variants
	if len(va) != len(models) || len(vb) != len(models) {
		return nil, fmt.Errorf("model band: the sweeps ran %d and %d models, the band declares %d", len(va), len(vb), len(models))
	}
	x := experiment(o)
	x.Blocks = b.reps
	b.fixed = withoutBand(s.verdict, m)
	fcfs := s.curves[0]
	var own map[string][]float64
	if k := fcfs.Knee; k.Found {
		for _, l := range o.near {
			b.factors = append(b.factors, l/k.Load.Center)
		}
		own = analysis.BandLoads(fcfs, b.factors)
		b.own = withoutBand(s.verdict, m)
	}
	for i, mod := range models {
		if va[i].Name != mod.Name || vb[i].Name != mod.Name {
			return nil, fmt.Errorf("model band: the sweeps' model %d is %q and %q, the band's %q", i, va[i].Name, vb[i].Name, mod.Name)
		}
		r := modelReading{name: mod.Name, knee: va[i].Curve.Knee}
		vx := x
		vx.A.Model, vx.B.Model = mod.Model, mod.Model
		pa, err := pointsAt(va[i].Curve.Points, o.near)
		if err != nil {
			return nil, err
		}
		pb, err := pointsAt(vb[i].Curve.Points, o.near)
		if err != nil {
			return nil, err
		}
		res, err := vx.ResultOf(blocksOf(pa, pb))
		if err != nil {
			return nil, fmt.Errorf("model band, %s: %w", mod.Name, err)
		}
		addVariant(b.fixed, mod.Name, o.near, res)
		r.fixed = pairClasses(pa, pb)
		if b.own != nil {
			loads, placed := own[mod.Name]
			switch {
			case !placed: // no knee of its own, but not below the loads: the verdict loads
				addVariant(b.own, mod.Name, o.near, res)
				r.own = r.fixed
			case len(loads) == 0: // its knee lies below every load: no verdict under it
				none := stats.MeanInterval(nil, confidence)
				addVariantVerdict(b.own, analysis.VariantVerdict{Name: mod.Name, Blocks: b.reps, Loads: []float64{},
					Verdict: analysis.NoMeasured, Improvement: none, KneeDiff: none})
				r.loads = []float64{}
			default:
				r.loads = loads
				vx.Loads = loads
				pa, pb, err := sweepPair(o, mod.Model, loads, b.reps)
				if err != nil {
					return nil, fmt.Errorf("model band, %s: %w", mod.Name, err)
				}
				res, err := vx.ResultOf(blocksOf(pa, pb))
				if err != nil {
					return nil, fmt.Errorf("model band, %s: %w", mod.Name, err)
				}
				addVariant(b.own, mod.Name, loads, res)
				r.own = pairClasses(pa, pb)
			}
		}
		b.models = append(b.models, r)
	}
	return b, nil
}

// withoutBand is a copy of the nominal verdict r that will carry band m.
func withoutBand(r *analysis.ExperimentResult, m analysis.ModelError) *analysis.ExperimentResult {
	c := *r
	c.Band, c.BandFlip, c.BandHolds, c.ModelError = nil, nil, true, m
	return &c
}

// addVariant records res, the experiment under one model at loads, as a
// variant of r's band.
func addVariant(r *analysis.ExperimentResult, name string, loads []float64, res *analysis.ExperimentResult) {
	addVariantVerdict(r, analysis.VariantVerdict{Name: name, Blocks: res.Blocks, Loads: slices.Clone(loads),
		Improvement: res.Improvement, Verdict: res.Verdict, KneeDiff: res.KneeDiff, KneeUnpaired: res.KneeUnpaired})
}

// addVariantVerdict appends v to r's band; the verdict holds while every
// variant's equals the nominal one, and the first that differs is the
// flip (as analysis.Experiment.Run records them).
func addVariantVerdict(r *analysis.ExperimentResult, v analysis.VariantVerdict) {
	r.Band = append(r.Band, v)
	if r.BandHolds && v.Verdict != r.Verdict {
		r.BandHolds, r.BandFlip = false, &v
	}
}

// sweepPair sweeps FCFS and Priority under model at loads on the first
// reps seeds, and returns their points at loads, in its order.
func sweepPair(o options, model costmodel.Model, loads []float64, reps int) (a, b []*analysis.Point, err error) {
	var pts [2][]*analysis.Point
	for i, p := range policies {
		cfg := classConfig(o, p.policy)
		cfg.Model = model
		c, err := analysis.Sweep{Config: cfg, Workload: mix, Grid: analysis.Grid{Loads: loads},
			Reps: reps, BaseSeed: o.seed, Workers: o.workers}.Run()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p.name, err)
		}
		if pts[i], err = pointsAt(c.Points, loads); err != nil {
			return nil, nil, err
		}
	}
	return pts[0], pts[1], nil
}

// writeBand prints the verdict under each model of the band: where each
// model puts FCFS's knee, why the shapes move it, the verdict at the
// verdict loads and near each model's own knee, and each class's change
// under each model; nothing without a band.
func writeBand(w io.Writer, o options, s classStudy) {
	b := s.band
	if b == nil {
		return
	}
	seeds := "each model on the same seeds"
	if b.reps < o.reps {
		seeds = fmt.Sprintf("each model on the first %d of the %d seeds", b.reps, o.reps)
	}
	fmt.Fprintf(w, "\n   model band, declared before the runs: %v (%s; FCFS and Priority alike under each).\n", b.declared, seeds)
	if len(b.declared.Shapes) > 0 {
		writeShapes(w, o, s)
	}
	knees := []string{"nominal " + kneeShort(s.curves[0].Knee)}
	for _, m := range b.models {
		knees = append(knees, m.name+" "+kneeShort(m.knee))
	}
	fmt.Fprintf(w, "   FCFS's knee (all requests), req/s, under each model (its sweep over the loads): %s.\n", strings.Join(knees, ", "))

	fmt.Fprintf(w, "   at the verdict loads (%s req/s, as declared): the verdict %s\n", strings.ReplaceAll(joinLoads(o.near), ",", ", "), b.fixed.BandVerdict())
	for i, line := range report.BandVerdicts(b.fixed) {
		fmt.Fprintf(w, "     %s%s\n", line, sideOfKnee(o.near, b.models[i].knee))
	}
	if b.own == nil {
		fmt.Fprintf(w, "   near each model's own knee: not read, FCFS's nominal knee was not found (%s): nothing places the loads.\n", s.curves[0].Knee.Reason())
	} else {
		mult := make([]string, len(b.factors))
		for i, f := range b.factors {
			mult[i] = fmt.Sprintf("%.3g", f)
		}
		fmt.Fprintf(w, "   near each model's own knee (the verdict loads are %s × FCFS's nominal knee %.2f req/s; each model runs the same\n", strings.Join(mult, ", "), s.curves[0].Knee.Load.Center)
		fmt.Fprintf(w, "   multiples of FCFS's knee under it, as \"near the knee\" reads there): the verdict %s\n", b.own.BandVerdict())
		for i, line := range report.BandVerdicts(b.own) {
			if b.models[i].loads == nil {
				line += " (no knee of its own placed loads: the verdict loads)"
			}
			fmt.Fprintf(w, "     %s\n", line)
		}
	}
	writeBandClasses(w, o, s)
}

// writeShapes says how the shapes relate to this study's operating
// point: they hold Frozen's 45 ms decode step at batch 32 / 2,000
// context, these requests' prompt length, and price a smaller batch's
// step below it; near the verdict loads FCFS holds fewer than 32
// requests, so under them a step is shorter and the knee higher.
func writeShapes(w io.Writer, o options, s classStudy) {
	eng := engine.Config{}.WithDefaults()
	step := func(m costmodel.Model, batch, context int) float64 {
		if m == nil {
			m = costmodel.Frozen{}
		}
		return float64(m.StepTime(costmodel.Batch{Decode: slices.Repeat([]int{context}, batch)})) / 1e6
	}
	var at32, at16 []string
	for _, m := range s.band.declared.Shapes {
		at32 = append(at32, fmt.Sprintf("%s %.1f", m.Name, step(m.Model, costmodel.AtlasBatch, costmodel.AtlasContext)))
		at16 = append(at16, fmt.Sprintf("%s %.1f", m.Name, step(m.Model, eng.MaxSeqs/2, 2100)))
	}
	var held mean
	pts, _ := pointsAt(s.curves[0].Points, o.near)
	for _, p := range pts {
		for k := range p.Runs {
			held.add(p.Runs[k].MeanInSystem)
		}
	}
	fmt.Fprintf(w, "   the shapes hold Frozen's 45 ms decode step at batch 32 / 2,000 context (%s ms there), these requests'\n",
		strings.Join(at32, ", "))
	fmt.Fprintf(w, "   prompt length (their contexts run 2,000 to 2,200 tokens), and price a smaller batch's step shorter (batch %d / 2,100\n", eng.MaxSeqs/2)
	fmt.Fprintf(w, "   context: Frozen %.1f, %s ms). Over the verdict loads FCFS holds %.1f requests on average, queued ones\n",
		step(nil, eng.MaxSeqs/2, 2100), strings.Join(at16, ", "), held.sum/float64(held.n))
	fmt.Fprintf(w, "   included, so its running batch averages at most that of the %d it may hold: under a shape its steps are shorter\n", eng.MaxSeqs)
	fmt.Fprintf(w, "   than Frozen's on the whole, and FCFS's knee higher.\n")
}

// sideOfKnee says where the loads lie against FCFS's knee under a model
// when they all lie on one side of it: below it (FCFS meets the target
// at every one, little for Priority to buy) or past it.
func sideOfKnee(loads []float64, k analysis.Knee) string {
	v := math.NaN()
	switch {
	case k.Found:
		v = k.Load.Center
	case k.Censored == analysis.BelowLowest:
		return "; every verdict load lies past FCFS's knee under it"
	case k.Censored == analysis.AboveHighest:
		return "; every verdict load lies below FCFS's knee under it"
	}
	switch {
	case math.IsNaN(v):
		return ""
	case slices.Max(loads) < v:
		return fmt.Sprintf("; every verdict load lies below FCFS's knee under it (%.2f req/s)", v)
	case slices.Min(loads) > v:
		return fmt.Sprintf("; every verdict load lies past FCFS's knee under it (%.2f req/s)", v)
	}
	return ""
}

// kneeShort prints a knee's centre, or the side of the loads it lies
// beyond.
func kneeShort(k analysis.Knee) string {
	switch {
	case k.Found:
		return fmt.Sprintf("%.2f", k.Load.Center)
	case k.Censored == analysis.BelowLowest:
		return fmt.Sprintf("< %g", k.FirstMiss)
	case k.Censored == analysis.AboveHighest:
		return fmt.Sprintf("> %g", k.LastMet)
	}
	return "none"
}

// writeBandClasses prints each class's attainment under FCFS and
// Priority and the paired change under each model, at the verdict loads
// and at the model's own, and says in words which class gains and which
// loses under each.
func writeBandClasses(w io.Writer, o options, s classStudy) {
	b := s.band
	fmt.Fprintf(w, "\n   each class under each model, FCFS → Priority on the same seeds, each seed's figures averaged over the loads:\n")
	cells := func(first, second string, cs []string) {
		line := fmt.Sprintf("   %-16s %-18s", first, second)
		for _, c := range cs {
			line += fmt.Sprintf("  %-37s", c)
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	var names []string
	for _, c := range s.near {
		names = append(names, c.name)
	}
	cells("model", "loads req/s", names)
	row := func(model, loads string, cs []classPair) {
		var out []string
		for _, c := range cs {
			out = append(out, classCell(c))
		}
		cells(model, loads, out)
	}
	list := func(ls []float64) string {
		s := make([]string, len(ls))
		for i, l := range ls {
			s[i] = fmt.Sprintf("%.2f", l)
		}
		return strings.Join(s, ", ")
	}
	row("nominal", list(o.near), s.near)
	for _, m := range b.models {
		row(m.name, list(o.near), m.fixed)
		if m.own != nil && m.loads != nil {
			row("", list(m.loads), m.own)
		} else if m.loads != nil && len(m.loads) == 0 {
			fmt.Fprintf(w, "   %-16s %s\n", "", "no loads of its own: FCFS's knee under it lies below every load of the sweep")
		}
	}
	var flat, traded []string
	for _, m := range b.models {
		for _, cs := range [][]classPair{m.fixed, m.own} {
			if cs == nil {
				continue
			}
			if _, losses, _ := sortChanges(cs); len(losses) > 0 {
				traded = append(traded, m.name)
				break
			}
		}
		if gains, _, _ := sortChanges(m.fixed); len(gains) == 0 {
			flat = append(flat, m.name)
		}
	}
	var always []string
	for j, c := range s.near {
		all := true
		for _, m := range b.models {
			for _, cs := range [][]classPair{m.fixed, m.own} {
				all = all && (cs == nil || cs[j].diff.Lo > 0)
			}
		}
		if all {
			always = append(always, c.name)
		}
	}
	if len(always) > 0 {
		fmt.Fprintf(w, "   Under every model of the band, at both readings, Priority raises %s attainment beyond its interval.\n", strings.Join(always, " and "))
	}
	if len(traded) == 0 {
		fmt.Fprintf(w, "   Under no model of the band does Priority lower a class's attainment beyond its interval at these loads.\n")
	} else {
		fmt.Fprintf(w, "   Priority lowers a class's attainment beyond its interval at these loads under %s.\n", strings.Join(traded, ", "))
	}
	if len(flat) > 0 {
		fmt.Fprintf(w, "   At the verdict loads Priority raises no class's attainment beyond its interval under %s.\n", strings.Join(flat, ", "))
	}
}

// classCell is one class's attainment under A and B and the paired
// change, or "no measured requests".
func classCell(c classPair) string {
	if math.IsNaN(c.a.Center) && math.IsNaN(c.b.Center) {
		return "no measured requests"
	}
	return fmt.Sprintf("%s → %s  %s", attainOrDash(c.a.Center), attainOrDash(c.b.Center), change(c.diff))
}
