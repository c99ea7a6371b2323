package sim_test

import (
	"fmt"
	"os"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// A sweep run as three shards, each writing its shard file (on three
// machines, say, into a shared directory), merged into the curve the
// unsharded sweep gives.
func ExampleSweep_Merge() {
	s := sim.Sweep{
		Config:   sim.Config{Window: sim.Window{Warmup: 15 * time.Second, Horizon: 90 * time.Second}},
		Workload: sim.Poisson(workload.Fixed(2000, 200)),
		Grid:     sim.Grid{Loads: []float64{1, 2, 3}},
		Reps:     2,
	}
	dir, err := os.MkdirTemp("", "shards")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	for i := range 3 {
		res, err := s.RunShard(sim.Shard{Index: i, Count: 3})
		if err != nil {
			panic(err)
		}
		if _, err := sim.WriteShardFile(dir, res); err != nil {
			panic(err)
		}
		fmt.Printf("shard %d holds %d of %d runs\n", i, res.Owned(), res.Runs)
	}
	shards, err := sim.ReadShardDir(dir)
	if err != nil {
		panic(err)
	}
	merged, err := s.Merge(shards)
	if err != nil {
		panic(err)
	}
	whole, err := s.Run()
	if err != nil {
		panic(err)
	}
	fmt.Println("knee:", merged.Knee.Load)
	fmt.Println("the same curve:", fmt.Sprintf("%+v", merged.Points) == fmt.Sprintf("%+v", whole.Points) && merged.Knee == whole.Knee)
	// Output:
	// shard 0 holds 2 of 6 runs
	// shard 1 holds 2 of 6 runs
	// shard 2 holds 2 of 6 runs
	// knee: 2.026 [1.14, 2.157]
	// the same curve: true
}
