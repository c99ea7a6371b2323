package sim

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// runTwins runs src (made afresh for each run) under cfg fast and step
// by step (runChecked), holds the two to the same bytes, and returns what
// count reads of each run's runner.
func runTwins(t *testing.T, cfg Config, src func() workload.Source, count func(*runner) int) (fast, slow int) {
	t.Helper()
	text, r := runChecked(t, cfg, src())
	cfg.Stepwise = true
	stepText, step := runChecked(t, cfg, src())
	sameBytes(t, stepText, text)
	return count(r), count(step)
}

// runChecked runs src under cfg with the engines' invariants checked
// after every plan and step, and returns every record and the summary as
// text, and the runner.
func runChecked(t *testing.T, cfg Config, src workload.Source) ([]byte, *runner) {
	t.Helper()
	return runCheckedWith(t, cfg, src, twins{})
}

// runCheckedWith is runChecked with the slow twins tw on.
func runCheckedWith(t *testing.T, cfg Config, src workload.Source, tw twins) ([]byte, *runner) {
	t.Helper()
	var buf bytes.Buffer
	r, err := newRunnerWith(cfg, src, ObserverFunc(func(rec *Record) { fmt.Fprintf(&buf, "%+v\n", *rec) }), tw)
	require.NoError(t, err)
	r.checkEngines()
	require.NoError(t, r.loop())
	fmt.Fprintf(&buf, "%+v\n", r.summary())
	return buf.Bytes(), r
}

// A run of decode steps that goes on through a request's finish
// (engine.Runner.Continue, planned at the step end itself, before the other
// events at that instant) is the run step by step would plan once they
// are handled: fast and step by step give the same bytes when those
// events are closed-loop clients whose next request arrives at that very
// instant (no think time) and is sent to the same replica, conversations'
// next turns likewise, timeouts, a stop at the horizon, and routers that
// read the replicas' load, blocks and cache at that instant. Each fast run
// of clients did continue runs through finishes, so each case tests
// something; conversations' turns carry their answers' ids
// (HashesCoverOutput), and a turn with an answer block left to cache joins
// no decode cohort, so those runs are planned again at each finish (and
// at each block of answer a turn caches): they hold the plain runs to
// their stepwise twin.
func TestContinuedRunsAreStepwise(t *testing.T) {
	t.Parallel()
	lengths := workload.Independent{Input: workload.Uniform{Center: 600, RangeRatio: 0.9}, Output: workload.Uniform{Center: 120, RangeRatio: 0.9}}
	clients := func(n int, think time.Duration) func() workload.Source {
		return func() workload.Source {
			pool, err := workload.NewClients(workload.Clients{Seed: 3, Clients: n, Requests: 400, Lengths: lengths,
				Think: workload.Think{Mean: think}})
			require.NoError(t, err)
			return pool
		}
	}
	chats := func() workload.Source {
		src, err := workload.NewConversations(workload.Conversations{Seed: 4, Count: 60,
			Arrival: workload.Arrival{Rate: 2}, Turns: workload.Uniform{Center: 4, RangeRatio: 0.5},
			FirstInput: workload.Uniform{Center: 300, RangeRatio: 0.5}, UserInput: workload.Uniform{Center: 60, RangeRatio: 0.5},
			Output: workload.Uniform{Center: 100, RangeRatio: 0.9},
			Prefix: workload.PrefixReuse{Groups: 2, PrefixTokens: 256, Probability: 1, BlockTokens: 16}})
		require.NoError(t, err)
		return src
	}
	fleet := func(router Router, blocks int) Fleet {
		return Fleet{Replicas: Copies(3, ReplicaConfig{Engine: engine.Config{KVBlocks: blocks}}), Router: router}
	}
	cases := map[string]struct {
		cfg Config
		src func() workload.Source
	}{
		"clients, no think time":        {Config{}, clients(12, 0)},
		"clients, think, timeouts":      {Config{Timeout: 6 * time.Second}, clients(20, 90*time.Millisecond)},
		"clients, horizon":              {Config{Window: Window{Warmup: 5 * time.Second, Horizon: 40 * time.Second}}, clients(12, 0)},
		"clients, few blocks":           {Config{Engine: engine.Config{KVBlocks: 300}}, clients(16, 0)},
		"conversations, least loaded":   {Config{Fleet: fleet(LeastLoaded{}, 0)}, chats},
		"conversations, prefix routing": {Config{Fleet: fleet(PrefixAffinity{}, 400)}, chats},
		"clients, fleet, random":        {Config{Fleet: fleet(Random{}, 0)}, clients(24, 0)},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			continued, none := runTwins(t, c.cfg, c.src, func(r *runner) int { return r.continued })
			if !strings.HasPrefix(name, "conversations") {
				require.Positive(t, continued, "no run went on through a finish")
			}
			require.Zero(t, none, "the step-by-step twin plans every step after its instant")
		})
	}
}
