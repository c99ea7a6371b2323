package workload_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/servesim/servesim/workload"
)

// The simplest workload: Poisson arrivals with fixed lengths.
func ExampleNewPoisson() {
	src, err := workload.NewPoisson(1, 4, 3, workload.Fixed(2000, 200))
	if err != nil {
		panic(err)
	}
	for {
		r, err := src.Next()
		if err == io.EOF {
			break
		}
		fmt.Printf("#%d at %v: %d in, %d out\n", r.ID, r.Arrival.Round(time.Millisecond), r.InputTokens, r.OutputTokens)
	}
	// Output:
	// #0 at 125ms: 2000 in, 200 out
	// #1 at 374ms: 2000 in, 200 out
	// #2 at 864ms: 2000 in, 200 out
}

// Common random numbers: the same seed at twice the rate offers the same
// requests at half the instants.
func ExampleArrival_commonRandomNumbers() {
	offered := func(rate float64) []workload.Request {
		src, _ := workload.NewSynthetic(workload.Synthetic{
			Seed: 7, Count: 3,
			Arrival: workload.Arrival{Process: workload.Gamma, Rate: rate, Burstiness: 0.5},
			Lengths: workload.Independent{Input: workload.Uniform{Center: 1000, RangeRatio: 0.5}, Output: workload.Constant{Tokens: 200}},
		})
		var out []workload.Request
		for r, err := src.Next(); err == nil; r, err = src.Next() {
			out = append(out, r)
		}
		return out
	}
	slow, fast := offered(2), offered(4)
	for i := range slow {
		fmt.Printf("%d tokens: %v at 2 req/s, %v at 4 req/s\n", slow[i].InputTokens,
			slow[i].Arrival.Round(time.Millisecond), fast[i].Arrival.Round(time.Millisecond))
	}
	// Output:
	// 547 tokens: 1.776s at 2 req/s, 888ms at 4 req/s
	// 1122 tokens: 1.776s at 2 req/s, 888ms at 4 req/s
	// 1195 tokens: 1.982s at 2 req/s, 991ms at 4 req/s
}

// Replaying a trace: an Azure 2023 excerpt at twice its own pace.
func ExampleNewTrace() {
	const excerpt = `TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:51.4013280,879,31`
	cfg := workload.Azure()
	cfg.Transform.Slowdown = 0.5
	tr, err := workload.NewTrace(strings.NewReader(excerpt), "azure.csv", cfg)
	if err != nil {
		panic(err)
	}
	for r, err := tr.Next(); err != io.EOF; r, err = tr.Next() {
		fmt.Println(r.ID, r.Arrival, r.InputTokens, r.OutputTokens)
	}
	// Output:
	// 0 0s 374 44
	// 1 2.1572895s 396 109
	// 2 2.360369s 879 31
}

// A malformed line names its file, line and field.
func ExampleParseError() {
	const bad = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,abc,44\n"
	tr, _ := workload.NewTrace(strings.NewReader(bad), "azure.csv", workload.Azure())
	_, err := tr.Next()
	fmt.Println(err)
	fmt.Println(errors.Is(err, workload.ErrMalformed))
	// Output:
	// workload: azure.csv:2: field ContextTokens: "abc" is not an integer
	// true
}

// A closed-loop source and its driver: drain Next until ErrWaiting, then
// report each finished request through Feedback.
func ExampleNewClients() {
	src, _ := workload.NewClients(workload.Clients{
		Seed: 1, Clients: 2, Requests: 4, Think: workload.Think{Mean: time.Second},
		Lengths: workload.Fixed(100, 10),
	})
	fmt.Println(workload.LoopOf(src))
	var inFlight []workload.Request
	for {
		r, err := src.Next()
		switch {
		case err == io.EOF:
			return
		case errors.Is(err, workload.ErrWaiting):
			done := inFlight[0] // a server that answers in 2 s
			inFlight = inFlight[1:]
			src.Finished(done.ID, done.Arrival+2*time.Second, true)
		default:
			fmt.Printf("#%d sent at %v\n", r.ID, r.Arrival)
			inFlight = append(inFlight, r)
		}
	}
	// Output:
	// closed-loop
	// #0 sent at 0s
	// #1 sent at 0s
	// #2 sent at 3s
	// #3 sent at 3s
}

// The prefix workloads of the routing experiment, as a benchmark card
// prints them: a Synthetic workload adds each request's sampled input (its
// own suffix) after the shared prefix.
func ExamplePrefixReuse_fleet() {
	fmt.Println("low: ", workload.FleetLowReuse)
	fmt.Println("high:", workload.FleetHighReuse)
	src, _ := workload.NewSynthetic(workload.Synthetic{Seed: 1, Count: 3, Arrival: workload.Arrival{Rate: 8},
		Lengths: workload.Fixed(500, 200), Prefix: workload.FleetHighReuse})
	for r, err := src.Next(); err == nil; r, err = src.Next() {
		fmt.Printf("#%d: %d tokens, %d ids, the first 256 of group %d\n", r.ID, r.InputTokens, len(r.PrefixHashes), r.PrefixHashes[0]/256)
	}
	// Output:
	// low:  512-token system prompt shared with p=0.25 among 64 groups, 16-token blocks
	// high: 4096-token system prompt shared with p=1 among 256 groups of Zipf popularity s=0.8, 16-token blocks
	// #0: 4596 tokens, 288 ids, the first 256 of group 47
	// #1: 4596 tokens, 288 ids, the first 256 of group 178
	// #2: 4596 tokens, 288 ids, the first 256 of group 40
}

// A conversation-keeping trace replay: conversation 7's second turn,
// recorded 1 s after the first, waits for the first to end (at 4 s) plus
// the 2 s minimum think time; the request without conversation keeps its
// instant.
func ExampleOpenReplay() {
	trace := "t,in,out,conv\n0,2000,200,7\n0.5,1000,100,\n1,3000,300,7\n"
	cfg := workload.TraceConfig{Columns: workload.Columns{Arrival: "t", Input: "in", Output: "out", Conversation: "conv"},
		Conversations: workload.ConversationReplay{Keep: true, MinThink: 2 * time.Second}}
	src, err := workload.NewReplay(strings.NewReader(trace), "conv.csv", cfg)
	if err != nil {
		panic(err)
	}
	fmt.Println(src.Loop())
	for {
		r, err := src.Next()
		if errors.Is(err, workload.ErrWaiting) {
			fmt.Println("waiting: request 0 ends at 4s")
			src.(workload.Feedback).Finished(0, 4*time.Second, true)
			continue
		}
		if err == io.EOF {
			break
		}
		fmt.Printf("request %d of conversation %d at %v\n", r.ID, r.Conversation, r.Arrival)
	}
	// Output:
	// closed-loop
	// request 0 of conversation 7 at 0s
	// request 1 of conversation 0 at 500ms
	// waiting: request 0 ends at 4s
	// request 2 of conversation 7 at 6s
}
