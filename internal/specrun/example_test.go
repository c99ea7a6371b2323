package specrun_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/accept"
	"github.com/servesim/servesim/internal/specrun"
)

// Two requests decode speculatively, four drafts a step accepted i.i.d. at
// α = 0.7, each from its own stream. A driver that allowed speculative runs
// gets several steps as one move and reads, member by member, the drafts
// each step accepted (Of): a member emits the drafts it accepted and one
// token more a step (request 0: 35 accepted in 19 steps, 54 tokens).
func Example() {
	cfg := engine.Config{KVBlocks: 1000, MaxSeqs: 8, SpeculativeTokens: 4}
	e, err := engine.New(cfg, costmodel.Frozen{})
	if err != nil {
		panic(err)
	}
	var streams []accept.PCG
	e.SetAcceptor(accept.NewIID(&streams, 0.7, cfg.SpeculativeTokens))
	run := e.Runner()
	run.OmitStreaks(true)
	specrun.Allow(e, true)
	counts := specrun.Of(e)

	for ref := range int32(2) {
		streams = append(streams, accept.NewPCG(1, uint64(ref))) // the driver grows and seeds them
		_ = e.Add(0, engine.Request{Ref: ref, Input: 100, Output: 60})
	}
	p, _ := run.ScheduleUntil(0, time.Hour) // the prompts' prefill
	out, _ := run.CompleteUntil(p.End)
	for out.Steps == 1 { // single steps (the first decode after a prefill) until a run
		p, _ = run.ScheduleUntil(out.End, time.Hour)
		out, _ = run.CompleteUntil(p.End)
		fmt.Printf("%d step(s) of %v: %d drafts\n", out.Steps, p.StepTime, len(out.Drafts))
	}
	fmt.Printf("a run: %d speculative steps of %v\n", out.Steps, p.StepTime)
	for i, em := range out.Emitted {
		fmt.Printf("request %d: %d tokens, accepted a step %v\n", em.Ref, em.Tokens,
			counts.Accepted[i*counts.Stride:i*counts.Stride+out.Steps])
	}
	fmt.Println("steps by tokens emitted (1 to 5):", counts.Total)
	// Output:
	// 1 step(s) of 45.28ms: 2 drafts
	// 19 step(s) of 45.28ms: 2 drafts
	// a run: 19 speculative steps of 45.28ms
	// request 0: 54 tokens, accepted a step [4 0 4 0 1 0 1 3 4 1 4 0 4 0 3 0 2 0 4]
	// request 1: 57 tokens, accepted a step [4 0 0 3 0 0 4 1 3 2 0 2 2 4 0 4 4 2 3]
	// steps by tokens emitted (1 to 5): [13 4 5 5 11]
}
