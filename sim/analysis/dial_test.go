package analysis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

func dialSweep(d Dial, values ...float64) DialSweep {
	return DialSweep{
		Sweep: Sweep{
			Config:   sim.Config{Window: sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}},
			Workload: Poisson(workload.Fixed(2000, 200)),
			Grid:     Grid{Loads: []float64{1.4, 1.6, 1.8, 2.0, 2.2, 2.4}}, Reps: 4,
		},
		Dial: d, Values: values, Probe: 1,
	}
}

// Issue 11: identical dial values give a knee difference of exactly 0,
// with an interval of width 0 (the same seeds, the same runs).
func TestDialSweepIdenticalValuesDifferByNothing(t *testing.T) {
	res, err := dialSweep(DialChunkCap, 512, 512).Run()
	require.NoError(t, err)
	d := res.KneeDiff[1]
	assert.Equal(t, 0.0, d.Center)
	assert.Equal(t, 0.0, d.Lo)
	assert.Equal(t, 0.0, d.Hi)
	assert.Equal(t, 4, d.N)
	require.Len(t, res.Probe, 2)
	assert.Equal(t, 1.0, res.Probe[0].Load)
}

// The chapter's dial: a 256-token chunk cap taxes every ITL less than a
// whole budget of prefill does (mixed steps of 73.96 ms, not 136.6 ms) at
// the price of more, shorter prefill steps: its knee moves, and the paired
// difference, replication by replication, carries less noise than the two
// knees' own intervals.
func TestDialSweepPairsTheKnees(t *testing.T) {
	res, err := dialSweep(DialChunkCap, 0, 256, 1024).Run()
	require.NoError(t, err)
	for i, v := range res.Values {
		t.Logf("chunk cap %v: knee %v, paired difference %v; probe ITL p99 %v, TTFT p99 %v", v, res.Curves[i].Knee.Load,
			res.KneeDiff[i], res.Probe[i].ITL.P99, res.Probe[i].TTFT.P99)
	}
	assert.Less(t, res.Probe[1].ITL.P99.Center, res.Probe[0].ITL.P99.Center, "a chunk cap lowers the ITL tax")
	for i := range res.Values {
		if i == res.Baseline || !res.Curves[i].Knee.Found {
			continue
		}
		d, own := res.KneeDiff[i], res.Curves[i].Knee.Load
		assert.Less(t, d.Hi-d.Lo, own.Hi-own.Lo, "the paired interval is narrower (value %v)", res.Values[i])
	}
}

// Issue 11: an Experiment metric "knee", so a claim can read "B's knee is
// at least 5 % above A's": a 35 ms decode step raises the knee well past
// that.
func TestExperimentComparesKnees(t *testing.T) {
	a := sim.Config{Window: sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}}
	b := a
	b.Model = costmodel.Frozen{DecodeStep: 35 * time.Millisecond}
	x := Experiment{
		Hypothesis: Hypothesis{Claim: "B's knee is at least 5 % above A's", Metric: MetricKnee, Threshold: 0.05},
		A:          a, B: b, Workload: Poisson(workload.Fixed(2000, 200)),
		Loads: []float64{1.6, 1.9, 2.2, 2.5, 2.8}, Blocks: 4,
	}
	res, err := x.Run()
	require.NoError(t, err)
	t.Logf("knee improvement %v: %v", res.Improvement, res.Verdict)
	assert.Equal(t, Improved, res.Verdict)
	assert.Equal(t, 4, res.Improvement.N)

	x.B = x.A
	res, err = x.Run()
	require.NoError(t, err)
	assert.Equal(t, NotImproved, res.Verdict)
	assert.Equal(t, 0.0, res.Improvement.Center)
}

// A B whose knee lies below every load tested (a 200 ms decode step misses
// the 150 ms ITL bound at any load) is not improved, not unmeasured: each
// block pairs through the bound the lowest load gives B's knee, which
// understates how much worse B is without changing the sign. A dial value
// whose knee lies below the loads pairs the same way.
func TestCensoredKneesStillPair(t *testing.T) {
	w := sim.Window{Warmup: 30 * time.Second, Horizon: 300 * time.Second}
	x := Experiment{
		Hypothesis: Hypothesis{Claim: "B's knee is 5 % above A's", Metric: MetricKnee, Threshold: 0.05},
		A:          sim.Config{Window: w},
		B:          sim.Config{Window: w, Model: costmodel.Frozen{DecodeStep: 200 * time.Millisecond}},
		Workload:   atlasWorkload,
		Loads:      []float64{0.5, 1, 1.5, 2, 2.5},
		Blocks:     4,
	}
	res, err := x.Run()
	require.NoError(t, err)
	assert.Equal(t, NotImproved, res.Verdict, "%+v", res)
	assert.Equal(t, 4, res.KneeBounds)
	assert.Zero(t, res.KneeUnpaired)
	assert.Less(t, res.Improvement.Hi, -0.6, "B's knee below 0.5 against A's near 2: at least 75 % lower, understated")
	assert.Contains(t, res.Regime, "4 blocks paired through a knee beyond the loads")

	d, err := DialSweep{
		Sweep:  Sweep{Config: sim.Config{Window: w}, Workload: atlasWorkload, Grid: Grid{Loads: []float64{0.5, 1, 1.5, 2, 2.5}}, Reps: 3},
		Dial:   DialDecodeStep,
		Values: []float64{45, 200},
	}.Run()
	require.NoError(t, err)
	assert.Equal(t, []int{0, 3}, d.KneeBounds)
	assert.Less(t, d.KneeDiff[1].Hi, -1.0)
}

// DialPrefillReplicas splits a fleet of n: P replicas prefill, n − P
// decode, P = 0 is co-located; every value runs n replicas, and a value
// that leaves no decode replica is refused by name. Swept, the dial's
// value 0 is the co-located fleet's sweep, to the bit, and a split of
// 4 Atlas replicas into 1P:3D decodes less (the chapter's workload is
// decode-bound: 3 decode replicas at 32 / (199 × 45 ms) = 3.57 req/s each
// carry less than 4 co-located).
func TestDialPrefillReplicasSplitsTheFleet(t *testing.T) {
	d := DialPrefillReplicas(4)
	base := sim.Config{Fleet: sim.Fleet{Prefill: sim.PrefillPool{Link: sim.Link{Bandwidth: 50e9}, Decider: sim.AlwaysRemote{}}}}
	co := d.Set(base, 0)
	assert.Len(t, co.Fleet.Replicas, 4)
	assert.False(t, co.Fleet.Prefill.On())
	one := d.Set(base, 1)
	assert.Len(t, one.Fleet.Replicas, 3)
	assert.Len(t, one.Fleet.Prefill.Replicas, 1)
	assert.Equal(t, 50e9, one.Fleet.Prefill.Link.Bandwidth)
	require.NoError(t, one.Validate())
	for _, v := range []float64{4, -1, 1.5} {
		err := d.Set(base, v).Validate()
		require.Error(t, err, "value %v", v)
		assert.Contains(t, err.Error(), "Fleet.Prefill.Replicas", "value %v", v)
	}

	sw := dialSweep(d, 0, 1)
	sw.Sweep.Config = base
	sw.Sweep.Grid = Grid{Loads: []float64{6, 8, 10, 12}}
	sw.Sweep.Reps = 2
	sw.Sweep.Config.Window = sim.Window{Warmup: 30 * time.Second, Horizon: 180 * time.Second}
	res, err := sw.Run()
	require.NoError(t, err)
	plain := sw.Sweep
	plain.Config = d.Set(sw.Sweep.Config, 0)
	want, err := plain.Run()
	require.NoError(t, err)
	assert.Equal(t, want.Knee, res.Curves[0].Knee, "value 0 is the co-located fleet")
	assert.Less(t, res.Curves[1].Knee.Load.Center, res.Curves[0].Knee.Load.Center, "1P:3D decodes less")
	assert.Less(t, res.KneeDiff[1].Hi, 0.0)
}
