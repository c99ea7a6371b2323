package sim_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// showLoads is a router written outside package sim: it prints what each
// replica still owes (View.Outstanding, prompt tokens not yet in KV plus
// output tokens not yet emitted) and routes as LeastLoaded does
// (View.LeastOutstanding).
type showLoads struct{}

func (showLoads) Route(r *workload.Request, v *sim.View) int {
	owed := make([]int, v.Replicas())
	for i := range owed {
		owed[i] = v.Outstanding(i)
	}
	to := v.LeastOutstanding()
	fmt.Printf("request %d: outstanding %v, to replica %d\n", r.ID, owed, to)
	return to
}

// Route four requests arriving a millisecond apart to three replicas by
// their outstanding tokens. No step ends within the 3 ms (a prefill
// step takes at least 20 ms), so each replica owes exactly what it was
// sent: request 1 (1,000 prompt and 100 output tokens) to the first
// idle replica, 0; request 2 (500 + 100) to replica 1; request 3
// (200 + 100) to replica 2; request 4 to replica 2 again, which owes
// 300 against 600 and 1,100.
func ExampleView_LeastOutstanding() {
	var reqs []workload.Request
	for i, n := range [][2]int{{1000, 100}, {500, 100}, {200, 100}, {100, 10}} {
		reqs = append(reqs, workload.Request{ID: uint64(i + 1), Arrival: time.Duration(i) * time.Millisecond, InputTokens: n[0], OutputTokens: n[1]})
	}
	src, err := workload.NewSlice(reqs)
	if err != nil {
		panic(err)
	}
	cfg := sim.Config{Fleet: sim.Fleet{Replicas: sim.Copies(3, sim.ReplicaConfig{}), Router: showLoads{}}}
	if _, err := sim.Run(cfg, src, nil); err != nil {
		panic(err)
	}
	// Output:
	// request 1: outstanding [0 0 0], to replica 0
	// request 2: outstanding [1100 0 0], to replica 1
	// request 3: outstanding [1100 600 0], to replica 2
	// request 4: outstanding [1100 600 300], to replica 2
}
