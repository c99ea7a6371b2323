package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// The README's dial-sweep example, as it is printed there ("Dial sweeps
// and the step timeline"): the chapter's workload, no chunk cap against a
// 512-token cap, on the same seeds.
func Example_dialSweep() {
	res, err := sim.DialSweep{
		Sweep: sim.Sweep{
			Config:   sim.Config{Window: sim.Window{Warmup: time.Minute, Horizon: 10 * time.Minute}},
			Workload: sim.Poisson(workload.Fixed(2000, 200)),
			Grid:     sim.Grid{Loads: []float64{1.4, 1.6, 1.8, 2.0, 2.2, 2.4}},
		},
		Dial: sim.DialChunkCap, Values: []float64{0, 512}, Probe: 1, // Values[0] is the baseline
	}.Run()
	if err != nil {
		panic(err)
	}
	for i, v := range res.Values {
		k, d := res.Curves[i].Knee.Load, res.KneeDiff[i]
		fmt.Printf("chunk cap %3v: knee %.2f [%.2f, %.2f] req/s, paired difference %+.2f [%+.2f, %+.2f], ITL p99 %.1f ms at 1 req/s\n",
			v, k.Center, k.Lo, k.Hi, d.Center, d.Lo, d.Hi, res.Probe[i].ITL.P99.Center)
	}
	// Output:
	// chunk cap   0: knee 2.01 [1.91, 2.16] req/s, paired difference +0.00 [+0.00, +0.00], ITL p99 135.0 ms at 1 req/s
	// chunk cap 512: knee 1.72 [1.65, 1.87] req/s, paired difference -0.28 [-0.31, -0.25], ITL p99 100.8 ms at 1 req/s
}

// The README shows Example_dialSweep's body as it is here.
func TestREADMEShowsTheDialSweepExample(t *testing.T) {
	src, err := os.ReadFile("readme_example_test.go")
	require.NoError(t, err)
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	s := string(src)
	start := strings.Index(s, "\tres, err := sim.DialSweep{")
	end := strings.Index(s, "\t// Output:")
	require.True(t, start > 0 && end > start)
	var body strings.Builder
	for _, line := range strings.SplitAfter(s[start:end], "\n") {
		body.WriteString(strings.TrimPrefix(line, "\t"))
	}
	assert.Contains(t, string(readme), "```go\n"+body.String()+"```\n", "README.md must show Example_dialSweep's body exactly")
}
