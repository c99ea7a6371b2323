package shard_test

import (
	"fmt"
	"os"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/shard"
	"github.com/servesim/servesim/workload"
)

// A sweep run as three shards, each writing its shard file (on three
// machines, say, into a shared directory), merged into the curve the
// unsharded sweep gives.
func Example() {
	s := analysis.Sweep{
		Config:   sim.Config{Window: sim.Window{Warmup: 15 * time.Second, Horizon: 90 * time.Second}},
		Workload: analysis.Poisson(workload.Fixed(2000, 200)),
		Grid:     analysis.Grid{Loads: []float64{1, 2, 3}},
		Reps:     2,
	}
	dir, err := os.MkdirTemp("", "shards")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	for i := range 3 {
		res, err := shard.Run(s, shard.ID{Index: i, Count: 3}) // on machine i
		if err != nil {
			panic(err)
		}
		if _, err := shard.WriteFile(dir, res); err != nil { // dir/shard-<i>-of-3.simshard
			panic(err)
		}
		fmt.Printf("%s holds %d of %d runs: %s\n", res.Shard, res.Owned(), res.Runs, shard.FileName(res.Shard))
	}
	shards, err := shard.ReadDir(dir) // once all three are there
	if err != nil {
		panic(err)
	}
	merged, err := shard.Merge(s, shards)
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
	// shard 0 of 3 holds 2 of 6 runs: shard-0-of-3.simshard
	// shard 1 of 3 holds 2 of 6 runs: shard-1-of-3.simshard
	// shard 2 of 3 holds 2 of 6 runs: shard-2-of-3.simshard
	// knee: 2.026 [1.14, 2.157]
	// the same curve: true
}
