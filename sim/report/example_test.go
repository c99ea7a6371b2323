package report_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/report"
	"github.com/servesim/servesim/workload"
)

// Stream every request's record of a run as JSON lines. With KeepTokens
// the line carries every inter-token gap, per streamed chunk ("itl",
// seconds) and retokenized per token ("token_itl"): the same without
// speculative decoding.
func ExampleJSONL() {
	src, err := workload.NewPoisson(1, 1, 2, workload.Fixed(100, 3))
	if err != nil {
		panic(err)
	}
	events := report.NewEventJSONL(os.Stdout)
	if _, err := sim.Run(sim.Config{KeepTokens: true}, src, events); err != nil {
		panic(err)
	}
	if err := events.Flush(); err != nil {
		panic(err)
	}
	// Output:
	// {"id":0,"conversation":0,"turn":0,"class":"","replica":0,"measured":true,"status":"ok","reason":"","error":"","scheduled":0.501762106,"arrival":0.501762106,"finish":0.615262106,"client_wait":0,"queue_delay":0,"ttft":0.0235,"tpot":0.045,"e2el":0.1135,"input_len":100,"output_len":3,"requested_output_len":3,"cached_tokens":0,"preemptions":0,"max_itl":0.045,"max_token_itl":0.045,"itl_over_budget":0,"draft_tokens":0,"accepted_tokens":0,"itl":[0.045,0.045],"token_itl":[0.045,0.045]}
	// {"id":1,"conversation":0,"turn":0,"class":"","replica":0,"measured":true,"status":"ok","reason":"","error":"","scheduled":1.495624711,"arrival":1.495624711,"finish":1.609124711,"client_wait":0,"queue_delay":0,"ttft":0.0235,"tpot":0.045,"e2el":0.1135,"input_len":100,"output_len":3,"requested_output_len":3,"cached_tokens":0,"preemptions":0,"max_itl":0.045,"max_token_itl":0.045,"itl_over_budget":0,"draft_tokens":0,"accepted_tokens":0,"itl":[0.045,0.045],"token_itl":[0.045,0.045]}
}

// Write a run's summary under the names of vLLM's result file; a Tally
// counts the prompt tokens vLLM reports, which a Summary does not keep.
func ExampleWriteServe() {
	src, err := workload.NewPoisson(1, 2, 200, workload.Fixed(2000, 200))
	if err != nil {
		panic(err)
	}
	var tally report.Tally
	sum, err := sim.Run(sim.Config{}, src, &tally)
	if err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	meta := report.Meta{ModelID: "atlas-70b-tp4", RequestRate: 2, Burstiness: 1, InputTokens: tally.InputTokens}
	if err := report.WriteServe(&buf, &sum, meta); err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		panic(err)
	}
	for _, k := range []string{"completed", "failed", "total_input_tokens", "request_goodput", "p99_ttft_ms", "p99_itl_ms", "attainment"} {
		fmt.Printf("%s: %.4g\n", k, m[k])
	}
	// Output:
	// completed: 200
	// failed: 0
	// total_input_tokens: 4e+05
	// request_goodput: 1.697
	// p99_ttft_ms: 1862
	// p99_itl_ms: 135
	// attainment: 0.825
}

// sweep is a short Atlas TP4 sweep over three loads.
func sweep() analysis.Sweep {
	return analysis.Sweep{
		Config: sim.Config{Window: sim.Window{Warmup: 30 * time.Second, Horizon: 330 * time.Second}},
		Workload: analysis.WorkloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
			return workload.NewPoisson(seed, rate, int(rate*400)+10, workload.Fixed(2000, 200))
		}),
		Grid: analysis.Grid{Loads: []float64{1, 2, 3}},
		Reps: 3,
	}
}

// Write a sweep as benchmark lines; write B's sweep after it with its own
// Config and `benchstat -col config` compares the two.
func ExampleBench() {
	sw := sweep()
	sw.Grid.Loads, sw.Reps = []float64{1, 2}, 2
	c, err := sw.Run()
	if err != nil {
		panic(err)
	}
	if err := (report.Bench{Config: "chunk=2048"}).Write(os.Stdout, c); err != nil {
		panic(err)
	}
	// Output:
	// config: chunk=2048
	// Unit goodput-req/s better=higher
	// Unit attainment better=higher
	// Unit throughput-req/s better=higher
	// Unit ttft-p99-ms better=lower
	// Unit itl-p99-ms better=lower
	// BenchmarkGoodput/load=1-1	1	1.03667 goodput-req/s	1 attainment	1.03667 throughput-req/s	306.072 ttft-p99-ms	135 itl-p99-ms
	// BenchmarkGoodput/load=1-1	1	0.95 goodput-req/s	1 attainment	0.953333 throughput-req/s	297.042 ttft-p99-ms	135 itl-p99-ms
	// BenchmarkGoodput/load=2-1	1	1.88 goodput-req/s	0.969072 attainment	1.89 throughput-req/s	1346.7 ttft-p99-ms	135 itl-p99-ms
	// BenchmarkGoodput/load=2-1	1	1.80667 goodput-req/s	0.940972 attainment	1.93 throughput-req/s	3154.53 ttft-p99-ms	135 itl-p99-ms
}

// A card from a sweep: the caller states the claim and the workload, the
// sweep fills the rest. Here, its result section: a cost model declared
// ±10 % off before the sweep gives the knee, the peak and the headroom a
// model range beside their seed intervals.
func ExampleCard_WriteMarkdown() {
	sw := sweep()
	sw.ModelError = analysis.ModelError{Scale: 0.1}
	c, err := sw.Run()
	if err != nil {
		panic(err)
	}
	card := report.NewCard(sw, c, 1.5)
	card.Title = "Atlas TP4, default scheduler"
	card.Claim = "The default Atlas TP4 replica keeps 95 % attainment at 1.5 req/s of 2,000-token prompts."
	card.Workload.Arrival = "Poisson"
	var buf bytes.Buffer
	if err := card.WriteMarkdown(&buf); err != nil {
		panic(err)
	}
	md := buf.String()
	fmt.Print(md[:strings.Index(md, "### Curve")])
	// Output:
	// # Atlas TP4, default scheduler
	//
	// **Claim.** The default Atlas TP4 replica keeps 95 % attainment at 1.5 req/s of 2,000-token prompts.
	//
	// ## Result
	//
	// | figure | value | 95 % interval | model range |
	// |---|---|---|---|
	// | knee: highest load with attainment ≥ 0.95 | 2.003 req/s | [1.604, 2.04] | [< 1, 2.053] req/s |
	// | peak goodput | 1.832 req/s at 2 req/s offered | [1.729, 1.935] | [1.681, 1.894] req/s |
	// | collapse: goodput below 90 % of the peak | from 3 req/s offered | — | — |
	// | headroom at the operating point 1.5 req/s | +0.503 req/s (+33.6 %) | [0.1043, 0.5402] | [< -33.3 %, +36.9 %] of the operating load |
	//
	// Model error declared before the sweep: step times ±10 % (fragile if the knee moves by more than 50 % of its nominal value across the band). Every load also ran, on the same seeds, under step times ×1.1 (knee not found: the lowest measured load 1 already misses the 0.95 attainment target: the knee is below it); step times ×0.9 (knee 2.053 req/s [2.001, 2.163]). The knee rests on the model: under step times ×1.1 the knee is < 1 req/s (-50 %); across the band (step times ±10 %) it spans [< 1, 2.053]. **Fragile:** the knee rests on the cost model's accuracy (see the warning below).
	//
	// - the knee moves across the model band (step times ±10 %) over [< 1, 2.053] req/s: the largest step this configuration can form, 136.645ms, is 91 % of the 150ms ITL bound, so a few percent of cost error fails every request that meets such a step; a smaller token budget or batch shrinks that step, a chunk cap makes it rare (several prompts must then prefill at once to form it)
}
