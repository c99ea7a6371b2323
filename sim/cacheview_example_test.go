package sim_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// Route one prompt under the three cache views after the replica that
// served it evicted it. Replica 0 is kept busy by a long answer; A, whose
// 1,524-token prompt opens with a 1,024-token shared prefix, goes to the
// idle replica 1 (200 KV blocks); B, 3,184 tokens of its own, goes there
// next and evicts every block of the prefix; Z evens the loads; then D
// resends A's prompt. The exact view and the KV events (no lag) know the
// prefix is gone and send D to the least loaded replica (0, on the tie);
// SGLang's approximate tree still believes replica 1 holds it, sends D
// there, and D finds nothing cached. KV events 18 s late do the same at
// 20 s: A's blocks, stored at 1 s, are seen from 19 s, their removal at 5 s
// only from 23 s.
func ExampleCacheView() {
	ids := make([]uint64, 64) // 64 units of 16 tokens: the shared prefix
	for i := range ids {
		ids[i] = 1000 + uint64(i)
	}
	req := func(id uint64, at time.Duration, input, output int, prefix []uint64) workload.Request {
		r := workload.Request{ID: id, Arrival: at, InputTokens: input, OutputTokens: output, PrefixHashes: prefix}
		if prefix != nil {
			r.PrefixBlockTokens = 16
		}
		return r
	}
	reqs := []workload.Request{
		req(1, 0, 100, 2000, nil),              // Y: replica 0 busy for 90 s
		req(2, time.Second, 1524, 10, ids),     // A
		req(3, 5*time.Second, 3184, 10, nil),   // B: evicts A's prefix
		req(4, 19*time.Second, 100, 2000, nil), // Z
		req(5, 20*time.Second, 1524, 10, ids),  // D: A's prompt again
	}
	for _, c := range []struct {
		name string
		view sim.CacheView
	}{
		{"exact", sim.ExactView{}},
		{"KV events", sim.EventsView{}},
		{"KV events 18 s late", sim.EventsView{Lag: 18 * time.Second}},
		{"approximate tree", sim.ApproxView{}},
	} {
		src, err := workload.NewSlice(reqs)
		if err != nil {
			panic(err)
		}
		cfg := sim.Config{Fleet: sim.Fleet{
			Replicas: []sim.ReplicaConfig{{}, {Engine: engine.Config{KVBlocks: 200}}},
			Router:   sim.PrefixAffinity{View: c.view},
		}}
		var d sim.Record
		if _, err := sim.Run(cfg, src, sim.ObserverFunc(func(r *sim.Record) {
			if r.ID == 5 {
				d = *r
			}
		})); err != nil {
			panic(err)
		}
		fmt.Printf("%-20s D to replica %d, %d tokens cached\n", c.name+":", d.Replica, d.Cached)
	}
	// Output:
	// exact:               D to replica 0, 0 tokens cached
	// KV events:           D to replica 0, 0 tokens cached
	// KV events 18 s late: D to replica 1, 0 tokens cached
	// approximate tree:    D to replica 1, 0 tokens cached
}
