package sim

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
)

// DefaultExactSamples is the default Config.ExactSamples: a summary keeps
// up to a hundred thousand values of each latency exactly (about 0.8 MB a
// metric) and sketches beyond.
const DefaultExactSamples = 100_000

// Unbounded disables an SLO bound.
const Unbounded = time.Duration(math.MaxInt64)

// SLO is the per-request service-level objective. A request is good iff its
// status is ok and every bound holds. The zero value is the chapter's SLO:
// TTFT ≤ 600 ms and every ITL ≤ 150 ms, TPOT and E2E unbounded. Set a bound
// to Unbounded to ignore it.
type SLO struct {
	TTFT time.Duration // default 600 ms
	ITL  time.Duration // every inter-token gap; default 150 ms
	TPOT time.Duration // vLLM's TPOT; default Unbounded
	E2E  time.Duration // arrival to last token; default Unbounded
	// ITLSeries says which gaps ITL bounds when a streamed chunk carries
	// several tokens (speculative decoding): each chunk's (PerChunk, the
	// zero value, what vLLM's bench serve measures and a streaming client
	// sees) or each token's, the chunk's gap divided by its tokens
	// (PerToken, SGLang's retokenized ITL). Without speculation they are
	// the same.
	ITLSeries ITLSeries
}

// ITLSeries names a series of inter-token latencies.
type ITLSeries uint8

const (
	PerChunk ITLSeries = iota // one gap per streamed chunk, as vLLM
	PerToken                  // each chunk's gap over its tokens, once per token (retokenized)
)

func (s ITLSeries) String() string {
	switch s {
	case PerChunk:
		return "per chunk"
	case PerToken:
		return "per token (retokenized)"
	}
	return fmt.Sprintf("ITLSeries(%d)", uint8(s))
}

// DefaultMaxBacklog is the default Config.MaxBacklog: a hundred thousand
// held requests, about 100 MB. A replica of the Atlas kind serves a few
// requests per second, so a load that builds such a backlog within any
// window worth measuring is overloaded many times over.
const DefaultMaxBacklog = 100_000

// MaxDuration bounds every duration of a Config that the run adds to an
// instant: Window.Warmup, Horizon and Drain, and Timeout. A hundred years
// of simulated time, so that the window's end (Horizon + Drain) and an
// arrival's deadline stay within time.Duration (292 years): beyond it
// they overflowed into the past, and a run measured nothing or timed out
// every request at once. The SLO's bounds are only compared: Unbounded
// is theirs.
const MaxDuration = 100 * 365 * 24 * time.Hour

// Atlas SLO defaults from the reference chapter.
const (
	DefaultTTFT = 600 * time.Millisecond
	DefaultITL  = 150 * time.Millisecond
)

// WithDefaults returns s with its zero bounds set to their defaults.
func (s SLO) WithDefaults() SLO {
	if s.TTFT == 0 {
		s.TTFT = DefaultTTFT
	}
	if s.ITL == 0 {
		s.ITL = DefaultITL
	}
	if s.TPOT == 0 {
		s.TPOT = Unbounded
	}
	if s.E2E == 0 {
		s.E2E = Unbounded
	}
	return s
}

// Validate refuses negative bounds.
func (s SLO) Validate() error {
	var errs []error
	for _, b := range []struct {
		name string
		v    time.Duration
	}{{"TTFT", s.TTFT}, {"ITL", s.ITL}, {"TPOT", s.TPOT}, {"E2E", s.E2E}} {
		if b.v < 0 {
			errs = append(errs, fmt.Errorf("sim: SLO.%s must be >= 0 (0 means the default), got %v", b.name, b.v))
		}
	}
	if s.ITLSeries > PerToken {
		errs = append(errs, fmt.Errorf("sim: SLO.ITLSeries must be PerChunk or PerToken, got %d", s.ITLSeries))
	}
	return errors.Join(errs...)
}

// Window is the measurement window. Requests that arrive in
// [Warmup, Horizon), and are not among the first WarmupRequests, are
// measured; the others still load the replica but are not counted.
//
// Arrivals keep flowing after Horizon, so the measured requests see the same
// load to the end; the run stops when every measured request has ended, or at
// Horizon + Drain, when those still in flight are counted as unfinished.
// With Horizon = 0 the window is open: every request from Warmup on is
// measured, the run ends when the source and the replica are both empty,
// and the window's length is the instant of the last terminal event minus
// Warmup (as vLLM's bench serve measures duration).
type Window struct {
	Warmup         time.Duration // default 0
	WarmupRequests int           // default 0
	Horizon        time.Duration // default 0: open window
	// Drain bounds how long after Horizon measured requests may still
	// finish. 0 means Horizon - Warmup (one more window).
	Drain time.Duration
	// DetectWarmup truncates the initial transient by MSER-5 (White's
	// marginal standard error rule on batch means of five requests) over
	// the time each request spent in the replica, in arrival order. The
	// declared Warmup and WarmupRequests are then a floor. Records reach the
	// Observer before the truncation is known: their Measured flag means
	// "eligible"; Summary.Warmup says where the window finally began.
	// Until the run ends it keeps every eligible record, so its memory
	// grows with the run (a 240-byte record a request), unlike a declared
	// warm-up: a run of millions of requests should declare one.
	DetectWarmup bool
}

// Length is the window's length when Horizon is set, else 0.
func (w Window) Length() time.Duration {
	if w.Horizon == 0 {
		return 0
	}
	return w.Horizon - w.Warmup
}

// Validate refuses a window that is empty or negative, or a duration
// above MaxDuration.
func (w Window) Validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Warmup", w.Warmup}, {"Horizon", w.Horizon}, {"Drain", w.Drain}} {
		if d.v > MaxDuration {
			errs = append(errs, fmt.Errorf("sim: Window.%s must be <= MaxDuration (%v, a hundred years: the window's end must stay within time.Duration), got %v", d.name, MaxDuration, d.v))
		}
	}
	if w.Warmup < 0 {
		errs = append(errs, fmt.Errorf("sim: Window.Warmup must be >= 0, got %v", w.Warmup))
	}
	if w.WarmupRequests < 0 {
		errs = append(errs, fmt.Errorf("sim: Window.WarmupRequests must be >= 0, got %d", w.WarmupRequests))
	}
	if w.Horizon < 0 || (w.Horizon > 0 && w.Horizon <= w.Warmup) {
		errs = append(errs, fmt.Errorf("sim: Window.Horizon must be 0 (open) or after Warmup (%v), got %v", w.Warmup, w.Horizon))
	}
	if w.Drain < 0 {
		errs = append(errs, fmt.Errorf("sim: Window.Drain must be >= 0, got %v", w.Drain))
	}
	return errors.Join(errs...)
}

// Config is one simulated run of a replica, or of a fleet of replicas
// behind a router. The zero value is one Atlas TP4 replica
// (engine.Config{} priced by costmodel.Frozen{}) under the chapter's SLO,
// with an open window, no timeout, no injected errors and seed 0.
type Config struct {
	// Engine configures the replica when Fleet.Replicas is nil.
	Engine engine.Config
	// Model prices each step of that replica; nil means costmodel.Frozen{}.
	Model costmodel.Model
	// Fleet is several replicas behind a router. Its zero value is the
	// fleet of one configured by Engine and Model.
	Fleet Fleet
	SLO   SLO
	Window
	// Timeout is the client deadline from arrival: a request not finished
	// by then is abandoned wherever it is (status timed_out). 0 means none.
	Timeout time.Duration
	// ErrorRate is the probability that a request fails in the server: it
	// is served normally and reported errored when it would have finished.
	// Drawn per request from the seed's "errors" stream.
	ErrorRate float64
	// Seed derives the run's own random streams (by name; see
	// workload.NewStream). The workload has its own seed.
	Seed uint64
	// KeepTokens keeps every token's emit instant in each Record (memory
	// grows with tokens); otherwise records keep the max ITL and the count
	// of ITLs over the SLO's budget.
	KeepTokens bool
	// Percentiles is the method of the summary's percentiles; the zero
	// value is stats.LinearInterpolation, numpy's (and vLLM's) default.
	Percentiles stats.Method
	// ExactSamples is how many values of each latency (TTFT, TPOT, E2E,
	// queue delay, client wait; and distinct inter-token gaps) a summary
	// keeps exactly, per replica, per class and for the whole run; past
	// it that latency moves to a stats.Sketch of relative accuracy
	// stats.SketchAccuracy, its Dist says so (RelErr) and its Samples
	// are nil, so that memory stays bounded whatever the number of
	// requests. 0 means DefaultExactSamples; negative is an error.
	ExactSamples int
	// MaxBacklog bounds the requests the replica may hold (waiting and
	// running) before the run is declared overloaded and stops: when an
	// arrival makes it hold more, the run ends at that instant, every
	// request still held ends unfinished, no later request arrives, and
	// the Summary says Overloaded. This bounds a run's memory whatever the
	// offered load (about 1 KB per held request). 0 means
	// DefaultMaxBacklog; a negative value means no bound.
	MaxBacklog int
	// MaxConcurrency caps the requests in flight at once, as vLLM's bench
	// serve --max-concurrency: an arrival that finds the cap reached waits
	// client-side for a slot, first come first served, and is sent when a
	// request in flight ends. Record.Scheduled keeps when it was due and
	// Record.Arrival when it was sent: TTFT counts from the send, as vLLM
	// measures it, and the wait is Summary.ClientWait. 0 means no cap.
	MaxConcurrency int
	// Classes are the request classes, each with its own SLO (see Class);
	// requests of no listed class belong to the default class, judged by
	// SLO. Summary.Classes then has one entry per class and the default
	// last. nil means one class, as before classes existed.
	Classes []Class
	// Speculation is the replica's speculative decoding (a fleet's
	// replicas set their own, ReplicaConfig.Speculation); the zero value is
	// none.
	Speculation Speculation
	// Warm is a warm start: before the run, every replica's prefix cache
	// is filled with these prompts' shared content (their prefix ids), as
	// if it had served them; they are never measured. With KV tiers
	// (Fleet.HostTier, SharedStore) their blocks are written through to
	// the tiers too, as serving them would have. nil means every run
	// starts with empty caches.
	Warm []workload.Request
	// Gateway is admission in front of the fleet (or the single
	// replica): a token bucket, a concurrency limit per replica with a
	// bounded queue and a time-to-live, shedding by a saturation signal.
	// The zero value is no gateway (see Gateway).
	Gateway Gateway
	// Stepwise plans every engine step on its own, after every event at
	// its instant, instead of advancing a run of identical steps (decodes,
	// and prompts' chunks) in one move (or continuing one at a step end), and accounts every
	// token as it is emitted instead of deferring the tokens of requests
	// that decode in every move until they stop (decode streaks). Results
	// are identical either way (a test holds the two to the same bytes);
	// it exists to verify that, and is several times slower.
	Stepwise bool
}

// WithDefaults returns c with the engine, the cost model (nil becomes
// costmodel.Frozen{}), every replica of a fleet, its router and the SLO at
// their effective values, for a card or a log that should show what ran
// rather than zeros.
func (c Config) WithDefaults() Config {
	c.Engine = c.Engine.WithDefaults()
	c.Model = modelWithDefaults(c.Model)
	if c.Fleet.Replicas != nil {
		reps := make([]ReplicaConfig, len(c.Fleet.Replicas))
		for i, r := range c.Fleet.Replicas {
			// Every field is kept (Speculation, and any added later): only
			// the engine and the model have defaults to fill in.
			r.Engine, r.Model = r.Engine.WithDefaults(), modelWithDefaults(r.Model)
			reps[i] = r
		}
		c.Fleet.Replicas = reps
	}
	if c.Fleet.Router == nil {
		c.Fleet.Router = RoundRobin{}
	}
	c.SLO = c.SLO.WithDefaults()
	if c.MaxBacklog == 0 {
		c.MaxBacklog = DefaultMaxBacklog
	}
	if c.ExactSamples == 0 {
		c.ExactSamples = DefaultExactSamples
	}
	return c
}

func modelWithDefaults(m costmodel.Model) costmodel.Model {
	switch m := m.(type) {
	case nil:
		return costmodel.Frozen{}.WithDefaults()
	case costmodel.Frozen:
		return m.WithDefaults()
	}
	return m
}

// replicas returns the replicas the run drives: the fleet's, or the one
// configured by Engine and Model.
func (c Config) replicas() []ReplicaConfig {
	if c.Fleet.Replicas != nil {
		return c.Fleet.Replicas
	}
	return []ReplicaConfig{{Engine: c.Engine, Model: c.Model, Speculation: c.Speculation}}
}

// LargestStep is the longest step any of the configuration's replicas
// can form: engine.LargestStep of its engine and cost model, its
// speculation included. Package sim/analysis reads it to say whether a
// model-error band's knee moves because such a step nears the ITL bound.
func (c Config) LargestStep() time.Duration {
	var worst time.Duration
	for _, r := range c.replicas() {
		e, m := r.effective()
		d, _ := engine.LargestStep(e, m, 0, 0)
		worst = max(worst, d)
	}
	return worst
}

// Validate joins every problem of the configuration, naming each field.
func (c Config) Validate() error {
	errs := []error{c.Engine.Validate(), c.SLO.Validate(), c.Window.Validate(), c.Fleet.validate(c)}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("sim: Timeout must be >= 0 (0 means none), got %v", c.Timeout))
	}
	if c.Timeout > MaxDuration {
		errs = append(errs, fmt.Errorf("sim: Timeout must be <= MaxDuration (%v, a hundred years: an arrival plus it must stay within time.Duration), got %v", MaxDuration, c.Timeout))
	}
	if !(c.ErrorRate >= 0 && c.ErrorRate <= 1) {
		errs = append(errs, fmt.Errorf("sim: ErrorRate must be in [0, 1], got %v", c.ErrorRate))
	}
	if c.Percentiles > stats.InvertedCDF {
		errs = append(errs, fmt.Errorf("sim: Percentiles must be Linear or Empirical, got %d", c.Percentiles))
	}
	if c.ExactSamples < 0 {
		errs = append(errs, fmt.Errorf("sim: ExactSamples must be >= 0 (0 means DefaultExactSamples, %d), got %d", DefaultExactSamples, c.ExactSamples))
	}
	if c.MaxConcurrency < 0 {
		errs = append(errs, fmt.Errorf("sim: MaxConcurrency must be >= 0 (0 means no cap), got %d", c.MaxConcurrency))
	}
	errs = append(errs, validateClasses(c.Classes), c.Speculation.validate("Speculation"), c.Gateway.Validate())
	reps := c.replicas()
	if len(reps) > MaxReplicas {
		reps = nil // Fleet.validate said so, once rather than per replica
	}
	for i, r := range reps {
		if r.Engine.SpeculativeTokens != 0 {
			field := "Engine"
			if c.Fleet.Replicas != nil {
				field = fmt.Sprintf("Fleet.Replicas[%d].Engine", i)
			}
			errs = append(errs, fmt.Errorf("sim: %s.SpeculativeTokens is set through Speculation.Tokens, which carries the acceptance and the drafter", field))
		}
		field := "Speculation"
		if c.Fleet.Replicas != nil {
			field = fmt.Sprintf("Fleet.Replicas[%d].Speculation", i)
			errs = append(errs, r.Speculation.validate(field))
		}
		if b := r.Engine.WithDefaults().MaxBatchedTokens; r.Speculation.Tokens >= b && r.Engine.MaxBatchedTokens >= 0 {
			errs = append(errs, fmt.Errorf("sim: %s.Tokens (%d) must be below the engine's MaxBatchedTokens (%d): one decode could not verify its drafts in a step", field, r.Speculation.Tokens, b))
		}
	}
	for i, w := range c.Warm {
		if w.InputTokens <= 0 || len(w.PrefixHashes) == 0 || w.PrefixBlockTokens <= 0 {
			errs = append(errs, fmt.Errorf("sim: Warm[%d] has no prefix to install (InputTokens %d, %d prefix ids of %d tokens)", i, w.InputTokens, len(w.PrefixHashes), w.PrefixBlockTokens))
		}
		if w.InputTokens > engine.MaxTokens {
			errs = append(errs, fmt.Errorf("sim: Warm[%d].InputTokens must be <= engine.MaxTokens (%d), as a request's, got %d", i, engine.MaxTokens, w.InputTokens))
		}
	}
	errs = append(errs, validateModel(c.Model))
	return errors.Join(errs...)
}

func validateModel(m costmodel.Model) error {
	if v, ok := m.(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
}
