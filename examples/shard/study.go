package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// studyOptions are the flags that define the study: every process of a
// study gets the same.
type studyOptions struct {
	file           string
	loads          string
	reps           int
	warmup         time.Duration
	horizon        time.Duration
	seed           uint64
	modelError     float64
	prompt, output int
	args           []string // the study flags as given, for the card's command
}

func studyFlags(fs *flag.FlagSet) *studyOptions {
	st := &studyOptions{loads: "0.5,1,1.5,2,2.25,2.5,2.75,3,3.5,4", reps: 5, warmup: time.Minute, horizon: 10 * time.Minute, modelError: 0.1, prompt: 2000, output: 200}
	fs.StringVar(&st.file, "study", "", "a scenario file (package scenario; `shard study` writes one) holding a sweep, a dial sweep or an experiment, instead of the built-in Atlas sweep; the other study flags are then refused")
	fs.StringVar(&st.loads, "loads", st.loads, "comma-separated offered loads, req/s (explicit: a sharded sweep cannot choose its loads from its results)")
	fs.IntVar(&st.reps, "reps", st.reps, "seeded replications per load")
	fs.DurationVar(&st.warmup, "warmup", st.warmup, "simulated warm-up left out of each run")
	fs.DurationVar(&st.horizon, "horizon", st.horizon, "end of each run's measurement window (simulated time)")
	fs.Uint64Var(&st.seed, "seed", st.seed, "base seed of the replications")
	fs.Float64Var(&st.modelError, "model-error", st.modelError, "relative error declared on every step time: each load also runs at ×(1 ± this) on the same seeds (0: none)")
	fs.IntVar(&st.prompt, "prompt", st.prompt, "prompt tokens of every request")
	fs.IntVar(&st.output, "output", st.output, "output tokens of every response")
	return st
}

// isStudyFlag reports whether a flag defines the study.
func isStudyFlag(name string) bool {
	switch name {
	case "study", "loads", "reps", "warmup", "horizon", "seed", "model-error", "prompt", "output":
		return true
	}
	return false
}

// scenario builds the study from the flags set on fs: the scenario file,
// or the built-in Atlas sweep with the flags' values.
func (st *studyOptions) scenario(fs *flag.FlagSet) (scenario.Scenario, error) {
	var given []string
	fs.Visit(func(f *flag.Flag) {
		if isStudyFlag(f.Name) {
			st.args = append(st.args, "-"+f.Name, f.Value.String())
			if f.Name != "study" {
				given = append(given, "-"+f.Name)
			}
		}
	})
	if st.file == "" {
		return st.atlas()
	}
	if len(given) > 0 {
		return scenario.Scenario{}, fmt.Errorf("-study defines the whole study: %s would be ignored", strings.Join(given, ", "))
	}
	s, err := scenario.Load(st.file)
	if err != nil {
		return s, fmt.Errorf("-study: %w", err)
	}
	switch s.Kind() {
	case "sweep", "dial sweep", "experiment":
		return s, nil
	case "replay":
		return s, fmt.Errorf("-study %s holds a replay: one run, nothing to shard (go run ./examples/run -config %s)", st.file, st.file)
	}
	return s, fmt.Errorf("-study %s holds a study of groups, whose experiments take their loads from a sweep's knee: shard its sweeps and experiments one scenario each", st.file)
}

// atlas is the Atlas TP4 capacity sweep over the flags' loads, with the
// estimated serving capacity for each point's utilisation.
func (st *studyOptions) atlas() (scenario.Scenario, error) {
	loads, err := parseLoads(st.loads)
	if err != nil {
		return scenario.Scenario{}, err
	}
	r := costmodel.AtlasTP4()
	p := &r.Point
	p.PromptTokens, p.OutputTokens = st.prompt, st.output
	p.SeqTokens, p.Context = st.prompt+st.output, st.prompt+st.output/2
	e, err := r.Estimate()
	if err != nil {
		return scenario.Scenario{}, err
	}
	s := &analysis.Sweep{
		Config:     sim.Config{Model: costmodel.Frozen{}, Window: sim.Window{Warmup: st.warmup, Horizon: st.horizon}},
		Workload:   analysis.Poisson(workload.Fixed(st.prompt, st.output)),
		Grid:       analysis.Grid{Loads: loads},
		Reps:       st.reps,
		BaseSeed:   st.seed,
		ModelError: analysis.ModelError{Scale: st.modelError},
		Capacity:   e.ServingCapacity.Value,
	}
	if err := s.Validate(); err != nil {
		return scenario.Scenario{}, err
	}
	return scenario.Scenario{
		Name:  "atlas-shard",
		Title: "Atlas TP4 goodput curve, run as shards (simulated)",
		Claim: fmt.Sprintf("The Atlas TP4 replica (frozen cost model) keeps %.0f %% of %d / %d-token requests within TTFT <= 600ms and every ITL <= 150ms up to the knee reported below.",
			100*0.95, st.prompt, st.output),
		Sweep: s,
	}, nil
}

// parseLoads reads comma-separated positive rates.
func parseLoads(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("-loads: %q is not a positive rate in requests/s", f)
		}
		out = append(out, v)
	}
	return out, nil
}
