package costmodel_test

import (
	"fmt"
	"os"
	"time"

	"github.com/servesim/servesim/costmodel"
)

// The collective of a tensor-parallel replica, measured: read
// nccl-tests' all_reduce_perf output for two GPUs (a table written for
// the tests, plausible for PCIe), price the all-reduces of a TP2 step
// from it, and compare a declared spec-sheet figure with the band it
// carries.
func ExampleReadAllReduce() {
	curve, err := costmodel.ReadAllReduce(os.DirFS("testdata/nccl"), "all_reduce_perf_2gpu_pcie.txt")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d × %s, %s %s, %d sizes\n", curve.Ranks, curve.GPU, curve.DType, curve.Op, len(curve.Points))
	for _, size := range []struct {
		name  string
		bytes float64
	}{{"8 KiB", 8 << 10}, {"768 KiB", 768 << 10}, {"1 MiB", 1 << 20}, {"256 MiB", 256 << 20}} {
		d, beyond := curve.Time(size.bytes)
		fmt.Printf("%7s: %8.2f µs%s\n", size.name, float64(d)/1e3, map[bool]string{true: " (beyond the table)"}[beyond])
	}

	p, err := costmodel.ReadProfile(os.DirFS("../examples/validate/testdata/rtxpro6000-llama-3.1-8b"), "profile", 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	p.Layers, p.TP = 32, 2 // the TP1 kernels, for the example's sake
	busy := costmodel.Batch{Decode: make([]int, 128)}
	for i := range busy.Decode {
		busy.Decode[i] = 1024
	}
	p.Collective = costmodel.Collective{Hidden: 4096, Measured: curve}
	measured, err := p.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	s := measured.Price(busy)
	fmt.Printf("128 decodes, measured:  %.2f ms, all-reduces %.2f ms\n", ms(s.Time), ms(s.Collective))

	p.Collective = costmodel.Collective{Bandwidth: 64e9, Latency: 10 * time.Microsecond, Hidden: 4096}
	declared, err := p.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	s = declared.Price(busy)
	fmt.Printf("128 decodes, declared:  %.2f ms, all-reduces %.2f ms\n", ms(s.Time), ms(s.Collective))
	for _, alt := range declared.CollectiveBand() {
		s = alt.Model.(*costmodel.ProfileModel).Price(busy)
		fmt.Printf("  band: %s: %.2f ms, all-reduces %.2f ms\n", alt.Name, ms(s.Time), ms(s.Collective))
	}
	// Output:
	// 2 × NVIDIA RTX PRO 6000 Blackwell Server Edition, bfloat16 sum, 25 sizes
	//   8 KiB:    21.30 µs
	// 768 KiB:    68.64 µs
	//   1 MiB:    82.21 µs
	// 256 MiB: 13483.96 µs (beyond the table)
	// 128 decodes, measured:  30.60 ms, all-reduces 5.26 ms
	// 128 decodes, declared:  27.03 ms, all-reduces 1.69 ms
	//   band: collective at 1/4 bandwidth, 2× latency (16 GB/s, 20µs): 30.81 ms, all-reduces 5.47 ms
}
