package mixedrun_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/mixedrun"
)

// Three requests decode, and one of them finishes; a fourth's prompt arrives and is prefilled whole in a
// mixed step beside them. A driver that allowed mixed moves gets that step
// and the decode run after it as one move, whose first step is longer than
// the rest (by the prompt's prefill, 20 + 0.035·200 ms at the Frozen
// costs), and reads which outcome covers that first step.
func Example() {
	e, err := engine.New(engine.Config{KVBlocks: 1000, MaxSeqs: 8}, nil)
	if err != nil {
		panic(err)
	}
	run := e.Runner()
	run.OmitStreaks(true)
	mixedrun.Allow(e, true)
	firstOn, firstBlocks := mixedrun.Out(e)
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
	p = plan(out.End) // their decode run, to the first finish
	fmt.Printf("decode run: %d steps of %v\n", p.Steps, p.StepTime)
	out, _ = run.CompleteUntil(p.End)
	for _, em := range out.Emitted {
		fmt.Printf("  request %d: %d tokens, done %v\n", em.Ref, em.Tokens, em.Done)
	}
	p = plan(out.End) // the two others' run, cut by an arrival
	fmt.Printf("decode run: %d steps of %v\n", p.Steps, p.StepTime)
	at := p.Start + 10*p.StepTime + p.StepTime/2 // inside its 11th step
	_, _ = run.CompleteUntil(at)
	_ = e.Add(at, engine.Request{Ref: 3, Input: 200, Output: 20})
	_, end, _ := run.Truncate(at) // the run ends with the step in flight
	_, _ = run.CompleteUntil(end)

	p = plan(end)
	fmt.Printf("mixed move: %d steps of %v, the first %v longer\n",
		p.Steps, p.StepTime, p.End-p.Start-time.Duration(p.Steps)*p.StepTime)
	out, _ = run.CompleteUntil(p.End)
	fmt.Println("covers the first step:", *firstOn, "blocks held in it:", *firstBlocks)
	*firstOn = false // the driver sets it back once read
	for _, em := range out.Emitted {
		fmt.Printf("  request %d: %d tokens, first %v\n", em.Ref, em.Tokens, em.First)
	}
	fmt.Println("  and", out.Streak, "requests that continued their streak")
	// Output:
	// decode run: 7 steps of 45ms
	//   request 2: 7 tokens, done true
	// decode run: 42 steps of 45ms
	// mixed move: 19 steps of 45ms, the first 27ms longer
	// covers the first step: true blocks held in it: 29
	//   request 3: 19 tokens, first true
	//   and 2 requests that continued their streak
}
