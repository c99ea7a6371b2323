package analysis

import (
	"fmt"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/cputime"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// BenchmarkSweepWorkers runs one sweep of 20 loads × 5 replications (the
// Atlas default, Poisson 2,000 / 200, loads 0.2 to 4 req/s, 5-minute
// windows) on 1 and on 2 workers, and reports the process's CPU time per
// sweep beside the wall time: issue 15 asks that 2 workers take at most
// 1/1.8 of 1 worker's wall time. Compare with benchstat:
//
//	go test ./sim/analysis -run '^$' -bench SweepWorkers -count 6 | benchstat -col /workers -
//
// On a machine busy with other work, wall time measures the contention
// too: read the ratio beside the load average (uptime).
func BenchmarkSweepWorkers(b *testing.B) {
	s := Sweep{
		Config:   sim.Config{Window: sim.Window{Warmup: 30 * time.Second, Horizon: 5 * time.Minute}},
		Workload: Poisson(workload.Fixed(2000, 200)),
		Reps:     5,
	}
	for i := 1; i <= 20; i++ {
		s.Grid.Loads = append(s.Grid.Loads, 0.2*float64(i))
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			s.Workers = workers
			cpu0 := cputime.Used()
			for b.Loop() {
				if _, err := s.Run(); err != nil {
					b.Fatal(err)
				}
			}
			if cpu := cputime.Used() - cpu0; cpu > 0 {
				b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
			}
		})
	}
}
