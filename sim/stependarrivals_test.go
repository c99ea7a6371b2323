package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// stepEndLog is an Observer that notes the instant each step of every
// replica ends (a move of Count steps ends Count of them).
type stepEndLog struct{ ends []time.Duration }

func (*stepEndLog) Observe(*Record) {}

func (l *stepEndLog) ObserveStep(s *Step) {
	for j := 1; j <= s.Count; j++ {
		l.ends = append(l.ends, s.Start+time.Duration(j)*s.Duration)
	}
}

// onStepEnds is reqs with k more requests of in input and out output
// tokens, each arriving at the instant a step of some replica ends:
// the first step end at least gap after the request placed before it
// (from the first of reqs' arrivals), in the run of cfg over the
// requests placed so far. A request added at a step end leaves every
// step before it as it was, so each lands on a step end of the run that
// has it.
func onStepEnds(t *testing.T, cfg Config, reqs list, k, in, out int, gap time.Duration) list {
	t.Helper()
	at := reqs[0].Arrival
	for range k {
		var log stepEndLog
		src := slices.Clone(reqs)
		_, err := Run(cfg, &src, &log)
		require.NoError(t, err)
		slices.Sort(log.ends)
		i, _ := slices.BinarySearch(log.ends, at+gap)
		if i == len(log.ends) {
			break
		}
		at = log.ends[i]
		// After any request of the same instant: a source's arrivals do
		// not go back in time.
		j, _ := slices.BinarySearchFunc(reqs, at+1, func(r workload.Request, t time.Duration) int {
			return int(r.Arrival - t)
		})
		reqs = slices.Insert(reqs, j, workload.Request{ID: uint64(1_000_000 + len(reqs)), Arrival: at, InputTokens: in, OutputTokens: out})
	}
	return reqs
}

// TestLeastLoadedAtStepEnds holds send's own LeastLoaded choice to the
// router asked through its interface (askedLeastLoaded, which reads
// View.Outstanding at the instant) where arrivals land exactly at step
// ends, the instant a replica's load falls: a fleet of 4 (its mixed
// moves' loads read through mixedrun.Least) and one of 20 (loads kept
// until their engine changes, leastKept), both runs fast, the same
// bytes. The random scenarios' arrivals never fall on a step end: a load
// read a nanosecond early passed every other test.
func TestLeastLoadedAtStepEnds(t *testing.T) {
	t.Parallel()
	for _, n := range []int{4, 20} {
		cfg := Config{Fleet: Fleet{Replicas: Copies(n, ReplicaConfig{}), Router: LeastLoaded{}}}
		g, err := workload.NewSynthetic(workload.Synthetic{Seed: uint64(n), Count: 10 * n,
			Arrival: workload.Arrival{Rate: 2 * float64(n)}, Lengths: workload.Fixed(400, 60)})
		require.NoError(t, err)
		var base list
		for {
			r, err := g.Next()
			if err != nil {
				break
			}
			base = append(base, r)
		}
		reqs := onStepEnds(t, cfg, base, 60, 200, 40, 37*time.Millisecond)
		require.Len(t, reqs, len(base)+60, "fleet of %d: every request added at a step end", n)
		_, r, err := runScenarioRunner(cfg, reqs)
		require.NoError(t, err)
		if n <= mixedFleetMax {
			require.NotNil(t, r.mixLeast, "fleet of %d: loads read through mixedrun.Least", n)
		} else {
			require.True(t, r.keptLoads, "fleet of %d: loads kept", n)
		}
		slow := cfg
		askLeastLoaded(&slow)
		sameScenario(t, nil, reqs, cfg, slow)
	}
}
