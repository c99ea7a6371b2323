package sim

import (
	"testing"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// FuzzRun turns bytes into a run — a configuration and a list of requests,
// nonsense lengths included — and checks what must always hold: no panic,
// every request that arrived ends exactly once, the summary's statuses add
// up to the measured requests, and offered = good + exclusive misses.
//
//	go test ./sim -run '^$' -fuzz FuzzRun -fuzztime 30s
func FuzzRun(f *testing.F) {
	f.Add([]byte{3, 10, 200, 5, 1, 9, 20, 3, 0, 0, 7, 255, 255, 4})
	f.Add([]byte{0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4 {
			return
		}
		cfg := Config{
			Engine:    engine.Config{MaxSeqs: 1 + int(data[0]%8), KVBlocks: 8 + int(data[1])*4, MaxWaiting: int(data[2] % 5)},
			Timeout:   time.Duration(data[2]) * 100 * time.Millisecond,
			ErrorRate: float64(data[3]%4) / 10,
			Window:    Window{Warmup: time.Duration(data[3]%3) * time.Second, Horizon: time.Duration(data[1]%4) * 20 * time.Second},
		}
		if cfg.Horizon != 0 && cfg.Horizon <= cfg.Warmup {
			cfg.Horizon = 0
		}
		var reqs list
		var at time.Duration
		for i, b := range data[4:] {
			at += time.Duration(b%16) * 100 * time.Millisecond
			reqs = append(reqs, workload.Request{ID: uint64(i), Arrival: at,
				InputTokens: int(b) - 8, OutputTokens: int(b%50) - 2, Failed: b == 13})
		}
		seen := map[uint64]int{}
		measured := 0
		sum, err := Run(cfg, &reqs, ObserverFunc(func(r *Record) {
			seen[r.ID]++
			if r.Measured {
				measured++
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("request %d ended %d times", id, n)
			}
		}
		total := 0
		for st := range numStatus {
			total += sum.Count(st)
		}
		if total != sum.Offered || sum.Offered != measured || sum.Offered != sum.Good+sum.Misses.Total() {
			t.Fatalf("statuses %d, offered %d, measured %d, good %d + misses %d", total, sum.Offered, measured, sum.Good, sum.Misses.Total())
		}
	})
}
