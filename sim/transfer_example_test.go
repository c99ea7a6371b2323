package sim_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
)

// A link of 50 GB/s with 20 µs of latency moves the KV of a 2,000-token
// Atlas prompt (80 KiB a token: 163.84 MB) in 20 µs + 3.2768 ms when it
// is idle. Four such transfers started together land 3.2768 ms apart
// under LinkFIFO, and all together at 20 µs + 13.1072 ms under LinkFair.
func ExampleLink() {
	l := sim.Link{Bandwidth: 50e9, Latency: 20 * time.Microsecond, Sharing: sim.LinkFair}
	fmt.Println(l)
	fmt.Println(l.Time(2000 * costmodel.AtlasKVBytesPerToken))
	fmt.Println(sim.Link{})
	fmt.Println(sim.Link{Bandwidth: -1}.Validate())
	// Output:
	// 50 GB/s, 20µs, fair
	// 3.2968ms
	// instant
	// sim: Link.Bandwidth must be >= 0 bytes per second (0 means unbounded), got -1
}
