package engine_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
)

// Drive the Atlas replica by hand: a 2,000-token prompt chunked by 256 takes
// eight prefill steps (7 × 28.96 ms + 27.28 ms) to its first token, then one
// 45 ms decode step per further token.
func Example() {
	e, err := engine.New(engine.Config{ChunkCap: 256}, costmodel.Frozen{})
	if err != nil {
		panic(err)
	}
	if err := e.Add(0, engine.Request{Ref: 7, Input: 2000, Output: 3}); err != nil {
		panic(err)
	}
	var now time.Duration // the clock is the driver's
	for steps := 1; ; steps++ {
		plan, err := e.Schedule(now)
		if err != nil || plan == nil {
			break
		}
		out, _ := e.Complete(plan.End)
		now = plan.End
		for _, em := range out.Emitted {
			fmt.Printf("step %d ends at %v: request %d emits a token (first %v, done %v)\n", steps, now, em.Ref, em.First, em.Done)
		}
	}
	fmt.Println("free blocks:", e.FreeBlocks())
	// Output:
	// step 8 ends at 230ms: request 7 emits a token (first true, done false)
	// step 9 ends at 275ms: request 7 emits a token (first false, done false)
	// step 10 ends at 320ms: request 7 emits a token (first false, done true)
	// free blocks: 28672
}

// The largest step a configuration can form, against the chapter's 150 ms
// ITL bound. With no chunk cap: one decode beside 2,047 prefill tokens.
// With a 256-token cap, one chunk beside the decodes is the chapter's
// 73.96 ms mixed step, but a batch of 32 can hold eight chunks at once.
func ExampleLargestStep() {
	for _, c := range []struct {
		cfg      engine.Config
		prefills int
	}{{engine.Config{}, 0}, {engine.Config{ChunkCap: 256}, 1}, {engine.Config{ChunkCap: 256}, 0}} {
		d, b := engine.LargestStep(c.cfg, nil, 2000, c.prefills)
		fmt.Printf("%v: %d decodes, %d prefill tokens in %d chunks\n", d, len(b.Decode), b.PrefillTokens(), len(b.Prefill))
	}
	// Output:
	// 136.645ms: 1 decodes, 2047 prefill tokens in 1 chunks
	// 73.96ms: 1 decodes, 256 prefill tokens in 1 chunks
	// 136.645ms: 1 decodes, 2047 prefill tokens in 8 chunks
}

// With streaks left out, an outcome lists only what changed: the first
// token, the last, and how many requests simply decoded on (Streak). Two
// 100-token prompts are prefilled in one step (20 + 200 × 0.035 = 27 ms),
// which emits the first token of each; then 45 ms decode steps run to the
// first finish as one move (ScheduleUntil), whose tokens are counted, not
// listed, but for the request that finishes.
func ExampleRunner_OmitStreaks() {
	e, _ := engine.New(engine.Config{}, costmodel.Frozen{})
	e.Runner().OmitStreaks(true)
	_ = e.Add(0, engine.Request{Ref: 1, Input: 100, Output: 4})
	_ = e.Add(0, engine.Request{Ref: 2, Input: 100, Output: 6})
	var now time.Duration
	for !e.Idle() {
		plan, _ := e.Runner().ScheduleUntil(now, time.Hour) // nothing else will happen
		out, _ := e.Complete(plan.End)
		now = plan.End
		fmt.Printf("%d steps to %v: listed %v, %d decoded on (%d decodes a step)\n", out.Steps, now, out.Emitted, out.Streak, out.Decodes)
	}
	// Output:
	// 1 steps to 27ms: listed [{1 true false 1} {2 true false 1}], 0 decoded on (0 decodes a step)
	// 3 steps to 162ms: listed [{1 false true 3}], 1 decoded on (2 decodes a step)
	// 2 steps to 252ms: listed [{2 false true 2}], 0 decoded on (1 decodes a step)
}

// A driver that plans runs of decode steps asks Continue at each step end
// first: three 100-token prompts prefill in one 30.5 ms step (20 + 0.035 ×
// 300 ms), which emits each one's first token; then, nothing waiting,
// each run of 45 ms decode steps is planned at the step end before it
// (the prompts' last chunk, then each finish), without a new plan.
func ExampleRunner_Continue() {
	e, err := engine.New(engine.Config{}, costmodel.Frozen{})
	if err != nil {
		panic(err)
	}
	e.Runner().OmitStreaks(true) // the cohort, which Continue plans, serves such a driver
	for ref, output := range []int{4, 7, 9} {
		if err := e.Add(0, engine.Request{Ref: int32(ref), Input: 100, Output: output}); err != nil {
			panic(err)
		}
	}
	const until = time.Hour // nothing else will happen before
	plan, _ := e.Runner().ScheduleUntil(0, until)
	for plan != nil {
		out, _ := e.Complete(plan.End)
		for _, em := range out.Emitted {
			if em.Done {
				fmt.Printf("request %d finished at %v\n", em.Ref, out.End)
			}
		}
		if plan = e.Runner().Continue(out.End, until); plan != nil {
			fmt.Printf("continued: %d steps of %v from %v\n", plan.Steps, plan.StepTime, plan.Start)
			continue
		}
		if plan, _ = e.Runner().ScheduleUntil(out.End, until); plan != nil {
			fmt.Printf("planned: %d steps of %v from %v\n", plan.Steps, plan.StepTime, plan.Start)
		}
	}
	// Output:
	// continued: 3 steps of 45ms from 30.5ms
	// request 0 finished at 165.5ms
	// continued: 3 steps of 45ms from 165.5ms
	// request 1 finished at 300.5ms
	// continued: 2 steps of 45ms from 300.5ms
	// request 2 finished at 390.5ms
}

// The Atlas default, driven as sim drives it (streaks left out), takes
// every fast path; speculative decoding turns off those whose steps it
// makes differ, and says why.
func ExampleEngine_FastPaths() {
	e, _ := engine.New(engine.Config{}, costmodel.Frozen{})
	e.Runner().OmitStreaks(true)
	spec, _ := engine.New(engine.Config{SpeculativeTokens: 3}, costmodel.Frozen{})
	spec.Runner().OmitStreaks(true)
	state := func(p engine.FastPath) string {
		if p.On {
			return "on"
		}
		return "off: " + p.Reason
	}
	specPaths := spec.FastPaths()
	for i, p := range e.FastPaths() {
		fmt.Printf("%-8s %s, %s\n", p.Name, state(p), state(specPaths[i]))
	}
	// Output:
	// runs     on, off: speculative decoding: drafts change tokens a step
	// residues on, on
	// cohort   on, off: speculative decoding: drafts change tokens a step
	// continue on, off: speculative decoding: drafts change tokens a step
	// streaks  on, off: speculative decoding: drafts change tokens a step
	// joins    on, on
	// fcfs-run on, on
	// chunks   on, off: speculative decoding: drafts change tokens a step
	// reserves on, off: speculative decoding: drafts change tokens a step
}
