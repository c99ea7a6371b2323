package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// Card is a benchmark card (docs/design.md §5; the chapter's "Practice:
// complete a benchmark card"): enough to rerun the comparison and to know
// what it could not see. NewCard fills what a sweep knows; the caller states the
// claim and the workload. Write it with WriteJSON or WriteMarkdown. Empty
// strings are rendered as "not stated", never guessed.
type Card struct {
	Title string `json:"title"`
	// Claim is the falsifiable claim, declared before the runs (the
	// workload, the metric, the threshold).
	Claim    string       `json:"claim"`
	Workload CardWorkload `json:"workload"`
	System   System       `json:"system"`
	// Baseline is configuration A of an A/B experiment (System is then B).
	Baseline *System    `json:"baseline_system,omitempty"`
	SLO      CardSLO    `json:"slo"`
	Window   CardWindow `json:"window"`
	Seeds    Seeds      `json:"seeds"`
	Build    Build      `json:"build"`
	// AnalysisRevision names the analysis that turned runs into the
	// card's figures (Student-t intervals across seeded replications for
	// rates and attainment, percentile-bootstrap intervals for TTFT, TPOT
	// and E2E percentiles, Student-t intervals of per-replication ITL
	// percentiles, the knee interpolated where mean attainment crosses
	// the target, exclusive miss attribution, linear percentiles): NewCard
	// sets analysis.AnalysisRevision(), a SHA-256 over the sources that
	// compute them, never typed by hand. Two cards with the same revision
	// were analysed by the same code.
	AnalysisRevision string `json:"analysis_revision"`
	// Rerun says how the card reruns (Rerunnable) or why it cannot: "cannot
	// be rerun: " and the field that is not data, as "Sweep.Workload is a
	// function (analysis.WorkloadFunc)". See EmbedScenario.
	Rerun string `json:"rerun"`
	// Results are a sweep's curve; an A/B experiment's card has none (its
	// result is Verdict), and JSON leaves the zero Results out.
	Results Results `json:"results,omitzero"`
	// Verdict is the A/B experiment's answer, when the card reports one.
	Verdict *CardVerdict `json:"verdict,omitempty"`
	// Dial is a dial sweep's result (NewDialCard): each value's knee and
	// its paired difference to the baseline's. System is then the
	// baseline value's.
	Dial *CardDialSweep `json:"dial_sweep,omitempty"`
	// Estimate is the arithmetic estimate made before the runs, which the
	// results are held against (costmodel.Estimate: CardFiguresOf); nil when
	// the card reports none. The caller fills it.
	Estimate *PreRun `json:"estimate,omitempty"`
	// Command is what reproduces the card, e.g. "go run ./examples/capacity
	// -reps 8"; "" renders as "not stated".
	Command string `json:"command"`
	// Events says where the raw per-request events are.
	Events Events `json:"events"`
	// Notes are caveats and the second-day reproduction procedure.
	Notes []string `json:"notes,omitempty"`
	// Scenario is the configuration that ran, as package scenario writes a
	// scenario.Scenario: scenario.LoadCard reads it back and rerunning it
	// gives this card again. nil when it is not data (Rerun says why).
	Scenario json.RawMessage `json:"scenario,omitempty"`
}

// CardWorkload describes the offered requests in the caller's words (each
// workload type's String method is a good start) plus the fingerprint of
// the request stream (workload.Fingerprint or a Hasher over the requests a
// run pulled). The concurrency, the cache state and, on the Concurrency
// axis, the loop come from the configuration (CardWorkloadOf): NewCard fills
// them.
type CardWorkload struct {
	Description string `json:"description"`  // the generator and its parameters
	Arrival     string `json:"arrival"`      // the arrival process, e.g. "Poisson, rate swept"
	Lengths     string `json:"lengths"`      // input and output length distributions
	Correlation string `json:"correlation"`  // how input and output lengths are coupled
	Prefix      string `json:"prefix_reuse"` // shared prefixes and their reuse
	Loop        string `json:"loop"`         // "open-loop" or "closed-loop", and why
	Concurrency string `json:"concurrency"`  // clients or a concurrency cap, if any (ConcurrencyOf)
	CacheState  string `json:"cache_state"`  // warm or cold prefix cache at the start (CacheStateOf)
	Fingerprint string `json:"fingerprint"`  // "sha256:…" of the request stream
	// Replay is, for a trace replay, which one ran: the replay's String
	// (workload.Replay), which says timestamp or conversation-keeping
	// replay and the clock transform; "" for a synthetic workload.
	Replay string `json:"replay,omitempty"`
}

// CardSLO is the per-request objective goodput was measured against, in ms;
// an unbounded bound is NaN (null in JSON).
type CardSLO struct {
	TTFT Num `json:"ttft_ms"`
	ITL  Num `json:"itl_ms"`
	TPOT Num `json:"tpot_ms"`
	E2E  Num `json:"e2el_ms"`
	// ITLSeries is the series of gaps the ITL bound gates
	// (sim.SLO.ITLSeries): "per chunk", each streamed chunk's gap as
	// vLLM's bench serve measures it, or "per token (retokenized)", each
	// chunk's gap over its tokens as SGLang's use_retokenized_itl. They
	// differ only under speculative decoding.
	ITLSeries string `json:"itl_series,omitempty"`
}

// CardWindow is the measurement window, in seconds.
type CardWindow struct {
	Warmup         float64 `json:"warmup_s"`
	WarmupRequests int     `json:"warmup_requests"`
	Horizon        float64 `json:"horizon_s"` // 0: open window
	// Drain is the effective drain: how long after Horizon measured
	// requests could still finish (sim.Window.Drain, or Horizon − Warmup
	// where the window left it 0); 0 with an open window.
	Drain float64 `json:"drain_s"`
}

// Seeds says how every run was seeded.
type Seeds struct {
	Base         uint64   `json:"base"`
	Replications int      `json:"replications"`
	Rule         string   `json:"rule"`
	Derived      []uint64 `json:"derived"` // replication r's seed
}

// Events says where the raw per-request events of the card's runs are and
// which columns their files have (EventsOf fills them). Path "" renders as
// "not recorded".
type Events struct {
	Path   string `json:"path"`
	Format string `json:"format"` // "jsonl" or "csv", as written by EventJSONL or EventCSV
	// Columns are those every line (JSONL) or row (CSV) has, in order.
	Columns []string `json:"columns,omitempty"`
	// Partial are columns only some lines have: in JSON Lines, "itl" and
	// "token_itl" on the lines of requests whose token instants were kept
	// (with sim.Config.KeepTokens, those that emitted a token).
	Partial []string `json:"partial_columns,omitempty"`
}

// tokenColumns are the columns a JSON Lines line has only when the run
// kept the request's token instants.
var tokenColumns = []string{"itl", "token_itl"}

// EventsOf describes the event files at path, written by EventJSONL or EventCSV
// (format "jsonl" or "csv") for runs of cfg. A CSV row has every column of
// EventColumns (its itl and token_itl cells empty where no token instants were
// kept); a JSON Lines line leaves "itl" and "token_itl" out unless the run
// kept the request's token instants, so without cfg.KeepTokens no line
// has them.
func EventsOf(path, format string, cfg sim.Config) Events {
	e := Events{Path: path, Format: format, Columns: EventColumns()}
	if format == "jsonl" {
		e.Columns = slices.DeleteFunc(e.Columns, func(c string) bool { return slices.Contains(tokenColumns, c) })
		if cfg.KeepTokens {
			e.Partial = slices.Clone(tokenColumns)
		}
	}
	return e
}

// WriteJSON writes the card as indented JSON.
func (c *Card) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// NewCard fills a card from a sweep and the curve it produced: system,
// SLO, window, seeds, build, analysis revision and results (with each
// request class's, when the configuration has classes), with the headroom
// at the operating load op (in the curve's load unit; 0 for none), and
// the workload's concurrency and cache state (CardWorkloadOf).
func NewCard(sw analysis.Sweep, c *analysis.Curve, op float64) Card {
	reps := 0
	if len(c.Points) > 0 {
		reps = len(c.Points[0].Runs)
	}
	res := ResultsOf(c, op)
	res.classPriorities(sw.Config.Classes)
	if sw.Capacity > 0 {
		res.Capacity = &Capacity{Rate: sw.Capacity}
	}
	card := Card{
		Workload:         CardWorkloadOf(sw.Config, sw.Axis),
		System:           SystemOf(sw.Config),
		SLO:              sloOf(c.SLO),
		Window:           windowOf(sw.Config.Window),
		Seeds:            seedsOf(sw.BaseSeed, reps),
		Build:            ReadBuild(),
		AnalysisRevision: analysis.AnalysisRevision(),
		Results:          res,
	}
	card.EmbedScenario(nil, scenario.Scenario{Sweep: &sw})
	return card
}

// NewExperimentCard fills a card from an A/B experiment and its result:
// the claim declared with the hypothesis, B's system with A's as the
// baseline, SLO, window, seeds (one per block), build, analysis revision,
// the verdict with its boundary, and the concurrency and cache state of A
// and B (one text when they agree). It has no curve: its result is the
// verdict.
func NewExperimentCard(x analysis.Experiment, r *analysis.ExperimentResult) Card {
	a := SystemOf(x.A)
	seeds := seedsOf(x.BaseSeed, r.Blocks)
	seeds.Rule = "block b seeds the workload and both runs, A's and B's, with sim.Seed(base, b), the same at every load (common random numbers)"
	card := Card{
		Claim:            x.Hypothesis.Claim,
		Workload:         pairWorkload(x.A, x.B),
		System:           SystemOf(x.B),
		Baseline:         &a,
		SLO:              sloOf(x.A.SLO.WithDefaults()),
		Window:           windowOf(x.A.Window),
		Seeds:            seeds,
		Build:            ReadBuild(),
		AnalysisRevision: analysis.AnalysisRevision(),
		Verdict:          CardVerdictOf(r),
	}
	card.EmbedScenario(nil, scenario.Scenario{Experiment: &x})
	return card
}

func sloOf(s sim.SLO) CardSLO {
	ms := func(d time.Duration) Num {
		if d == sim.Unbounded || d == 0 {
			return Num(math.NaN())
		}
		return Num(float64(d) / 1e6)
	}
	return CardSLO{TTFT: ms(s.TTFT), ITL: ms(s.ITL), TPOT: ms(s.TPOT), E2E: ms(s.E2E), ITLSeries: s.ITLSeries.String()}
}

// windowOf records the window as it ran: a Drain left 0 is one more
// window (sim.Window.Drain), and the card says how long that was.
func windowOf(w sim.Window) CardWindow {
	drain := w.Drain
	switch {
	case w.Horizon == 0:
		drain = 0 // an open window ends when the replica is empty
	case drain == 0:
		drain = w.Length()
	}
	return CardWindow{Warmup: w.Warmup.Seconds(), WarmupRequests: w.WarmupRequests, Horizon: w.Horizon.Seconds(), Drain: drain.Seconds()}
}

func seedsOf(base uint64, reps int) Seeds {
	s := Seeds{Base: base, Replications: reps,
		Rule: "replication r seeds its workload and its run with sim.Seed(base, r), the same at every load (common random numbers)"}
	for r := range reps {
		s.Derived = append(s.Derived, analysis.Seed(base, r))
	}
	return s
}

// CardFingerprint is a card's workload fingerprint for a sweep or experiment:
// sha256 over the first n requests (at most) that w yields at 1 req/s for
// seed — with common random numbers, every load's stream is that one with
// its instants divided by the load. The text says what it covers.
func CardFingerprint(w analysis.Workload, seed uint64, n int) (string, error) {
	src, err := w.Source(1, seed)
	if err != nil {
		return "", err
	}
	h := workload.NewHasher()
	for h.Count() < n {
		req, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		h.Add(req)
	}
	return fmt.Sprintf("%s (first %d requests of seed %d at 1 req/s)", h.Sum(), h.Count(), seed), nil
}
