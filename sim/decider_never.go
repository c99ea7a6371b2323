package sim

import "github.com/servesim/servesim/workload"

// NeverRemote lets every decode replica prefill its own requests: the
// prefill pool stands idle and the fleet runs as its decode pool
// co-located would (byte for byte: TestNeverRemoteIsCoLocated).
type NeverRemote struct{}

// Remote reports false.
func (NeverRemote) Remote(*workload.Request, int, *View) bool { return false }
