package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim"
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

// study is the sweep and how the card names it.
type study struct {
	sweep sim.Sweep
	what  string // the study in a line
}

func studyFlags(fs *flag.FlagSet) *studyOptions {
	st := &studyOptions{loads: "0.5,1,1.5,2,2.25,2.5,2.75,3,3.5,4", reps: 5, warmup: time.Minute, horizon: 10 * time.Minute, modelError: 0.1, prompt: 2000, output: 200}
	fs.StringVar(&st.file, "study", "", "a sim.Sweep as a scenario file (JSON, as `shard study` or package scenario writes it) instead of the built-in Atlas sweep; the other study flags are then refused")
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

// sweep builds the study from the flags set on fs: the scenario file, or
// the built-in Atlas sweep with the flags' values.
func (st *studyOptions) sweep(fs *flag.FlagSet) (study, error) {
	var given []string
	fs.Visit(func(f *flag.Flag) {
		if isStudyFlag(f.Name) {
			st.args = append(st.args, "-"+f.Name, f.Value.String())
			if f.Name != "study" {
				given = append(given, "-"+f.Name)
			}
		}
	})
	if st.file != "" {
		if len(given) > 0 {
			return study{}, fmt.Errorf("-study defines the whole study: %s would be ignored", strings.Join(given, ", "))
		}
		return readStudy(st.file)
	}
	return st.atlas()
}

// readStudy reads a sim.Sweep from a scenario file.
func readStudy(path string) (study, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return study{}, err
	}
	var s sim.Sweep
	if err := scenario.Default().Unmarshal(b, &s); err != nil {
		return study{}, fmt.Errorf("-study %s: %w", path, err)
	}
	return study{sweep: s, what: "the sim.Sweep of " + path}, s.Validate()
}

// atlas is the Atlas TP4 capacity sweep over the flags' loads, with the
// estimated serving capacity for each point's utilisation.
func (st *studyOptions) atlas() (study, error) {
	loads, err := parseLoads(st.loads)
	if err != nil {
		return study{}, err
	}
	r := costmodel.AtlasTP4()
	r.Point.PromptTokens, r.Point.OutputTokens = st.prompt, st.output
	r.Point.SeqTokens, r.Point.Context = st.prompt+st.output, st.prompt+st.output/2
	e, err := r.Estimate()
	if err != nil {
		return study{}, err
	}
	s := sim.Sweep{
		Config:     sim.Config{Model: costmodel.Frozen{}, Window: sim.Window{Warmup: st.warmup, Horizon: st.horizon}},
		Workload:   sim.Poisson(workload.Fixed(st.prompt, st.output)),
		Grid:       sim.Grid{Loads: loads},
		Reps:       st.reps,
		BaseSeed:   st.seed,
		ModelError: sim.ModelError{Scale: st.modelError},
		Capacity:   e.ServingCapacity.Value,
	}
	what := fmt.Sprintf("Atlas TP4 (frozen cost model, vLLM V1 engine defaults), Poisson arrivals of %d-token prompts and %d-token outputs", st.prompt, st.output)
	return study{sweep: s, what: what}, s.Validate()
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
