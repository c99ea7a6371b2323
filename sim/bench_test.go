package sim

import (
	"runtime"
	"testing"

	"github.com/servesim/servesim/workload"
)

// BenchmarkRunAtlas runs the Atlas default (Poisson arrivals, 2,000 input /
// 200 output tokens, batch 32) near its knee and reports simulated requests
// per wall-clock second, per CPU-second of the process (user + system, GC
// included: the figure a busy machine does not distort), and heap
// allocations per simulated request, with exact per-token ITL accounting.
// Compare runs with benchstat.
func BenchmarkRunAtlas(b *testing.B) {
	const n = 20_000
	var done int
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime()
	for b.Loop() {
		sum, err := Run(Config{}, poisson(b, 1, 2.4, n, workload.Fixed(2000, 200)), nil)
		if err != nil {
			b.Fatal(err)
		}
		done += sum.Offered
	}
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(done)/b.Elapsed().Seconds(), "requests/s")
	if cpu > 0 {
		b.ReportMetric(float64(done)/cpu.Seconds(), "requests/cpu-s")
	}
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(done), "allocs/request")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/request")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkRunFleet runs 8 Atlas replicas behind round robin, each at the
// load BenchmarkRunAtlas puts on its one replica (8 × 2.4 req/s), and
// reports simulated requests per wall-clock second: a fleet should cost
// about what its replicas cost alone. Compare with BenchmarkRunAtlas:
//
//	go test ./sim -run '^$' -bench 'RunAtlas|RunFleet' -count 6 | benchstat -col /... -
func BenchmarkRunFleet(b *testing.B) {
	const replicas, n = 8, 8 * 20_000
	cfg := Config{Fleet: Fleet{Replicas: Copies(replicas, Replica{})}}
	var done int
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime()
	for b.Loop() {
		sum, err := Run(cfg, poisson(b, 1, replicas*2.4, n, workload.Fixed(2000, 200)), nil)
		if err != nil {
			b.Fatal(err)
		}
		done += sum.Offered
	}
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(done)/b.Elapsed().Seconds(), "requests/s")
	if cpu > 0 {
		b.ReportMetric(float64(done)/cpu.Seconds(), "requests/cpu-s")
	}
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(done), "allocs/request")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/request")
	b.ReportMetric(0, "ns/op")
}
