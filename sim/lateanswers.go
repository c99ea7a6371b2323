package sim

import (
	"github.com/servesim/servesim/internal/lateanswers"
	"github.com/servesim/servesim/workload"
)

// lateAnswers asks each replica's engine to cache a running answer's
// blocks of shared content at its request's release rather than as its
// decodes compute them (engine's prefix.go, lateCache: the decodes then
// publish nothing, the cohort lists them nowhere, and runs are not cut
// at their blocks), which changes nothing that happens only if no
// request looks those blocks up before that release. A conversation
// source promises it: the one request whose prompt holds an answer is
// its conversation's next turn, issued once the answer ended (closed
// loop), and none after a turn that failed. The runner asks where
// nothing else could see a block cached earlier: no KV events or cache
// view, tier, prefill pool, step observer, autoscaler or gateway, and no
// client deadline (whose abort of a decode in flight would leave its
// block to the engine's guess); nor Stepwise, every twin. The twin is
// every answer cached by its decodes (noLateAnswers), held to it by
// TestLateAnswersAreEager.
func (r *runner) lateAnswers() {
	c := &r.cfg
	if r.tw.noLateAnswers || c.Stepwise || r.steps != nil || r.gw != nil || r.tiers != nil || r.scale != nil ||
		r.pd != nil || r.cache != nil || r.perClass || c.Timeout > 0 {
		return
	}
	if _, ok := r.src.(*workload.ChatSource); !ok {
		return
	}
	for i := range r.reps {
		lateanswers.Allow(r.reps[i].eng, true)
	}
	r.late = true
}
