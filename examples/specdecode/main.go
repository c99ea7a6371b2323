// Command specdecode sweeps speculative decoding on the Atlas TP4 replica
// (sim.Config{}) under open-loop Poisson arrivals of 2,000-token prompts
// and 200-token answers: draft lengths K ∈ {0, 2, 4, 8} against i.i.d.
// acceptance α ∈ {0.5, 0.7, 0.9}. For each (K, α) it prints the knee of
// the goodput curve with its 95 % interval (analysis.DialSweep: every K on the
// same seeds, paired with K = 0), the mean tokens a step of K drafts emits
// beside the theory (1 − α^(K+1))/(1 − α), ITL p99 per streamed chunk and
// retokenized per token at a probe load, and the longest step the
// scheduler can form. Then it tests a hypothesis declared before the runs
// ("K = 4 at α = 0.7 raises the knee by at least 5 %", analysis.Experiment
// on analysis.MetricKnee with A = K 0 and B = K 4, α 0.7) and prints the
// paired difference of the knees with its interval and the verdict, the
// paired latency (TTFT p50 and p99, ITL p99) at each load as the second
// readout, and says at which load speculation stops paying, if it does;
// and it sweeps the claim's K and α against heavier drafters, to
// show where it would stop. It writes the knee-against-K chart, one line
// per α, into -out, and the hypothesis's benchmark card
// (specdecode-card.md and .json): B's speculation, the ITL series the SLO
// gates, B's curve with tokens a step, acceptance and ITL per chunk and
// per token at every load, the knee against K at the claim's α, and the
// verdict.
//
//	go run ./examples/specdecode
//	go run ./examples/specdecode -draft-step 0            # n-gram drafting, free
//	go run ./examples/specdecode -draft-step 4.5ms        # a 7-8B draft model
//	go run ./examples/specdecode -itl-series token        # the SLO gates the retokenized ITL
//
// # The drafter, declared before any run
//
// Speculation needs a drafter, and its cost decides the answer. The
// default is a small draft model at 2 ms a draft token (-draft-step),
// paid once a step for its K drafts (costmodel.Drafting): c = 2/45 ≈ 0.044
// of the target's 45 ms step. That is a judgement for a ~1B draft beside
// the 70B target (a same-family pair, Llama 3.2 1B with Llama 3.1 70B for
// example): its weights are a seventieth of the target's, so a step bound
// by memory bandwidth alone would take well under a millisecond, and a
// small model's step is mostly fixed per-step overhead (launches,
// sampling). The sources used:
//
//   - a 7-8B draft beside a 70B target is the textbook pairing, its step
//     about an order of magnitude shorter than the target's (G. Anhaia,
//     "Speculative decoding for self-hosted LLMs: when the math pays
//     off", dev.to): c ≈ 0.1, 4.5 ms here (-draft-step 4.5ms);
//   - SpecDecode-Bench (specdecode-bench.github.io, arXiv 2601.11580;
//     vLLM on H100 with n-gram, EAGLE, EAGLE-3, draft-model and MTP
//     drafters, Llama-3-70B among the targets) found verification taking
//     42 to 95 % of a speculative step's time, the drafter the rest, and
//     the speedup shrinking as the batch grows;
//   - vLLM's documentation (docs.vllm.ai, features/spec_decode) presents
//     speculative decoding as a gain for memory-bound inference at low to
//     medium load, and warns that it does not lower inter-token latency
//     for every dataset or sampling setting;
//   - the i.i.d. acceptance model and the mean tokens a step,
//     (1 − α^(K+1))/(1 − α), are Leviathan et al., "Fast Inference from
//     Transformers via Speculative Decoding" (ICML 2023).
//
// -draft-step 0 is n-gram (prompt lookup) drafting, free; -draft-overhead
// prices drafting heads (EAGLE, MTP) as a fraction of the step instead.
// Verification is priced by costmodel.Frozen at VerifyPerToken, 0.035 ms a
// verified draft (the prefill rate; -verify declares another).
//
// # What it finds at its defaults
//
// Verification never eats the batch here: at the batch cap of 32 and
// K = 8, 256 verified drafts add 9 ms to a 45 ms step, which then emits
// at least twice the tokens (α ≥ 0.5), so with a free drafter speculation
// pays at every load. What stops it paying is the drafter's time on the
// longest step: one decode beside a prefill chunk that fills the
// 2,048-token budget takes 136.6 ms (verified drafts displace prefill
// tokens at the same price), and the drafter adds K × its step to it;
// past the 150 ms ITL bound (per chunk, as vLLM's bench measures) the
// requests whose decoding meets another's prefill miss their SLO, and the
// knee falls below the lowest load swept. At 2 ms a draft that is K = 8
// (152.6 ms); K = 4 at α = 0.7 stops paying between a 3 and a 3.5 ms
// drafter. Speculation's gain is capacity: the knee hypothesis is
// improved, the knee moving from about 2.0 to 3.0 req/s (+1.0 req/s,
// paired). Below K = 0's knee goodput is the offered load under both, so
// a goodput hypothesis there could not see it; the latency readout shows
// what a user of those loads gets instead.
//
// # The model band
//
// The hypothesis test runs under a model band declared before the runs
// (-model-error 0.1, -shapes atlas: analysis.AtlasBand, every step time
// ±10 % and atlas-linear, atlas-roofline and atlas-profiled, each holding
// Frozen's 45 ms at batch 32 / 2,000 context and its prefill line, and
// pricing a verified draft at Frozen's 0.035 ms), each model on the first
// -band-blocks (4) of the blocks, and prints whether the verdict holds
// under every model or rests on the model (analysis.ExperimentResult's
// BandVerdict), then the verdict under each. A and B keep their
// speculation under every model: it lies outside the cost model
// (sim.Config.Speculation; the configuration's model is Frozen's
// defaults, which ModelError.Calibrated accepts), and the run wraps each
// variant in costmodel.Drafting with the declared drafter, whose step a
// scale variant scales with the step times and a shape keeps (a shape
// holds the target's step at the operating point, so the drafter's share
// c there). A -verify other than Frozen's default is refused with the
// shapes, which price a verified draft at 0.035 ms: give -shapes "".
//
// At the defaults the verdict rests on the model. With every step 10 %
// slower the claim's longest step, 144.65 ms, becomes 159.1 ms, past the
// 150 ms ITL bound, so nearly every request whose decoding meets another's
// prefill misses; K = 0's mixed step beside a 2,000-token prompt (135 ms)
// becomes 148.5 ms, still under it. K = 4 then lowers the knee (paired
// −0.32 req/s, not improved). Under the three shapes, whose mixed steps
// pay the per-step 20 ms once, and with steps 10 % faster, it raises it
// more than under Frozen (+1.20 to +1.40 req/s). Speculation's gain with
// this drafter is as sound as the 5.4 ms between its longest step and the
// ITL bound.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
)

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "specdecode:", err)
		os.Exit(1)
	}
}

// options are the program's flags.
type options struct {
	ks         []int     // draft lengths; 0 (the baseline) always among them
	alphas     []float64 // i.i.d. acceptance probabilities
	drafter    drafter
	verify     time.Duration // costmodel.Frozen.VerifyPerToken; 0: its default
	series     sim.ITLSeries // which ITL series the SLO gates
	probe      float64       // load at which ITL and tokens a step are read, req/s
	start      float64       // first load of each automatic sweep, req/s
	reps       int
	horizon    time.Duration
	seed       uint64
	claimK     int
	claimAlpha float64
	threshold  float64
	blocks     int
	loads      []float64       // the hypothesis test's loads
	drafters   []time.Duration // heavier drafters for the claim's (K, α); nil: none
	// modelError, shapes and bandBlocks are the hypothesis test's model
	// band: every step time ±modelError, the shape alternatives named by
	// shapes ("atlas": analysis.AtlasBand's; "": none), each model on the
	// first bandBlocks blocks.
	modelError float64
	shapes     string
	bandBlocks int
	out        string   // directory for the chart and the card; "": none
	args       []string // the command line, for the card's Command
}

// drafter is the declared drafter's cost.
type drafter struct {
	step     time.Duration // a draft model's step per draft position
	overhead float64       // drafting heads, a fraction of the step
}

func (d drafter) String() string {
	switch {
	case d.step > 0 && d.overhead > 0:
		return fmt.Sprintf("a draft model at %v a draft token and drafting heads at %g of the step", d.step, d.overhead)
	case d.step > 0:
		return fmt.Sprintf("a draft model at %v a draft token (c = %.3f of the 45 ms target step)", d.step, d.step.Seconds()/0.045)
	case d.overhead > 0:
		return fmt.Sprintf("drafting heads (EAGLE, MTP) at %g of the step", d.overhead)
	}
	return "n-gram drafting (prompt lookup), free"
}

func parse(w io.Writer, args []string) (options, error) {
	o := options{drafter: drafter{step: 2 * time.Millisecond}, probe: 1.5, start: 0.5, reps: 5,
		horizon: 10 * time.Minute, claimK: 4, claimAlpha: 0.7, threshold: 0.05, blocks: 8, out: "out",
		modelError: 0.1, shapes: "atlas", bandBlocks: 4}
	fs := flag.NewFlagSet("specdecode", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./examples/specdecode [flags]\n\n"+
			"Speculative decoding on the Atlas TP4 replica: the knee against the draft length K for each\n"+
			"acceptance α, tokens a step beside (1 − α^(K+1))/(1 − α), ITL p99 per chunk and retokenized,\n"+
			"and the verdict on a declared hypothesis. The defaults run in under a minute on 2 cores.\n\n"+
			"The drafter is declared before any run. Default: a draft model at 2ms a draft token, 0.044 of\n"+
			"the 45 ms target step: a ~1B draft beside the 70B target (a judgement: its step is mostly fixed\n"+
			"overhead). A 7-8B draft is about a tenth of a 70B step, 4.5ms (dev.to, \"Speculative decoding for\n"+
			"self-hosted LLMs\"); SpecDecode-Bench (arXiv 2601.11580, vLLM on H100) measured verification at\n"+
			"42-95 %% of a speculative step, the drafter taking the rest. -draft-step 0 is n-gram drafting\n"+
			"(free). The drafter's K steps lengthen every step, the longest too: past the 150 ms ITL bound\n"+
			"speculation stops paying (see the last table). The hypothesis test runs under a model band\n"+
			"(-model-error, -shapes) and says whether its verdict holds under every model or rests on the\n"+
			"model. See go doc ./examples/specdecode.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	ks := fs.String("k", "0,2,4,8", "comma-separated draft lengths K (num_speculative_tokens); 0, no speculation, is always swept as the baseline")
	alphas := fs.String("alpha", "0.5,0.7,0.9", "comma-separated i.i.d. acceptance probabilities α, in [0, 1]")
	fs.DurationVar(&o.drafter.step, "draft-step", o.drafter.step, "the drafter: a draft model's step per draft token (0 with -draft-overhead 0: n-gram drafting, free)")
	fs.Float64Var(&o.drafter.overhead, "draft-overhead", 0, "the drafter: drafting heads (EAGLE, MTP) as a fraction of the step, instead of or beside a draft model")
	fs.DurationVar(&o.verify, "verify", 0, "cost of one verified draft position (costmodel.Frozen.VerifyPerToken; 0: the prefill rate, 35µs)")
	series := fs.String("itl-series", "chunk", "which ITL series the SLO's 150 ms bound gates: chunk (per streamed chunk, as vLLM's bench) or token (retokenized, as SGLang)")
	fs.Float64Var(&o.probe, "probe", o.probe, "offered load at which ITL p99 and tokens a step are read, req/s")
	fs.Float64Var(&o.start, "start", o.start, "first offered load of each sweep, req/s (the grid grows by 1.5 to collapse, then bisects 3 times at the knee)")
	fs.IntVar(&o.reps, "reps", o.reps, "seeded replications per load, the same seeds for every (K, α)")
	fs.DurationVar(&o.horizon, "horizon", o.horizon, "measurement window end (simulated time; warm-up is a tenth of it)")
	fs.Uint64Var(&o.seed, "seed", 0, "base seed")
	fs.IntVar(&o.claimK, "claim-k", o.claimK, "the hypothesis, declared before the runs: K = claim-k at α = claim-alpha raises the knee by at least -threshold over K = 0")
	fs.Float64Var(&o.claimAlpha, "claim-alpha", o.claimAlpha, "the hypothesis's α")
	fs.Float64Var(&o.threshold, "threshold", o.threshold, "relative rise of the knee the hypothesis demands (0.05 is 5 %)")
	fs.IntVar(&o.blocks, "blocks", o.blocks, "seeded A/B blocks per load of the hypothesis test (A and B share each block's seed)")
	loads := fs.String("loads", "1.5,1.75,2,2.25,2.5,2.75,3,3.25,3.5,3.75", "comma-separated offered loads of the hypothesis test, req/s: each block's knee is read where its attainment over them crosses 0.95 (at least 2)")
	drafters := fs.String("drafters", "0,1ms,2ms,3ms,3.5ms,4ms,4.5ms", "comma-separated draft-model steps swept at the claim's K and α, to show where speculation stops paying (\"\": none)")
	fs.StringVar(&o.out, "out", o.out, "directory for the knee-against-K chart (PNG, SVG) and the hypothesis's benchmark card (Markdown, JSON); empty: write none")
	fs.Float64Var(&o.modelError, "model-error", o.modelError, "the hypothesis test's model band, declared before the runs: every step time ± this fraction, the drafter's step too (0.1 is ±10 %; 0: none)")
	fs.StringVar(&o.shapes, "shapes", o.shapes, "shape alternatives in the hypothesis test's model band: \"atlas\" (atlas-linear, atlas-roofline, atlas-profiled: analysis.AtlasBand, calibrated to Frozen's defaults) or \"\" (none)")
	fs.IntVar(&o.bandBlocks, "band-blocks", o.bandBlocks, "blocks each model of the band runs, the first of -blocks' seeds (0: every block; else at least 2)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o.args = args
	var err error
	if o.ks, err = list("-k", *ks, strconv.Atoi); err != nil {
		return o, err
	}
	o.ks = withZero(o.ks)
	if o.alphas, err = list("-alpha", *alphas, parseFloat); err != nil {
		return o, err
	}
	if o.loads, err = list("-loads", *loads, parseFloat); err != nil {
		return o, err
	}
	if o.drafters, err = list("-drafters", *drafters, parseDuration); err != nil {
		return o, err
	}
	switch *series {
	case "chunk":
		o.series = sim.PerChunk
	case "token":
		o.series = sim.PerToken
	default:
		return o, fmt.Errorf("-itl-series must be chunk or token, got %q", *series)
	}
	return o, checkFlags(o)
}

// list reads a comma-separated list with parse; "" is the empty list.
func list[T any](name, s string, parse func(string) (T, error)) ([]T, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []T
	for _, f := range strings.Split(s, ",") {
		v, err := parse(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", name, f, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }

// parseDuration reads a duration; a bare 0 is zero.
func parseDuration(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	return time.ParseDuration(s)
}

// withZero is ks with the baseline K = 0, sorted, each once.
func withZero(ks []int) []int {
	out := append([]int{0}, ks...)
	slices.Sort(out)
	return slices.Compact(out)
}

// checkFlags refuses what the sweeps and the experiment would refuse, once
// and by the flag's name, before any run.
func checkFlags(o options) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	budget := engine.Config{}.WithDefaults().MaxBatchedTokens
	for _, k := range append(slices.Clone(o.ks), o.claimK) {
		switch {
		case k < 0:
			bad("-k: %d is not a draft length (K >= 0)", k)
		case k >= budget:
			// sim.Config.Validate lets this through; the engine refuses it
			// when the run starts.
			bad("-k, -claim-k: %d drafts a decode do not fit the %d-token budget (K must be below it)", k, budget)
		}
	}
	if len(o.alphas) == 0 {
		bad("-alpha: no acceptance to sweep")
	}
	for _, a := range append(slices.Clone(o.alphas), o.claimAlpha) {
		if !(a >= 0 && a <= 1) {
			bad("-alpha, -claim-alpha: %v is not an acceptance probability in [0, 1]", a)
		}
	}
	if o.horizon <= 0 {
		bad("-horizon must be > 0: sweeps compare fixed windows, got %v", o.horizon)
	}
	for _, f := range []struct {
		name string
		v    []float64
	}{{"-probe", []float64{o.probe}}, {"-start", []float64{o.start}}, {"-loads", o.loads}} {
		for _, v := range f.v {
			if !(v > 0) || math.IsInf(v, 0) {
				bad("%s: %v is not a positive rate in requests/s", f.name, v)
			}
		}
	}
	if o.claimK <= 0 {
		bad("-claim-k: %d drafts is no speculation to test (K >= 1)", o.claimK)
	}
	for _, d := range o.drafters {
		if d < 0 {
			bad("-drafters: %v is not a draft step (>= 0)", d)
		}
	}
	if o.bandBlocks < 0 || o.bandBlocks == 1 {
		bad("-band-blocks must be 0 (every block) or >= 2: a verdict needs an interval, got %d", o.bandBlocks)
	}
	if o.shapes != "" && o.shapes != "atlas" {
		bad("-shapes: %q is not \"atlas\" or \"\"", o.shapes)
	}
	if verify := (costmodel.Frozen{}).WithDefaults().VerifyPerToken; o.shapes != "" && o.verify > 0 && o.verify != verify {
		// ModelError.Calibrated would refuse it too, less plainly.
		bad("-verify %v with -shapes atlas: the shape alternatives are calibrated to Frozen's defaults and price a verified draft at %v; beside another verifier they differ in level, not only in shape (give -shapes \"\" for a band of scale only)",
			o.verify, verify)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Said once here, not once per (K, α).
	for _, k := range o.ks {
		if err := sweepAt(o, k, o.alphas[0], o.drafter).Validate(); err != nil {
			return fmt.Errorf("K = %d: %w", k, err)
		}
	}
	return experiment(o).Validate()
}

// run parses args and writes the report to w.
func run(w io.Writer, args []string) error {
	o, err := parse(w, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	return writeReport(w, o)
}

// short names the drafter in a chart's title.
func (d drafter) short() string {
	switch {
	case d.step > 0 && d.overhead > 0:
		return fmt.Sprintf("draft model %v a draft + heads %g", d.step, d.overhead)
	case d.step > 0:
		return fmt.Sprintf("draft model %v a draft", d.step)
	case d.overhead > 0:
		return fmt.Sprintf("drafting heads %g of the step", d.overhead)
	}
	return "n-gram drafting (free)"
}
