package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// kvReplica is one replica's two signals, as WVA's tests write them
// (ReplicaMetrics{KvCacheUsage, QueueLength}).
type kvReplica struct {
	kv      float64
	waiting int
}

func analyzeKV(p KVSaturation, reps []kvReplica) saturationAnalysis {
	return p.withDefaults().analyze(len(reps), func(i int) (float64, int) { return reps[i].kv, reps[i].waiting })
}

// WVA's own cases, replayed on the analysis: the replicas of the cases
// of internal/saturation/analyzer_test.go (llm-d-workload-variant-autoscaler
// at b08b1c7) with its expected verdicts, and the means and the other
// verdict worked out by hand from docs/saturation-analyzer.md's formulas
// (defaults: KV threshold 0.80, queue 5, triggers 0.1 and 3).
func TestKVSaturationReplaysWVACases(t *testing.T) {
	cases := []struct {
		name                      string // upstream test and case
		reps                      []kvReplica
		nonSaturated              int
		avgSpareKV, avgSpareQueue float64
		up, down                  bool
	}{
		// TestAnalyzeModelSaturation_ScaleUp
		{"ScaleUp: low KV spare", []kvReplica{{0.75, 2}, {0.76, 2}}, 2, 0.045, 3, true, false},
		{"ScaleUp: low queue spare", []kvReplica{{0.50, 3}, {0.50, 3}}, 2, 0.30, 2, true, false},
		// Spare 0.30 and 4: no scale-up; on one replica the KV load
		// 0.5 × 2/1 = 1.0 leaves −0.2 < 0.1: no scale-down either.
		{"ScaleUp: healthy", []kvReplica{{0.50, 1}, {0.50, 1}}, 2, 0.30, 4, false, false},
		// TestAnalyzeModelSaturation_ScaleDownSafety: mean load 0.25 and 1
		// times 3/2 is 0.375 and 1.5, leaving 0.425 >= 0.1 and 3.5 >= 3.
		{"ScaleDownSafety: adequate headroom", []kvReplica{{0.20, 1}, {0.30, 1}, {0.25, 1}}, 3, 0.55, 4, false, true},
		{"ScaleDownSafety: insufficient headroom", []kvReplica{{0.70, 2}, {0.75, 2}}, 2, 0.075, 3, true, false},
		{"ScaleDownSafety: one non-saturated replica", []kvReplica{{0.50, 2}}, 1, 0.30, 3, false, false},
		// TestAnalyzeModelSaturation_MultiVariant, its two variants as one:
		// spare queue (3+2+4+3)/4 = 3 is not below 3; the KV load 0.675 ×
		// 4/3 = 0.9 is over the threshold.
		{"MultiVariant", []kvReplica{{0.70, 2}, {0.75, 3}, {0.60, 1}, {0.65, 2}}, 4, 0.125, 3, false, false},
		// TestAnalyzeModelSaturation_EmptyMetrics
		{"EmptyMetrics", nil, 0, 0, 0, false, false},
		// TestAnalyzeVariant_SaturatedReplicas: 0.85 >= 0.80, 6 >= 5.
		{"SaturatedReplicas", []kvReplica{{0.85, 2}, {0.50, 6}, {0.60, 2}}, 1, 0.20, 3, false, false},
		// TestAnalyzeModelSaturation_AllSaturated: both means 0, below
		// both triggers: scale up.
		{"AllSaturated", []kvReplica{{0.85, 2}, {0.50, 6}, {0.90, 7}}, 0, 0, 0, true, false},
		// docs/saturation-scaling-config.md, "Example scenario": 0.65 and
		// 0.72 leave 0.115 > 0.10, no scale-up. "If Replica B increases to
		// 75 %: average spare = 0.10 → scale-up triggered", says the text;
		// the code's test is strict (0.10 < 0.10 is false) and in float64
		// the mean is 0.10000000000000003: no scale-up.
		{"doc example", []kvReplica{{0.65, 0}, {0.72, 0}}, 2, 0.115, 5, false, false},
		{"doc example at 75 %", []kvReplica{{0.65, 0}, {0.75, 0}}, 2, 0.1, 5, false, false},
		// A saturated replica's backlog counts on neither side: 20
		// waiting on one, none on the two others, whose mean load 0 over
		// one fewer leaves all the spare: scale down.
		{"backlog ignored", []kvReplica{{0.10, 20}, {0.10, 0}, {0.10, 0}}, 2, 0.70, 5, false, true},
		// Scale-down edges. Queues 1, 1 and 2 spread over two are 2 each,
		// a spare of exactly 3: safe (>=). Two replicas at KV 0.30 and
		// 0.40, or 0.35 and 0.35, put 0.70 on one, a spare of exactly 0.1
		// in exact arithmetic; WVA's float64 (mean spare, load =
		// threshold − mean, times 2) leaves 0.09999999999999998 for the
		// first, not safe, and 0.10000000000000009 for the second, safe.
		{"queue edge", []kvReplica{{0.10, 1}, {0.10, 1}, {0.10, 2}}, 3, 0.70, 11.0 / 3, false, true},
		{"KV edge, 0.30 and 0.40", []kvReplica{{0.30, 0}, {0.40, 0}}, 2, 0.45, 5, false, false},
		{"KV edge, 0.35 and 0.35", []kvReplica{{0.35, 0}, {0.35, 0}}, 2, 0.45, 5, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := analyzeKV(KVSaturation{}, c.reps)
			require.Equal(t, len(c.reps), a.replicas)
			require.Equal(t, c.nonSaturated, a.nonSaturated)
			require.InDelta(t, c.avgSpareKV, a.avgSpareKV, 1e-12)
			require.InDelta(t, c.avgSpareQueue, a.avgSpareQueue, 1e-12)
			require.Equal(t, c.up, a.scaleUp, "scale up")
			require.Equal(t, c.down, a.scaleDownSafe, "scale down safe")
		})
	}
	// The doc's edge in float64, as WVA computes it.
	a := analyzeKV(KVSaturation{}, []kvReplica{{0.65, 0}, {0.75, 0}})
	require.Equal(t, 0.10000000000000003, a.avgSpareKV)
	// Its own thresholds: a trigger above the edge fires.
	require.True(t, analyzeKV(KVSaturation{KVSpareTrigger: 0.11}, []kvReplica{{0.65, 0}, {0.75, 0}}).scaleUp)
	// A lower saturation threshold takes a replica out of the mean.
	require.Equal(t, 1, analyzeKV(KVSaturation{KVThreshold: 0.7, KVSpareTrigger: 0.05}, []kvReplica{{0.65, 0}, {0.75, 0}}).nonSaturated)
}

// CalculateSaturationTargets' cases (internal/saturation/analyzer_test.go),
// for one variant: ready replicas ± 1, and no move in transition.
func TestKVSaturationTarget(t *testing.T) {
	up := saturationAnalysis{replicas: 2, scaleUp: true}
	down := saturationAnalysis{replicas: 2, scaleDownSafe: true}
	cases := []struct {
		name               string
		current, reporting int
		a                  saturationAnalysis
		want               int
	}{
		{"ScaleUpCheapest: readyReplicas + 1", 2, 2, up, 3},
		{"ScaleDownMostExpensive: readyReplicas − 1", 2, 2, down, 1},
		{"MetricsMismatchBlocksScaling: current kept", 3, 2, up, 3},
		{"transition blocks a scale-down too", 3, 2, down, 3},
		{"never below one replica (baseTarget <= 1)", 1, 1, saturationAnalysis{replicas: 1, scaleDownSafe: true}, 1},
		{"no action: the ready count", 3, 3, saturationAnalysis{replicas: 3}, 3},
		{"scale-up wins over a safe scale-down", 2, 2, saturationAnalysis{replicas: 2, scaleUp: true, scaleDownSafe: true}, 3},
	}
	for _, c := range cases {
		require.Equal(t, c.want, saturationTarget(c.current, c.reporting, c.a), c.name)
	}
}

func TestKVSaturationValidate(t *testing.T) {
	require.NoError(t, KVSaturation{}.Validate())
	require.NoError(t, KVSaturation{KVThreshold: 1, QueueThreshold: 1000, KVSpareTrigger: 1, QueueSpareTrigger: 1000}.Validate())
	for _, c := range []struct {
		p     KVSaturation
		field string
	}{
		{KVSaturation{KVThreshold: 1.5}, "KVSaturation.KVThreshold"},
		{KVSaturation{KVThreshold: -0.1}, "KVSaturation.KVThreshold"},
		{KVSaturation{QueueThreshold: -1}, "KVSaturation.QueueThreshold"},
		{KVSaturation{KVSpareTrigger: 1.5}, "KVSaturation.KVSpareTrigger"},
		{KVSaturation{QueueSpareTrigger: -1}, "KVSaturation.QueueSpareTrigger"},
		{KVSaturation{QueueSpareTrigger: 2e9}, "KVSaturation.QueueSpareTrigger"},
		{KVSaturation{KVThreshold: 0.5, KVSpareTrigger: 0.6}, "KVSaturation.KVSpareTrigger (0.6) must be <= KVThreshold (0.5)"},
		{KVSaturation{KVThreshold: 0.05}, "KVSaturation.KVSpareTrigger (0.1) must be <= KVThreshold (0.05)"},
	} {
		err := c.p.Validate()
		require.ErrorContains(t, err, c.field, "%+v", c.p)
	}
	// Through the fleet's validation.
	cfg := Config{Fleet: Fleet{Replicas: Copies(1, ReplicaConfig{}), Autoscale: Autoscale{Policy: KVSaturation{KVThreshold: 2}, Max: 2}}}
	_, err := Run(cfg, &list{}, nil)
	require.ErrorContains(t, err, "Fleet.Autoscale.Policy: KVSaturation.KVThreshold must be in [0, 1]")
}

// kvTick is what the policy saw and said at one tick.
type kvTick struct {
	at               time.Duration
	serving, warming int
	waiting          []int
	a                saturationAnalysis
	sampled, desired int
}

// recordKV is KVSaturation, with a log of every tick.
type recordKV struct {
	p   KVSaturation
	log *[]kvTick
}

func (r recordKV) Desired(v *ScaleView) int {
	got := r.p.Desired(v)
	k := kvTick{at: v.Now(), serving: v.Serving(), warming: v.Warming(), desired: got}
	var reps []kvReplica
	for i := range v.Serving() {
		l := v.Load(i)
		if l != (Load{}) {
			k.sampled++
		}
		k.waiting = append(k.waiting, l.Waiting)
		reps = append(reps, kvReplica{1 - float64(l.FreeBlocks)/float64(v.KVBlocks(i)), l.Waiting})
	}
	k.a = analyzeKV(r.p, reps)
	*r.log = append(*r.log, k)
	return got
}

// runKV runs Atlas replicas (one to start with, at most 8, behind a
// load-aware router as llm-d's endpoint picker is) under KVSaturation
// through a rate schedule of requests 1,000 tokens in and 200 out.
func runKV(t *testing.T, load workload.Schedule, cold, delay time.Duration) (Summary, []kvTick) {
	t.Helper()
	var log []kvTick
	var horizon time.Duration
	for _, s := range load.Steps {
		horizon += s.Duration
	}
	src, err := workload.NewSynthetic(workload.Synthetic{Seed: 1, Arrival: workload.Arrival{Schedule: load}, Lengths: workload.Fixed(1000, 200)})
	require.NoError(t, err)
	cfg := Config{Fleet: Fleet{Router: LeastLoaded{}, Replicas: Copies(1, ReplicaConfig{}),
		Autoscale: Autoscale{Policy: recordKV{log: &log}, Max: 8, ColdStart: ColdStart{Load: cold}, MetricDelay: delay}},
		Window: Window{Horizon: horizon}}
	sum, err := Run(cfg, src, nil)
	require.NoError(t, err)
	// A tick's sample each, and one at the run's end for what the last
	// tick missed (not a tick: the policy was not asked), dropped here.
	tl := sum.Scale.Timeline
	if len(tl) == len(log)+1 {
		require.Greater(t, tl[len(log)].At, log[len(log)-1].at)
		tl = tl[:len(log)]
	}
	require.Len(t, tl, len(log))
	sum.Scale.Timeline = tl
	for i, k := range log {
		require.Equal(t, k.at, sum.Scale.Timeline[i].At)
		// The zero Behavior: the controller set what the policy said.
		require.Equal(t, k.desired, sum.Scale.Timeline[i].Desired)
	}
	return sum, log
}

// Every tick follows the rule on what the policy saw: one replica more
// on a scale-up, one fewer on a safe scale-down, else the same; and no
// move in transition.
func requireKVRule(t *testing.T, log []kvTick) {
	t.Helper()
	for _, k := range log {
		current := k.serving + k.warming
		want := current
		switch {
		case k.warming > 0 || k.sampled < k.serving:
		case k.a.scaleUp:
			want = current + 1
		case k.a.scaleDownSafe && current > 1:
			want = current - 1
		}
		require.Equal(t, want, k.desired, "at %v: %+v", k.at, k)
	}
}

// A step from 1 to 8 requests/s (1,000 in, 200 out) and back. At 1
// request/s one Atlas replica holds about 1 × 11 s (200 steps of some
// 55 ms) ≈ 11 requests, under its batch of 32: nothing waits, and one
// replica has no other to lean on, so nothing moves for the first 5
// minutes. At 8/s the queue builds on the one replica and, with no cold
// start, the fleet grows by one a tick (15 s) while the non-saturated
// replicas' queues average more than 2 or every replica is saturated.
// Back at 1/s every queue empties, and the fleet shrinks by one a tick
// down to one, where the N−1 check needs two non-saturated replicas and
// stops.
func TestKVSaturationFollowsALoadStep(t *testing.T) {
	load := workload.Schedule{Steps: []workload.RateStep{{Duration: 5 * time.Minute, Rate: 1}, {Duration: 10 * time.Minute, Rate: 8}, {Duration: 15 * time.Minute, Rate: 1}}}
	sum, log := runKV(t, load, 0, 0)
	requireKVRule(t, log)
	tl := sum.Scale.Timeline
	for i, s := range tl {
		require.Zero(t, s.Warming, "no cold start: a join serves at once")
		if i > 0 {
			require.LessOrEqual(t, max(s.Desired-tl[i-1].Desired, tl[i-1].Desired-s.Desired), 1, "one replica a tick at most, at %v", s.At)
		}
		if s.At <= 5*time.Minute {
			require.Equal(t, 1, s.Desired, "light load, one replica: at %v", s.At)
			require.Zero(t, log[i].waiting[0])
		}
	}
	// The step up: the first tick after it sees a queue and adds one,
	// and each tick adds one while the triggers fire.
	i := tickAt(tl, 5*time.Minute+15*time.Second)
	require.True(t, log[i].a.scaleUp)
	require.Equal(t, 2, tl[i].Desired)
	for log[i].a.scaleUp {
		require.Equal(t, tl[i-1].Desired+1, tl[i].Desired, "at %v", tl[i].At)
		i++
	}
	require.Greater(t, tl[i-1].Desired, 2, "grew over more than one tick")
	// At 8/s, four replicas carry 2/s each: about 22 running, under the
	// batch of 32, with an empty queue, which WVA's rule reads as room
	// to spare (a full batch has no queue signal); so at times it drops
	// a replica during the peak, and grows again when queues return.
	peakLeaves := 0
	for k := range tl {
		if tl[k].At > 5*time.Minute && tl[k].At <= 15*time.Minute && k > 0 && tl[k].Desired < tl[k-1].Desired {
			peakLeaves++
			require.True(t, log[k].a.scaleDownSafe)
			require.GreaterOrEqual(t, log[k].a.nonSaturated, 2)
		}
	}
	require.Positive(t, peakLeaves)
	// The step down: back to one replica within a tick per replica, and
	// one from then on.
	j := tickAt(tl, 15*time.Minute+15*time.Second)
	from := tl[j-1].Desired
	for ; tl[j-1].Desired > 1; j++ {
		require.Equal(t, tl[j-1].Desired-1, tl[j].Desired, "at %v", tl[j].At)
		require.True(t, log[j].a.scaleDownSafe)
	}
	require.LessOrEqual(t, tl[j-1].At, 15*time.Minute+time.Duration(from-1)*15*time.Second, "one replica fewer a tick")
	for ; j < len(tl); j++ {
		require.Equal(t, 1, tl[j].Desired, "at %v", tl[j].At)
		require.Equal(t, 1, log[j].a.nonSaturated, "at %v", tl[j].At)
	}
	require.Equal(t, sum.Scale.Joins, sum.Scale.Leaves, "one replica at the start and at the end")
}

// A constant light load (1 request/s) on one replica never scales: its
// queue stays empty, and a scale-down needs two non-saturated replicas.
func TestKVSaturationConstantLightLoad(t *testing.T) {
	sum, log := runKV(t, workload.Schedule{Steps: []workload.RateStep{{Duration: 30 * time.Minute, Rate: 1}}}, 0, 0)
	requireKVRule(t, log)
	require.Zero(t, sum.Scale.Joins+sum.Scale.Leaves)
	require.Len(t, log, 120, "a tick every 15 s for 30 minutes")
	for _, k := range log {
		require.False(t, k.a.scaleUp, "at %v", k.at)
		require.Equal(t, 1, k.desired)
	}
	require.InDelta(t, 0.5, sum.Scale.ReplicaHours, 1e-12, "one replica for half an hour")
}

// With a 60 s cold start, a replica warms for four ticks, and WVA holds
// the model "in transition" meanwhile: no join (and no leave) while one
// warms, so the joins are at least 60 s apart and the Timeline never
// shows two warming at once.
func TestKVSaturationWaitsForWarming(t *testing.T) {
	load := workload.Schedule{Steps: []workload.RateStep{{Duration: 5 * time.Minute, Rate: 1}, {Duration: 10 * time.Minute, Rate: 8}, {Duration: 15 * time.Minute, Rate: 1}}}
	sum, log := runKV(t, load, 60*time.Second, 0)
	requireKVRule(t, log)
	tl := sum.Scale.Timeline
	var lastJoin time.Duration = -time.Hour
	joins := 0
	for i, s := range tl {
		require.LessOrEqual(t, s.Warming, 1, "at %v", s.At)
		if log[i].warming > 0 {
			require.Equal(t, log[i].serving+log[i].warming, s.Desired, "held while warming, at %v", s.At)
		}
		if i > 0 && s.Desired > tl[i-1].Desired {
			joins++
			require.Zero(t, log[i].warming, "a join at %v while one warmed", s.At)
			require.Equal(t, 1, s.Warming, "the join itself warms")
			require.GreaterOrEqual(t, s.At-lastJoin, 60*time.Second)
			lastJoin = s.At
		}
	}
	require.Equal(t, sum.Scale.Joins, joins)
	require.Greater(t, joins, 1)
	require.InDelta(t, float64(joins)*60/3600, sum.Scale.Warming, 1e-12, "each join warmed 60 s")
}

// A replica that began serving since the last sample has no metrics yet:
// WVA's metrics(n) != current holds the model until the next sample, so
// with loads refreshed every 60 s and no cold start, a join is followed
// by no other move until the samples cover it.
func TestKVSaturationWaitsForMetrics(t *testing.T) {
	load := workload.Schedule{Steps: []workload.RateStep{{Duration: 5 * time.Minute, Rate: 1}, {Duration: 10 * time.Minute, Rate: 8}, {Duration: 15 * time.Minute, Rate: 1}}}
	sum, log := runKV(t, load, 0, 60*time.Second)
	requireKVRule(t, log)
	held := 0
	for _, k := range log {
		if k.sampled < k.serving {
			held++
			require.Equal(t, k.serving, k.desired, "held without metrics at %v", k.at)
		}
	}
	require.Positive(t, held)
	require.Positive(t, sum.Scale.Joins)
}

// tickAt is the index of the tick at instant at.
func tickAt(tl []ScaleSample, at time.Duration) int {
	return slices.IndexFunc(tl, func(s ScaleSample) bool { return s.At == at })
}
