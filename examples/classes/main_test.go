package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/golden"
	"github.com/servesim/servesim/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// small are arguments that run in well under a second.
var small = []string{"-reps", "3", "-horizon", "5m", "-loads", "1.6,2.4", "-near", "2.2,2.4"}

// The report is pinned by a golden file; run `go test ./examples/classes
// -update` after a deliberate change and review the diff.
func TestRunGolden(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, small))
	golden.Check(t, filepath.Join("testdata", "small.golden"), out.Bytes())
}

// optionsOf parses args as the command does.
func optionsOf(t *testing.T, args ...string) options {
	t.Helper()
	o, err := parse(&bytes.Buffer{}, args)
	require.NoError(t, err)
	return o
}

// records runs cfg on the example's Poisson workload at rate, seed 1, and
// returns every record, measured or not.
func records(t *testing.T, cfg sim.Config, rate float64) (sim.Summary, []sim.Record) {
	t.Helper()
	src, err := sim.Poisson(lengths).Source(rate, 1)
	require.NoError(t, err)
	var recs []sim.Record
	sum, err := sim.Run(cfg, src, sim.ObserverFunc(func(r *sim.Record) { recs = append(recs, *r) }))
	require.NoError(t, err)
	return sum, recs
}

// With a cap of one request in flight the replica serves one request at a
// time: each 2,000-token prompt prefills alone in 20 + 0.035 × 2,000 =
// 90 ms, so every TTFT, counted from the send, is exactly 90 ms however
// long the request waited; each then decodes its 199 further tokens alone
// at 45 ms a step, so it ends 90 + 199 × 45 = 9,045 ms after its send, and
// the next is sent that instant: the throughput is 1 / E2E.
func TestCapOneServesOneAtATime(t *testing.T) {
	o := optionsOf(t, "-caps", "1", "-reps", "2")
	rows, err := capStudy(o)
	require.NoError(t, err)
	for _, c := range rows[1].obs {
		assert.Equal(t, 90*time.Millisecond, c.ttftMin)
		assert.Equal(t, 90*time.Millisecond, c.ttftMax)
	}

	sum, recs := records(t, capConfig(o, 1), o.rate)
	const e2e = 9045 * time.Millisecond
	var last time.Duration
	ends := 0
	for _, r := range recs {
		if r.Status != sim.StatusOK {
			continue
		}
		ends++
		assert.Equal(t, e2e, r.E2E(), "request %d", r.ID)
		assert.Equal(t, r.Arrival, max(r.Scheduled, last), "request %d is sent when it is due or when the one before ends", r.ID)
		last = r.Finish
	}
	assert.Greater(t, ends, 100)
	assert.InDelta(t, 1/e2e.Seconds(), sum.RequestThroughput, 1/o.window().Length().Seconds(), "one completion per E2E, within one")
}

// A cap equal to the engine's batch cap (32 sequences) only moves the
// queue: FCFS at the client then FCFS at the engine admits requests in the
// same order at the same instants, so every first token comes when it came
// uncapped, and only where TTFT is counted from changes.
func TestCapAtTheBatchMovesTheQueue(t *testing.T) {
	o := optionsOf(t)
	_, free := records(t, capConfig(o, 0), o.rate)
	_, capped := records(t, capConfig(o, 32), o.rate)
	first := map[uint64]time.Duration{}
	for _, r := range free {
		first[r.ID] = r.FirstToken
	}
	waited := 0
	for _, r := range capped {
		assert.Equal(t, first[r.ID], r.FirstToken, "request %d", r.ID)
		if r.Arrival > r.Scheduled {
			waited++
		}
	}
	assert.Positive(t, waited, "some requests waited client-side at 2.2 req/s")
}

// Each request is judged by its class's SLO: in every run the classes'
// offered and good requests add up to the run's own, and each class gets
// about half the load (a Poisson process thinned in equal shares).
func TestClassesAddUp(t *testing.T) {
	o := optionsOf(t, small...)
	s, err := classStudyOf(o)
	require.NoError(t, err)
	assert.True(t, classesAddUp(s.curves))
	for _, c := range s.curves {
		for _, p := range c.Points {
			var sum float64
			for _, cl := range p.Classes {
				sum += cl.Offered.Center
			}
			assert.InDelta(t, p.Offered.Center, sum, 1e-9)
			assert.InDelta(t, 0.5, p.Classes[0].Offered.Center/p.Offered.Center, 0.06, "at %v req/s", p.Load)
		}
	}
	// Priority serves the interactive class first: at 2.4 req/s, past
	// its FCFS knee, its attainment is higher and the batch class's TTFT
	// p99 longer.
	fcfs, prio := s.curves[0].Points[1], s.curves[1].Points[1]
	assert.Greater(t, prio.Classes[0].Attainment.Center, fcfs.Classes[0].Attainment.Center)
	assert.Greater(t, prio.Classes[1].TTFT.P99.Center, fcfs.Classes[1].TTFT.P99.Center)
}

// The cards say what ran: the cap from the configuration, the per-class
// table, the verdict on the Priority card.
func TestRunWritesCards(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, run(&out, append([]string{"-out", dir, "-caps", "16"}, small...)))
	for _, name := range []string{"cap-none", "cap-16", "classes-fcfs", "classes-priority"} {
		for _, ext := range []string{".md", ".json"} {
			assert.Contains(t, out.String(), "wrote "+filepath.Join(dir, name+ext)+"\n")
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return string(b)
	}
	assert.Contains(t, read("cap-16.md"), "| concurrency | capped at 16 requests in flight (as vllm bench serve --max-concurrency 16)")
	assert.Contains(t, read("cap-none.md"), "| concurrency | no cap: open loop")
	prio := read("classes-priority.md")
	assert.Contains(t, prio, "### Per class")
	assert.Contains(t, prio, "| interactive | TTFT ≤ 600 ms, every ITL ≤ 150 ms | -1 |")
	assert.Contains(t, prio, "| batch | TTFT ≤ 30000 ms, every ITL ≤ 150 ms | 0 |")
	assert.Contains(t, prio, "A/B verdict")
	assert.Contains(t, read("classes-fcfs.md"), "| cache state | cold: empty prefix cache")
}

func TestRunRefusesBadArguments(t *testing.T) {
	for args, want := range map[string]string{
		"-rate 0":     "-rate must be a positive finite rate",
		"-rate Inf":   "-rate must be a positive finite rate",
		"-caps 16,x":  `-caps: "x" is not a cap`,
		"-caps 0":     `-caps: "0" is not a cap`,
		"-loads 1,-2": `-loads: "-2" is not a positive rate`,
		"-loads ,":    "-loads must name at least one load",
		"-near NaN":   `-near: "NaN" is not a positive rate`,
		"-reps 1":     "-reps must be >= 2",
		"-horizon 0":  "-horizon must be > 0",
		"-workers -1": "-workers must be >= 0",
		"extra":       "unexpected arguments",
	} {
		var out bytes.Buffer
		assert.ErrorContains(t, run(&out, strings.Fields(args)), want, args)
		assert.Zero(t, out.Len(), "%s: refused before anything is printed", args)
	}
}

func TestRunHelpIsNotAnError(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-h"}))
	for _, flag := range []string{"-rate", "-caps", "-loads", "-near", "-reps", "-horizon", "-seed", "-workers", "-out"} {
		assert.Contains(t, out.String(), "  "+flag+" ")
	}
}
