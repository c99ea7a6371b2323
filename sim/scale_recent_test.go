package sim

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// end is a record that ended at finish, having arrived at 0 with a first
// token after ttft (Never: none) and the status st.
func end(finish, ttft time.Duration, st Status) Record {
	r := Record{Arrival: 0, Finish: finish, FirstToken: Never, LastToken: Never, Status: st}
	if ttft != Never {
		r.FirstToken, r.LastToken, r.Emitted = ttft, finish, 1
	}
	return r
}

// viewOf is a ScaleView at now over a ring that keeps keep and holds
// ends, with s replicas serving and w warming under the default SLO.
func viewOf(now, keep time.Duration, s, w int, ends ...Record) *ScaleView {
	r := &runner{now: now, recent: &recentEnds{keep: keep, buf: make([]recentEnd, minRecent)}}
	r.scale = &scaling{routable: make([]int32, s), warming: w, slo: SLO{}.WithDefaults()}
	for i := range ends {
		r.recent.note(&ends[i], r.scale.slo)
	}
	return &ScaleView{r: r}
}

// Recent counts what ended in (now − lookback, now]: an end exactly
// lookback ago is out, one a nanosecond later in; good is the SLO's
// judgement (a TTFT of 700 ms misses 600 ms, a rejection misses); the p99
// is the ⌈0.99·n⌉-th smallest TTFT of those that had one; a lookback
// beyond what is kept reads what is kept.
func TestRecentByHand(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	ends := []Record{
		end(1*s, 100*ms, StatusOK),
		end(2*s, 700*ms, StatusOK),
		end(2*s, Never, StatusRejected),
		end(5*s, 200*ms, StatusOK),
		end(10*s, 300*ms, StatusOK),
		end(12*s, 400*ms, StatusOK),
	}
	v := viewOf(12*s, 20*s, 1, 0, ends...)
	for _, c := range []struct {
		lookback           time.Duration
		ended, good, first int
		p99                time.Duration
	}{
		{10 * s, 3, 3, 3, 400 * ms},       // 5, 10, 12 s: ⌈2.97⌉ = 3rd of 3
		{10*s + 1, 5, 3, 4, 700 * ms},     // and both 2 s ends: the 4th of {200, 300, 400, 700}
		{11*s + 1, 6, 4, 5, 700 * ms},     // and 1 s: ⌈4.95⌉ = 5th of 5
		{time.Hour, 6, 4, 5, 700 * ms},    // beyond the 20 s kept: what is kept
		{1, 1, 1, 1, 400 * ms},            // (12 s − 1 ns, 12 s]: the end at now is in
		{2 * s, 1, 1, 1, 400 * ms},        // (10 s, 12 s]
		{2*s + 1, 2, 2, 2, 400 * ms},      // [10 s, 12 s]
		{0, 0, 0, 0, 0}, {-s, 0, 0, 0, 0}, // nothing
	} {
		got := v.Recent(c.lookback)
		require.Equal(t, c.ended, got.Ended, "lookback %v", c.lookback)
		require.Equal(t, c.good, got.Good, "lookback %v", c.lookback)
		require.Equal(t, c.first, got.FirstTokens, "lookback %v", c.lookback)
		require.Equal(t, c.p99, got.TTFTp99, "lookback %v", c.lookback)
		if c.ended == 0 {
			require.True(t, math.IsNaN(got.Attainment))
		} else {
			require.Equal(t, float64(c.good)/float64(c.ended), got.Attainment)
		}
	}
	// Kept 5 s, pruned at 12 s: only the ends at 10 and 12 s are left,
	// whatever the lookback.
	v = viewOf(12*s, 5*s, 1, 0, ends...)
	v.r.recent.prune(12 * s)
	require.Equal(t, 2, v.r.recent.n)
	require.Equal(t, 2, v.Recent(time.Hour).Ended)
	// Only rejections: ended, none good, no TTFT (p99 0).
	got := viewOf(3*s, 5*s, 1, 0, end(2*s, Never, StatusRejected)).Recent(5 * s)
	require.Equal(t, Recent{Ended: 1, Attainment: 0}, got)
	// Nearest rank, not interpolated: of 1..101 ms the p99 is the 100th
	// (⌈99.99⌉), 100 ms, where numpy's linear method gives 100 ms too but
	// of 1..200 ms the 198th (⌈198⌉), 198 ms, where it gives 199.01 ms.
	for _, n := range []int{101, 200} {
		var many []Record
		for i := range n {
			many = append(many, end(s, time.Duration(n-i)*ms, StatusOK)) // unsorted
		}
		got := viewOf(s, s, 1, 0, many...).Recent(s)
		want := map[int]time.Duration{101: 100 * ms, 200: 198 * ms}[n]
		require.Equal(t, want, got.TTFTp99, "n %d", n)
		require.Equal(t, n, got.Ended)
	}
}

// The ring grows only when what it holds within keep fills it, and then
// doubles: in steady state a note allocates nothing, nor does Recent.
func TestRecentRingDoesNotAllocate(t *testing.T) {
	e := &recentEnds{keep: time.Second, buf: make([]recentEnd, minRecent)}
	slo := SLO{}.WithDefaults()
	rec := end(0, 100*time.Millisecond, StatusOK)
	allocs := testing.AllocsPerRun(10_000, func() {
		rec.Finish += 20 * time.Millisecond // 50 a second: at most 50 kept
		e.note(&rec, slo)
		e.recent(rec.Finish, time.Second)
	})
	require.Zero(t, allocs)
	require.Len(t, e.buf, minRecent)
	// 100 more in one instant, 150 within keep: the ring doubles twice,
	// to 256, and holds them.
	for range 100 {
		e.note(&rec, slo)
	}
	require.Len(t, e.buf, 4*minRecent)
	require.Equal(t, 150, e.recent(rec.Finish, time.Second).Ended, "the 100 and the 50 of the last second")
}

// recorder is a policy that keeps what Recent showed at each tick over
// the last Interval, and holds the fleet.
type recorder struct {
	keep   time.Duration
	every  time.Duration
	ticks  []time.Duration
	recent []Recent
}

func (p *recorder) History() time.Duration { return p.keep }
func (p *recorder) Desired(v *ScaleView) int {
	p.ticks = append(p.ticks, v.Now())
	p.recent = append(p.recent, v.Recent(p.every))
	return v.Serving() + v.Warming()
}

// Recent over a tick's interval partitions the run's ends: summed over
// the ticks it counts every request that ended by the last tick, the
// warm-up's too (a controller does not know the window), and the good
// ones by the request's own SLO. The ring stays bounded by the ends of a
// History-long stretch however long the run, and a policy that declares
// no History keeps none.
func TestRecentCountsEveryEndAndStaysBounded(t *testing.T) {
	t.Parallel()
	var reqs list
	for i := range 2 * 1800 { // two a second for half an hour, on one replica
		reqs = append(reqs, workload.Request{ID: uint64(i), Arrival: time.Duration(i) * 500 * time.Millisecond, InputTokens: 300, OutputTokens: 60})
	}
	const keep = 45 * time.Second
	p := &recorder{keep: keep, every: DefaultScaleInterval}
	cfg := Config{Window: Window{Warmup: 5 * time.Minute}, SLO: SLO{TTFT: 80 * time.Millisecond},
		Fleet: Fleet{Replicas: []ReplicaConfig{{}}, Autoscale: Autoscale{Policy: p, Max: 1}}}
	run, r, err := runScenarioRunner(cfg, reqs)
	require.NoError(t, err)
	last := p.ticks[len(p.ticks)-1]
	ended, good, measured := 0, 0, 0
	var finishes []time.Duration
	for _, rec := range run.recs {
		finishes = append(finishes, rec.Finish)
		if rec.Finish <= last {
			ended++
			if cfg.SLO.WithDefaults().met(&rec) {
				good++
			}
			if rec.Measured {
				measured++
			}
		}
	}
	sumEnded, sumGood, sampled := 0, 0, 0
	for i, rc := range p.recent {
		sumEnded += rc.Ended
		sumGood += rc.Good
		sampled += run.sum.Scale.Timeline[i].Ended
	}
	require.Equal(t, ended, sumEnded, "every end by the last tick, once")
	require.Equal(t, good, sumGood)
	require.Positive(t, good)
	require.Less(t, good, ended, "an 80 ms TTFT bound misses some: the judgement is the SLO's")
	require.Equal(t, measured, sampled, "the timeline counts the measured ones")
	require.Less(t, measured, ended, "the warm-up's ends count in Recent, not in the timeline")
	// The most ends in any keep-long stretch (t − keep, t].
	slices.Sort(finishes)
	most := 0
	for i, j := 0, 0; j < len(finishes); j++ {
		for finishes[i] <= finishes[j]-keep {
			i++
		}
		most = max(most, j-i+1)
	}
	require.Greater(t, most, minRecent, "the ring had to grow")
	require.GreaterOrEqual(t, len(r.recent.buf), most, "it held every end of a stretch")
	require.Less(t, len(r.recent.buf), 2*most, "it grew only when full of ends within keep")
	require.Less(t, 10*len(r.recent.buf), len(run.recs), "a run's length does not move it")
	// A schedule declares no History: no ring.
	cfg.Fleet.Autoscale.Policy = Schedule{Steps: []ReplicaStep{{Duration: time.Hour, Replicas: 1}}}
	_, r, err = runScenarioRunner(cfg, reqs[:100])
	require.NoError(t, err)
	require.Nil(t, r.recent)
}
