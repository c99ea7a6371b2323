package sim

import "github.com/servesim/servesim/workload"

// LeastLoaded sends each arrival to the replica with the least outstanding
// work (prompt tokens not in KV plus output tokens not emitted), ties to
// the lowest index: the "least outstanding tokens" policy of LLM-aware
// gateways (e.g. the Gateway API inference extension's queue and KV
// scorers, in one number). With stale signals (Fleet.SignalDelay) every
// router reading the same old numbers sends a burst to the same replica
// until the next refresh: it herds.
type LeastLoaded struct{}

// Route picks the least loaded replica.
func (LeastLoaded) Route(_ *workload.Request, v *View) int {
	return v.LeastOutstanding()
}
