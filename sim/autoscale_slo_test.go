package sim

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// SLOHeadroom's rule by hand, at 2 minutes, with 3 replicas serving
// under the default SLO (TTFT 600 ms): up to ceil(3 × p99/600 ms) when the
// p99 breaks it, at most 6; down by one when the p99 is below 420 ms
// (0.7 × 600 ms) and the attainment at least 0.99, over a whole lookback
// of an unchanged fleet with nothing warming; else the count as it is.
func TestSLOHeadroomRule(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	// n ends in the last minute, bad of them with the TTFT given (a miss
	// when over 600 ms), the rest at 100 ms.
	ends := func(n, bad int, ttft time.Duration) []Record {
		var out []Record
		for i := range n {
			d := 100 * ms
			if i < bad {
				d = ttft
			}
			out = append(out, end(90*s+time.Duration(i)*10*ms, d, StatusOK))
		}
		return out
	}
	ttft := SLOHeadroom{}
	att := SLOHeadroom{Bound: BoundAttainment}
	for _, c := range []struct {
		name    string
		p       SLOHeadroom
		w       int // warming
		changed time.Duration
		ends    []Record
		want    int
	}{
		{"nothing ended: hold", ttft, 0, 0, nil, 3},
		{"p99 900 ms: ceil(3 × 1.5)", ttft, 0, 0, ends(100, 2, 900*ms), 5},
		{"p99 1201 ms: 6.005 capped at 2 × 3", ttft, 0, 0, ends(100, 2, 1201*ms), 6},
		{"p99 610 ms: ceil(3.05)", ttft, 0, 0, ends(100, 2, 610*ms), 4},
		{"p99 900 ms, 3 warming: 5 is below the 6 asked for", ttft, 3, 0, ends(100, 2, 900*ms), 6},
		{"one miss in 100: p99 100 ms (the 99th), attainment 0.99: down", ttft, 0, 0, ends(100, 1, 900*ms), 2},
		{"p99 419 ms: headroom", ttft, 0, 0, ends(100, 2, 419*ms), 2},
		{"p99 420 ms: not below 0.7 × 600 ms", ttft, 0, 0, ends(100, 2, 420*ms), 3},
		{"headroom while warming: hold", ttft, 1, 0, ends(100, 2, 200*ms), 4},
		{"headroom, fleet changed 59 s ago: hold", ttft, 0, 61 * s, ends(100, 2, 200*ms), 3},
		{"headroom, fleet changed 60 s ago", ttft, 0, 60 * s, ends(100, 2, 200*ms), 2},
		{"attainment 0.9875 of 0.99: ceil(3 × 1.25)", att, 0, 0, ends(800, 10, 700*ms), 4},
		{"attainment 0.99: no miss beyond, p99 100 ms: down", att, 0, 0, ends(800, 8, 700*ms), 2},
		{"attainment 0.97: 3 × 3 capped at 6", att, 0, 0, ends(100, 3, 700*ms), 6},
		{"attainment 1 target, one miss: doubles", SLOHeadroom{Bound: BoundAttainment, Attainment: 1}, 0, 0, ends(1000, 1, 700*ms), 6},
		{"TTFT 1 s: p99 900 ms neither breaks it nor is below 700 ms: hold", SLOHeadroom{TTFT: s}, 0, 0, ends(100, 2, 900*ms), 3},
		{"TTFT 1.5 s: p99 900 ms below 1050 ms, but attainment 0.98 (600 ms SLO): hold", SLOHeadroom{TTFT: 1500 * ms}, 0, 0, ends(100, 2, 900*ms), 3},
		{"Down 0.5: p99 300 ms not below 300 ms: hold", SLOHeadroom{Down: 0.5}, 0, 0, ends(100, 2, 300*ms), 3},
		{"Lookback 29.985 s: the misses at 90 and 90.01 s are out: down", SLOHeadroom{Lookback: 29985 * ms}, 0, 0, ends(100, 2, 900*ms), 2},
		{"Lookback 29.995 s: the one at 90.01 s is in, the 99th of 99: up", SLOHeadroom{Lookback: 29995 * ms}, 0, 0, ends(100, 2, 900*ms), 5},
	} {
		v := viewOf(120*s, c.p.History(), 3, c.w, c.ends...)
		v.r.scale.changed = c.changed
		require.Equal(t, c.want, c.p.Desired(v), c.name)
	}
	// Before a whole lookback has passed, no leave.
	require.Equal(t, 3, ttft.Desired(viewOf(59*s, time.Minute, 3, 0, end(50*s, 100*ms, StatusOK))))
	require.Equal(t, 2, ttft.Desired(viewOf(60*s, time.Minute, 3, 0, end(50*s, 100*ms, StatusOK))))
	// Only rejections: no TTFT to hold under BoundTTFT, a miss under
	// BoundAttainment.
	rej := end(100*s, Never, StatusRejected)
	require.Equal(t, 3, ttft.Desired(viewOf(120*s, time.Minute, 3, 0, rej)))
	require.Equal(t, 6, att.Desired(viewOf(120*s, time.Minute, 3, 0, rej)))
}

// SLOHeadroom refuses what it cannot mean, naming the field, through the
// controller's Validate too.
func TestSLOHeadroomValidate(t *testing.T) {
	require.NoError(t, SLOHeadroom{}.Validate())
	require.Equal(t, time.Minute, SLOHeadroom{}.History())
	for _, c := range []struct {
		p    SLOHeadroom
		want string
	}{
		{SLOHeadroom{Bound: 2}, "SLOHeadroom.Bound must be BoundTTFT or BoundAttainment, got SLOBound(2)"},
		{SLOHeadroom{TTFT: -1}, "SLOHeadroom.TTFT"},
		{SLOHeadroom{Attainment: 1.5}, "SLOHeadroom.Attainment"},
		{SLOHeadroom{Attainment: math.NaN()}, "SLOHeadroom.Attainment"},
		{SLOHeadroom{Lookback: -time.Second}, "SLOHeadroom.Lookback"},
		{SLOHeadroom{Lookback: 25 * time.Hour}, "SLOHeadroom.Lookback"},
		{SLOHeadroom{Down: 1}, "SLOHeadroom.Down"},
		{SLOHeadroom{Down: -0.1}, "SLOHeadroom.Down"},
	} {
		require.ErrorContains(t, c.p.Validate(), c.want)
		err := Config{Fleet: Fleet{Replicas: Copies(1, ReplicaConfig{}), Autoscale: Autoscale{Policy: c.p, Max: 2}}}.Validate()
		require.ErrorContains(t, err, "Fleet.Autoscale.Policy: "+c.want)
		require.NotContains(t, err.Error(), "History()", "one error for one field")
	}
	err := Config{Fleet: Fleet{Replicas: Copies(1, ReplicaConfig{}), Autoscale: Autoscale{Policy: &recorder{keep: -time.Second}, Max: 2}}}.Validate()
	require.ErrorContains(t, err, "Fleet.Autoscale.Policy: History() must be in [0, MaxHistory (24h0m0s)], got -1s")
}

// stepRun runs Atlas replicas, 1,000 tokens in and 200 out, through a
// rate schedule under SLOHeadroom, from start replicas.
func stepRun(t *testing.T, start int, a Autoscale, steps ...workload.RateStep) Summary {
	t.Helper()
	var horizon time.Duration
	for _, s := range steps {
		horizon += s.Duration
	}
	cfg := Config{Window: Window{Horizon: horizon}, Fleet: Fleet{Replicas: Copies(start, ReplicaConfig{}), Autoscale: a}}
	src, err := workload.NewSynthetic(workload.Synthetic{Seed: 1, Arrival: workload.Arrival{Schedule: workload.Schedule{Steps: steps}}, Lengths: workload.Fixed(1000, 200)})
	require.NoError(t, err)
	sum, err := Run(cfg, src, nil)
	require.NoError(t, err)
	return sum
}

// A step from 1 to 6 requests/s breaks one Atlas replica's TTFT p99
// (decode-only capacity 32/45 ms / 200 ≈ 3.5 requests/s); SLOHeadroom,
// under HPA's behaviour and a 60 s cold start, adds replicas only once the
// misses show, at most doubling what serves each tick, past the 3 that
// serve 6 requests/s (ExampleSchedule), and the timeline's later samples
// recover: every request that ends in the last 10 minutes meets the SLO.
func TestSLOHeadroomRecoversFromAStep(t *testing.T) {
	sum := stepRun(t, 1, Autoscale{Policy: SLOHeadroom{}, Max: 8, Behavior: HPABehavior(), ColdStart: ColdStart{Load: time.Minute}},
		workload.RateStep{Duration: 10 * time.Minute, Rate: 1}, workload.RateStep{Duration: 20 * time.Minute, Rate: 6})
	tl := sum.Scale.Timeline
	first := -1
	peak := 0
	for i, s := range tl {
		if s.Desired > 1 && first < 0 {
			first = i
		}
		if i > 0 && s.Desired > tl[i-1].Desired {
			require.LessOrEqual(t, s.Desired, 2*s.Serving, "at most ×2 what serves, at %v", s.At)
		}
		peak = max(peak, s.Desired)
	}
	require.Positive(t, first)
	require.Greater(t, tl[first].At, 10*time.Minute, "no join before the step")
	require.Less(t, tl[first].Good, tl[first].Ended, "the first join follows misses already made")
	require.GreaterOrEqual(t, peak, 3)
	var ended, good, brokeEnded, brokeGood int
	for _, s := range tl {
		switch {
		case s.At > 20*time.Minute:
			ended, good = ended+s.Ended, good+s.Good
		case s.At > 10*time.Minute && s.At <= 12*time.Minute:
			brokeEnded, brokeGood = brokeEnded+s.Ended, brokeGood+s.Good
		}
	}
	require.Less(t, float64(brokeGood), 0.5*float64(brokeEnded), "the step broke the SLO for its first 2 minutes")
	require.Positive(t, ended)
	require.Equal(t, ended, good, "recovered")
}

// At a light constant load (0.5 requests/s, TTFT a prefill and a step
// away, far below 420 ms) four replicas come down to Min, one a lookback:
// the first leave at the 60 s tick (a whole lookback), the next 60 s after
// each, so one serves from 180 s, and it stays.
func TestSLOHeadroomSettlesAtMin(t *testing.T) {
	sum := stepRun(t, 4, Autoscale{Policy: SLOHeadroom{}, Max: 4}, workload.RateStep{Duration: 20 * time.Minute, Rate: 0.5})
	for _, s := range sum.Scale.Timeline {
		want := max(1, 4-int(s.At/time.Minute))
		require.Equal(t, want, s.Desired, "at %v", s.At)
		require.Equal(t, want, s.Serving, "at %v", s.At)
	}
	require.Equal(t, 3, sum.Scale.Leaves)
	require.Zero(t, sum.Scale.Joins)
	require.Equal(t, 1.0, sum.Attainment)
}
