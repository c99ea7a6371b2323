package runthrough_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/runthrough"
)

// Three requests decode; one finishes long before the others. A driver that
// allowed runs through finishes gets one run to the others' end, learns the
// instant of the finish inside it (FinAt), and finds the finisher in the
// run's outcome with fewer tokens than the run has steps. (At the Frozen
// costs: the prefill of 300 tokens takes 20 + 0.035·300 ms, a decode step
// 45 ms; request 2's seven decodes end 7 × 45 ms after the prefill.)
func Example() {
	e, err := engine.New(engine.Config{KVBlocks: 1000, MaxSeqs: 8}, nil)
	if err != nil {
		panic(err)
	}
	run := e.Runner()
	run.OmitStreaks(true)
	runthrough.Allow(e, true)
	finAt := runthrough.FinAt(e)
	plan := func(now time.Duration) *engine.Plan { // as sim plans: Continue first
		if p := run.Continue(now, time.Hour); p != nil {
			return p
		}
		p, _ := run.ScheduleUntil(now, time.Hour)
		return p
	}

	for ref, output := range []int{50, 50, 8} {
		_ = e.Add(0, engine.Request{Ref: int32(ref), Input: 100, Output: output})
	}
	p := plan(0) // the three prompts' prefill
	out, _ := run.CompleteUntil(p.End)
	p = plan(out.End) // their decode run
	fmt.Printf("decode run: %d steps of %v from %v\n", p.Steps, p.StepTime, p.Start)
	fmt.Println("first finish inside it:", *finAt)
	out, _ = run.CompleteUntil(p.End)
	for _, em := range out.Emitted {
		fmt.Printf("  request %d: %d tokens, done %v\n", em.Ref, em.Tokens, em.Done)
	}
	// Output:
	// decode run: 49 steps of 45ms from 30.5ms
	// first finish inside it: 345.5ms
	//   request 2: 7 tokens, done true
	//   request 0: 49 tokens, done true
	//   request 1: 49 tokens, done true
}
