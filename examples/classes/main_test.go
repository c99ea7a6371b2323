package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/golden"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// small are arguments that run in well under a second.
var small = []string{"-reps", "3", "-horizon", "5m", "-loads", "1.6,2.2,2.4,2.8", "-near", "2.2,2.4"}

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
	src, err := analysis.Poisson(lengths).Source(rate, 1)
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
	fcfs, prio := s.curves[0].Points[2], s.curves[1].Points[2]
	require.Equal(t, 2.4, fcfs.Load)
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
	assert.Contains(t, read("cap-16.md"), "By Little's law a cap of 16 carries at most 16 / S = 1.5")
	assert.Contains(t, read("cap-16.md"), "Goodput counted from the instant each request was due")
	prio := read("classes-priority.md")
	assert.Contains(t, prio, "### Per class")
	assert.Contains(t, prio, "| interactive | TTFT ≤ 600 ms, every ITL ≤ 150 ms | -1 |")
	assert.Contains(t, prio, "| batch | TTFT ≤ 30000 ms, every ITL ≤ 150 ms | 0 |")
	assert.Contains(t, prio, "A/B verdict")
	assert.Contains(t, prio, "At the verdict loads, Priority ")
	assert.Contains(t, read("classes-fcfs.md"), "| cache state | cold: empty prefix cache")
}

func TestRunRefusesBadArguments(t *testing.T) {
	for args, want := range map[string]string{
		"-rate 0":           "-rate must be a positive finite rate",
		"-rate Inf":         "-rate must be a positive finite rate",
		"-caps 16,x":        `-caps: "x" is not a cap`,
		"-caps 0":           `-caps: "0" is not a cap`,
		"-loads 1,-2":       `-loads: "-2" is not a positive rate`,
		"-loads ,":          "-loads must name at least one load",
		"-near NaN":         `-near: "NaN" is not a positive rate`,
		"-reps 0":           "-reps must be 1 to 1000 replications (1: no intervals and no verdict), got 0",
		"-reps 1001":        "-reps must be 1 to 1000 replications (1: no intervals and no verdict), got 1001",
		"-horizon 0":        "-horizon must be > 0",
		"-workers -1":       "-workers must be >= 0",
		"extra":             "unexpected arguments",
		"-model-error -0.1": "-model-error must be a fraction in [0, 1) (0.1 is ±10 %; 0: none), got -0.1",
		"-model-error 1":    "-model-error must be a fraction in [0, 1) (0.1 is ±10 %; 0: none), got 1",
		"-model-error NaN":  "-model-error must be a fraction in [0, 1) (0.1 is ±10 %; 0: none), got NaN",
		"-shapes linear":    `-shapes: "linear" is not "atlas" or ""`,
		"-band-reps 1":      "-band-reps must be 0 (-reps) or >= 2: a verdict under a model needs an interval, got 1",
		"-band-reps -2":     "-band-reps must be 0 (-reps) or >= 2: a verdict under a model needs an interval, got -2",
	} {
		var out bytes.Buffer
		assert.ErrorContains(t, run(&out, strings.Fields(args)), want, args)
		assert.Zero(t, out.Len(), "%s: refused before anything is printed", args)
	}
}

// Issue 32: -near 99, a load not among -loads, ran 44 s and printed
// "+NaN % [+NaN, +NaN]". A verdict load must be one of the sweep's, and a
// load or cap given twice is refused too; each before any run.
func TestRunRefusesLoadsOutsideTheSweep(t *testing.T) {
	for args, want := range map[string]string{
		"-near 99":                     "-near: 99 req/s is not among -loads (1.6,2,2.2,2.4,2.8): the verdict is taken at loads of the sweep",
		"-loads 1.6,2.4 -near 2.2,2.4": "-near: 2.2 req/s is not among -loads (1.6,2.4): the verdict is taken at loads of the sweep",
		"-loads 2,2":                   "-loads: 2 req/s is given twice",
		"-near 2,2.0":                  "-near: 2 req/s is given twice",
		"-caps 16,16":                  "-caps: 16 is given twice",
	} {
		var out bytes.Buffer
		assert.EqualError(t, run(&out, strings.Fields(args)), want, args)
		assert.Zero(t, out.Len(), "%s: refused before anything is printed", args)
	}
}

// -out is made before the runs: a path that cannot be a directory fails
// at once, not after the whole study.
func TestRunRefusesAnOutputItCannotMake(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	var out bytes.Buffer
	err := run(&out, []string{"-out", filepath.Join(file, "cards")})
	assert.EqualError(t, err, "-out: mkdir "+file+": not a directory")
	assert.Zero(t, out.Len())
}

// Issue 32: one replication has no interval. -reps 1 runs and prints
// point estimates, each interval "[n/a]", and no verdict, saying why;
// the Priority card carries no verdict.
func TestRunWithOneReplication(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-reps", "1", "-horizon", "5m", "-loads", "1.6,2.4", "-near", "2.4", "-caps", "16", "-out", dir}))
	s := out.String()
	assert.Contains(t, s, "measured from 30s to 5m0s, 1 seed: one replication, so every interval is n/a (one replication) and no verdict is taken.\n")
	assert.Contains(t, s, "   verdict: n/a (one replication): a verdict needs an interval across paired seeds; run -reps 2 or more.\n")
	assert.Regexp(t, `\nnone +2\.\d\d +\d\.\d\d +\d\.\d\d  \d\.\d{3} \[n/a\] `, s)
	assert.Regexp(t, `\nFCFS +1\.60  interactive +\d\.\d\d +\d\.\d\d  \d\.\d{3} \[n/a\] `, s)
	assert.NotRegexp(t, `\[\d`, s, "no numeric interval anywhere")
	assert.NotContains(t, s, "NaN")
	md, err := os.ReadFile(filepath.Join(dir, "classes-priority.md"))
	require.NoError(t, err)
	assert.NotContains(t, string(md), "A/B verdict")
}

// A window too short to measure a request gives no verdict, and says so
// without a NaN.
func TestRunWithoutMeasuredRequestsHasNoVerdict(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-reps", "2", "-horizon", "1s", "-loads", "2", "-near", "2", "-caps", "16"}))
	s := out.String()
	assert.Contains(t, s, "   verdict: no measured requests over 2 req/s in 2 paired seeds: no block measured an interactive request under both policies; lengthen -horizon (1s).\n"+
		"      2.00 req/s: no measured requests\n")
	assert.NotContains(t, s, "NaN")
}

// A -horizon past the simulator's bound on a window (sim.MaxDuration) is
// refused before any run under the flag's name, with sim's reason.
func TestRunRefusesAHorizonPastSimsBound(t *testing.T) {
	h := sim.MaxDuration + time.Hour
	want := sim.Window{Warmup: h / 10, Horizon: h}.Validate()
	require.Error(t, want)
	var out bytes.Buffer
	assert.EqualError(t, run(&out, []string{"-horizon", h.String()}), "-horizon "+h.String()+": "+want.Error())
	assert.Zero(t, out.Len())
}

func TestRunHelpIsNotAnError(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-h"}))
	for _, flag := range []string{"-rate", "-caps", "-loads", "-near", "-reps", "-horizon", "-seed", "-workers", "-out", "-model-error", "-shapes", "-band-reps"} {
		assert.Contains(t, out.String(), "  "+flag+" ")
	}
}

// A cap of 16 at 2.2 req/s is saturated: the client queue never empties
// in the window, so each slot is given back and taken again at the same
// instant and the replica holds exactly 16 requests throughout
// (Summary.MeanInSystem). Little's law then ties the cap to the slot
// time: the R slots released in a window of W, each held S on average,
// sum to R·S = 16·W up to the partial holds at the window's two edges,
// at most one per slot and each shorter than the longest hold Smax, so
// |16 − throughput·S| ≤ 16·Smax/W. The sustainable rate printed, 16/S,
// is the throughput the run measured (the 1.53 req/s) within
// that tolerance, well below the 2.2 req/s offered.
func TestCapSustainableRateIsLittlesLaw(t *testing.T) {
	o := optionsOf(t, "-caps", "16", "-reps", "3")
	rows, err := capStudy(o)
	require.NoError(t, err)
	r := &rows[1]
	require.Equal(t, 16, r.cap)
	w := o.window().Length()
	for k := range r.obs {
		s, c := &r.point().Runs[k], &r.obs[k]
		require.Positive(t, s.ClientHeldAtStart, "seed %d: the client queue is not empty when the window opens", k)
		require.Positive(t, s.ClientHeldAtEnd, "seed %d: nor when it closes", k)
		assert.InDelta(t, 16, s.MeanInSystem, 1e-9, "seed %d: a saturated cap keeps 16 in flight", k)
		thr := float64(c.released) / w.Seconds()
		slot := c.slotTime()
		tol := 16 * c.holdMax.Seconds() / w.Seconds()
		assert.InDelta(t, 16, thr*slot, tol, "seed %d: N = throughput × slot time", k)
		assert.InDelta(t, r.sustainable(c), thr, tol/slot, "seed %d: N/S is the rate the cap carried", k)
		assert.InDelta(t, s.RequestThroughput, thr, 1e-9, "seed %d: every slot released in the window ended ok", k)
		assert.Less(t, r.sustainable(c), o.rate, "seed %d: the cap cannot carry the offered rate", k)
		// 200 tokens alone take 90 + 199 × 45 = 9,045 ms; each of the
		// other 15 requests' prefills (90 ms) lengthens a step it shares.
		assert.InDelta(t, 9.045+15*0.090, slot, 0.15, "seed %d: slot time", k)
	}
}

// Goodput from the due instant counts a request good only if its first
// token came within 600 ms of when it was due: since it was sent no
// earlier, every such request is good from the send too, so in every run
// goodput from due ≤ goodput from send. Uncapped, due is the send and the
// two are equal; at a cap of 32, the engine's batch cap, the client queue
// only moves the engine's (TestCapAtTheBatchMovesTheQueue), so from the
// due instant the run is the uncapped one. Past what a cap carries
// (N / S, Little's law), goodput from due cannot exceed it: a request
// good from due was sent within 600 ms of a due instant in the window,
// and a saturated cap sends one request per slot released, at most
// N / S a second, plus the N in flight at the start.
func TestGoodputFromDue(t *testing.T) {
	o := optionsOf(t, "-caps", "16,32", "-reps", "3", "-horizon", "5m")
	rows, err := capStudy(o)
	require.NoError(t, err)
	w := o.window().Length().Seconds()
	for _, r := range rows {
		for k := range r.obs {
			s, c := &r.point().Runs[k], &r.obs[k]
			due := goodputFromDue(s, c)
			assert.LessOrEqual(t, due, s.Goodput, "cap %d, seed %d", r.cap, k)
			assert.LessOrEqual(t, c.goodFromDue(s.SLO), s.Good, "cap %d, seed %d", r.cap, k)
			assert.InDelta(t, float64(c.goodFromDue(s.SLO))/float64(s.Offered), attainmentFromDue(s, c), 1e-12)
			switch r.cap {
			case 0:
				assert.Equal(t, s.Goodput, due, "seed %d: uncapped, due is the send", k)
			case 32:
				free := &rows[0]
				assert.Equal(t, goodputFromDue(&free.point().Runs[k], &free.obs[k]), due, "seed %d: cap 32 moves the queue", k)
			case 16:
				most := r.sustainable(c)
				require.Greater(t, s.Offered, int(most*w), "seed %d: offered exceeds what the cap carries", k)
				assert.LessOrEqual(t, due, most+16/w, "seed %d", k)
				assert.Greater(t, s.Goodput, most, "seed %d: from the send, goodput reads above what the cap carries", k)
			}
		}
	}
}

// Each class's change is paired: replication k of FCFS and of Priority
// ran on the same seed, so the change printed at a load is the mean over
// the seeds of (Priority − FCFS) of the class's attainment, which, every
// seed measuring both, is also the difference of the two means; over the
// verdict loads it is the mean of the per-load changes. The verdict,
// computed from the sweeps' runs, is the one Experiment.Run gives by
// running them again.
func TestClassChangesArePaired(t *testing.T) {
	o := optionsOf(t, small...)
	s, err := classStudyOf(o)
	require.NoError(t, err)
	fcfs, prio := s.curves[0], s.curves[1]
	require.Len(t, s.loads, len(o.loads))
	nearSum := make([]float64, 2)
	for i, l := range s.loads {
		require.Equal(t, fcfs.Points[i].Load, l.load)
		require.Len(t, l.classes, 2)
		for j, c := range l.classes {
			require.Equal(t, classes[j].Name, c.name)
			var sum float64
			for k := range o.reps {
				a, b := fcfs.Points[i].Runs[k].Classes[j].Attainment, prio.Points[i].Runs[k].Classes[j].Attainment
				require.False(t, math.IsNaN(a) || math.IsNaN(b))
				sum += b - a
			}
			assert.InDelta(t, sum/float64(o.reps), c.diff.Center, 1e-12, "%s at %v req/s", c.name, l.load)
			assert.Equal(t, o.reps, c.diff.N)
			assert.InDelta(t, c.b.Center-c.a.Center, c.diff.Center, 1e-12, "%s at %v req/s", c.name, l.load)
			assert.InDelta(t, fcfs.Points[i].Classes[j].Attainment.Center, c.a.Center, 1e-12)
			assert.InDelta(t, prio.Points[i].Classes[j].Attainment.Center, c.b.Center, 1e-12)
			if slices.Contains(o.near, l.load) {
				nearSum[j] += c.diff.Center
			}
		}
	}
	for j, c := range s.near {
		assert.InDelta(t, nearSum[j]/float64(len(o.near)), c.diff.Center, 1e-12, c.name)
	}
	want, err := experiment(o).Run()
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("%+v", *want), fmt.Sprintf("%+v", *s.verdict), "NaN fields print alike")
}

// Each class's change is printed with its sign, and the words follow the
// intervals: at 2.8 req/s, past both policies' knees, Priority keeps
// serving the interactive class and starves the batch one, so the
// interactive change is positive and the batch change negative, each
// clear of 0 over the default six seeds of 10 minutes, and the report
// says Priority helps one at the other's expense (the batch
// 0.854 → 0.352). At 2.4 req/s, the verdict load, Priority raises the
// interactive class's attainment and the batch class, whose 30 s TTFT
// bound holds under both, does not change.
func TestClassChangesSayTheirSign(t *testing.T) {
	o := optionsOf(t, "-loads", "2.4,2.8", "-near", "2.4")
	s, err := classStudyOf(o)
	require.NoError(t, err)
	var out bytes.Buffer
	writeClassChanges(&out, o, s)
	text := out.String()
	for _, l := range s.loads {
		for _, c := range l.classes {
			printed := change(c.diff)
			switch {
			case c.diff.Center > 0:
				assert.True(t, strings.HasPrefix(printed, "+"), printed)
			case c.diff.Center < 0:
				assert.True(t, strings.HasPrefix(printed, "-"), printed)
			}
			assert.Contains(t, text, printed)
		}
	}
	last := s.loads[len(s.loads)-1]
	require.Equal(t, 2.8, last.load)
	in, batch := last.classes[0], last.classes[1]
	assert.Positive(t, in.diff.Lo, "interactive gains at 2.8 req/s")
	assert.Negative(t, batch.diff.Hi, "batch loses at 2.8 req/s")
	assert.Contains(t, text, "   At 2.8 req/s, Priority raises interactive attainment by "+change(in.diff)+
		" but lowers batch attainment by "+change(batch.diff)+": it helps interactive at batch's expense.\n")
	assert.Equal(t, 0.0, s.near[1].diff.Center, "batch at the verdict loads")
	assert.Contains(t, text, "   At the verdict loads, Priority raises interactive attainment by "+change(s.near[0].diff)+
		" and lowers no class's; batch +0.000 [+0.000, +0.000]: no change beyond the interval.\n")
}

// trade's words follow each interval's side of 0, and never call a
// change whose interval holds 0 a gain or a loss.
func TestTradeWords(t *testing.T) {
	iv := func(c, lo, hi float64) stats.Interval { return stats.Interval{Center: c, Lo: lo, Hi: hi, N: 5} }
	up, down, flat := iv(0.2, 0.1, 0.3), iv(-0.4, -0.6, -0.2), iv(0.01, -0.02, 0.04)
	for _, c := range []struct {
		cs   []classPair
		want string
	}{
		{[]classPair{{name: "a", diff: up}, {name: "b", diff: down}},
			"P raises a attainment by +0.200 [+0.100, +0.300] but lowers b attainment by -0.400 [-0.600, -0.200]: it helps a at b's expense"},
		{[]classPair{{name: "a", diff: down}, {name: "b", diff: flat}},
			"P lowers a attainment by -0.400 [-0.600, -0.200] and raises no class's; b +0.010 [-0.020, +0.040]: no change beyond the interval"},
		{[]classPair{{name: "a", diff: flat}, {name: "b", diff: flat}},
			"P changes no class's attainment beyond its interval (a +0.010 [-0.020, +0.040], b +0.010 [-0.020, +0.040])"},
	} {
		assert.Equal(t, c.want, trade("P", c.cs))
	}
}
