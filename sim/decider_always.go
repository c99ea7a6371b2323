package sim

import "github.com/servesim/servesim/workload"

// AlwaysRemote sends every request through the prefill pool, as vLLM's
// disaggregated-serving proxy does (examples/online_serving/
// disaggregated_serving: every request is prefilled on a prefill
// instance, then decoded on a decode instance).
type AlwaysRemote struct{}

// Remote reports true.
func (AlwaysRemote) Remote(*workload.Request, int, *View) bool { return true }
