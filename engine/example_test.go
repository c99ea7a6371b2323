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
