package sim

import "github.com/servesim/servesim/workload"

// RoundRobin sends the k-th arrival to replica k mod N: the default of
// most load balancers (nginx, Envoy, SGLang's router with
// --policy round_robin). Each replica of a Poisson stream then sees
// Erlang-N gaps, smoother than the Poisson stream Random leaves it.
type RoundRobin struct{}

// Route picks the next replica in turn.
func (RoundRobin) Route(_ *workload.Request, v *View) int { return v.Routed() % v.Replicas() }
