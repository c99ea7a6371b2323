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

// The fleet example, as docs/examples.md prints it ("routing: fleets and
// routers"): four Atlas TP4 replicas behind SGLang's cache-aware router,
// at 8 req/s of the high-reuse workload.
func Example_fleet() {
	cfg := sim.Config{
		Fleet:  sim.Fleet{Replicas: sim.Copies(4, sim.ReplicaConfig{}), Router: sim.PrefixAffinity{}},
		Window: sim.Window{Warmup: time.Minute, Horizon: 10 * time.Minute},
	}
	src, _ := workload.NewSynthetic(workload.Synthetic{Seed: 1, Duration: 20 * time.Minute,
		Arrival: workload.Arrival{Rate: 8}, Lengths: workload.Fixed(500, 200), Prefix: workload.FleetHighReuse})
	sum, err := sim.Run(cfg, src, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("goodput %.2f req/s, prefix hit rate %.2f\n", sum.Goodput, float64(sum.Cached)/float64(sum.InputTokens))
	for _, r := range sum.Replicas {
		fmt.Printf("replica %d: %d requests, hit rate %.2f\n", r.Replica, r.Offered, r.PrefixHitRate())
	}
	// Output:
	// goodput 7.94 req/s, prefix hit rate 0.85
	// replica 0: 1102 requests, hit rate 0.85
	// replica 1: 1134 requests, hit rate 0.86
	// replica 2: 1044 requests, hit rate 0.84
	// replica 3: 1037 requests, hit rate 0.84
}

// docs/examples.md shows Example_fleet's body as it is here.
func TestDocsShowTheFleetExample(t *testing.T) {
	src, err := os.ReadFile("readme_example_test.go")
	require.NoError(t, err)
	doc, err := os.ReadFile("../../docs/examples.md")
	require.NoError(t, err)
	s := string(src)
	start := strings.Index(s, "\tcfg := sim.Config{\n\t\tFleet:")
	end := strings.Index(s, "\t// Output:")
	require.True(t, start > 0 && end > start)
	var body strings.Builder
	for _, line := range strings.SplitAfter(s[start:end], "\n") {
		body.WriteString(strings.TrimPrefix(line, "\t"))
	}
	assert.True(t, strings.Contains(string(doc), "```go\n"+body.String()+"```\n"), "docs/examples.md must show Example_fleet's body exactly:\n%s", body.String())
}
