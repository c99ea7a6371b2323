package scenario_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim"
)

// A configuration written as data and read back.
func Example() {
	reg := scenario.Default()
	cfg := sim.Config{
		Engine: engine.Config{ChunkCap: 256, Policy: engine.Priority{}},
		Model:  costmodel.Frozen{DecodeStep: 40 * time.Millisecond},
		SLO:    sim.SLO{TTFT: 500 * time.Millisecond},
	}
	b, err := reg.Marshal(cfg)
	if err != nil {
		panic(err)
	}
	fmt.Print(string(b))
	var back sim.Config
	if err := reg.Unmarshal(b, &back); err != nil {
		panic(err)
	}
	fmt.Println(back.Model.StepTime(costmodel.Batch{Decode: make([]int, 32)}))
	// Output:
	// {
	//   "Engine": {
	//     "ChunkCap": 256,
	//     "Policy": {
	//       "kind": "priority"
	//     }
	//   },
	//   "Model": {
	//     "kind": "frozen",
	//     "DecodeStep": "40ms"
	//   },
	//   "SLO": {
	//     "TTFT": "500ms"
	//   }
	// }
	// 40ms
}
