package main

import (
	"fmt"
	"io"
	"time"

	"github.com/servesim/servesim/internal/moduleroot"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// azureConv is the full trace's file name in ../shared/traces.
const azureConv = "AzureLLMInferenceTrace_conv.csv"

// sample is the Azure sample examples/tracereplay ships, relative to the
// module root: read where it lies rather than copied, so the repository
// holds one copy of the data and its attribution (its NOTICE.md).
const sample = "examples/tracereplay/testdata/azure_conv_sample.csv"

// defaultTrace is the sample under the root of the module containing the
// working directory (found by its go.mod), so the default works from any
// directory of a clone; the sample's path relative to the working
// directory when no go.mod is found (reading it then fails, naming
// -trace).
func defaultTrace() string { return moduleroot.Path(sample) }

// traceDay is what the sizing needs of a trace: its requests, its span
// and own rate, and the window of its replay compressed by the headroom.
type traceDay struct {
	n               int
	span            time.Duration
	rate            float64 // requests over span (vLLM's convention, as TargetRate's)
	meanIn, meanOut float64
	window          sim.Window
}

// readTrace reads the trace once, at its own pace, and places the window:
// from warmup to the last arrival of the replay compressed by 1/(1 +
// headroom).
func readTrace(path string, warmup time.Duration, headroom float64) (*traceDay, error) {
	tr, err := workload.OpenTrace(path, workload.Azure())
	if err != nil {
		return nil, fmt.Errorf("-trace: %w", err)
	}
	defer tr.Close()
	var t traceDay
	var in, out float64
	for {
		r, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("-trace: %w", err)
		}
		t.n++
		in += float64(r.InputTokens)
		out += float64(r.OutputTokens)
	}
	c := tr.Clock()
	t.span, t.rate = c.Span, c.Rate()
	if t.n < 2 || t.span <= 0 {
		return nil, fmt.Errorf("-trace %s: %d requests over %v: no rate of its own to size for (it needs two requests or more at different instants)", path, t.n, t.span)
	}
	t.meanIn, t.meanOut = in/float64(t.n), out/float64(t.n)
	end := time.Duration(float64(t.span) / (1 + headroom))
	if warmup >= end {
		return nil, fmt.Errorf("-trace-warmup %v must be shorter than the trace's replay, %v compressed by the headroom to %v", warmup, t.span, end.Round(time.Millisecond))
	}
	t.window = sim.Window{Warmup: warmup, Horizon: end}
	return &t, nil
}

// reps is the replications of the trace's sizing. A trace is one sample:
// its replay ignores the seed, so behind a router that draws nothing
// (least-loaded, round-robin) every replication is the same run, and one
// says all; behind random or power-of-two they differ in the router's
// draws, and it runs -reps.
func (t *traceDay) reps(o options) int {
	if o.router == "least-loaded" || o.router == "round-robin" {
		return 1
	}
	return o.reps
}

func (t *traceDay) repsWords(o options) string {
	if n := t.reps(o); n > 1 {
		return fmt.Sprintf("Mean over %d seeded replications, the same requests routed by each seed's draws", n)
	}
	return fmt.Sprintf("One replay: the trace is one sample and %s draws nothing, so every seed would run it the same", o.router)
}
