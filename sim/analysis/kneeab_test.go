package analysis

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/stats"
)

// A goodput hypothesis tested only below A's knee, where goodput is the
// offered load, is warned of: B cannot improve on it. Tested past the
// knee, where A falls short of the load, it is not.
func TestWarnBoundedByLoad(t *testing.T) {
	x := abExperiment(sim.Config{Model: costmodel.Frozen{DecodeStep: 35 * time.Millisecond}})
	x.Loads = []float64{0.5, 1}
	res, err := x.Run()
	require.NoError(t, err)
	require.Len(t, res.TypedWarnings, 1, "%v", res.Warnings)
	w := res.TypedWarnings[0]
	assert.Equal(t, WarnBoundedByLoad, w.Kind)
	assert.Equal(t, []float64{0.5, 1}, w.Loads)
	assert.Equal(t, w.String(), res.Warnings[0])
	assert.Contains(t, res.Warnings[0], "MetricKnee")
	assert.Equal(t, "bounded by load", w.Kind.String())

	x.Loads = []float64{1, 2.4}
	res, err = x.Run()
	require.NoError(t, err)
	assert.Empty(t, res.Warnings, "at 2.4 req/s A is past its knee: B can improve there")
	assert.Empty(t, res.TypedWarnings)

	x.Loads = []float64{0.5, 1}
	x.Hypothesis.Metric = MetricTTFTP99
	res, err = x.Run()
	require.NoError(t, err)
	assert.Empty(t, res.Warnings, "latency is not bounded by the load")
}

func kneeExperiment(b sim.Config) Experiment {
	x := abExperiment(b)
	x.Hypothesis = Hypothesis{Claim: "B raises the knee by at least 5 %", Metric: MetricKnee, Threshold: 0.05}
	x.Loads = []float64{1.6, 2, 2.4, 2.8}
	x.Blocks = 4
	return x
}

// The latency readout of identical systems is exactly zero, with a
// zero-width interval: A and B see the same requests on the same seed.
func TestKneeLatencyAAIsZero(t *testing.T) {
	res, err := kneeExperiment(sim.Config{}).Run()
	require.NoError(t, err)
	assert.Equal(t, 0.0, res.KneeDiff.Center)
	for _, l := range res.Loads {
		require.Len(t, l.Latency, 3)
		for _, d := range l.Latency {
			assert.Equal(t, stats.Interval{Center: 0, Lo: 0, Hi: 0, Confidence: 0.95, N: 4}, d.Diff, "%s at %v", d.Metric, l.Load)
			assert.Equal(t, d.A, d.B)
		}
	}
	assert.Equal(t, []string{MetricTTFTP50.Name, MetricTTFTP99.Name, MetricITLP99.Name},
		[]string{res.Loads[0].Latency[0].Metric, res.Loads[0].Latency[1].Metric, res.Loads[0].Latency[2].Metric})
}

// A B strictly faster than A (every step 0.9x) has lower TTFT at every
// load, paired (the centre; a block's p99 can still move either way), and
// a higher knee.
func TestKneeLatencyFasterIsLower(t *testing.T) {
	res, err := kneeExperiment(sim.Config{Model: costmodel.Scaled{Model: costmodel.Frozen{}, Factor: 0.9}}).Run()
	require.NoError(t, err)
	for _, l := range res.Loads {
		for _, d := range l.Latency[:2] {
			assert.Less(t, d.Diff.Center, 0.0, "%s at %v: %v", d.Metric, l.Load, d.Diff)
			assert.InDelta(t, d.B.Center-d.A.Center, d.Diff.Center, 1e-9)
		}
	}
	assert.Greater(t, res.KneeDiff.Lo, 0.0, "%v", res.KneeDiff)
	assert.InDelta(t, res.KneeB.Center-res.KneeA.Center, res.KneeDiff.Center, 1e-12)
}

// §5 of issue 34: the paired knee difference has the centre of the
// difference of two independent sweeps' knees (the sweeps' replications
// run the blocks' seeds, so their curves are the blocks'), and an
// interval no wider than the unpaired one (Welch's), since common random
// numbers make A's and B's knees move together.
func TestPairedKneeAgainstIndependentSweeps(t *testing.T) {
	fast := costmodel.Frozen{DecodeStep: 40 * time.Millisecond}
	x := kneeExperiment(sim.Config{Model: fast})
	x.Blocks = 6
	res, err := x.Run()
	require.NoError(t, err)
	require.Zero(t, res.KneeUnpaired)

	knees := func(cfg sim.Config) []float64 {
		sw := Sweep{Config: cfg, Workload: x.Workload, Grid: Grid{Loads: x.Loads}, Reps: x.Blocks, BaseSeed: x.BaseSeed, Target: 0.95}
		c, err := sw.Run()
		require.NoError(t, err)
		out := make([]float64, x.Blocks)
		for r := range out {
			out[r], _ = c.repKneeBound(r)
		}
		return out
	}
	ka, kb := knees(x.A), knees(x.B)
	a, b := stats.MeanInterval(ka, 0.95), stats.MeanInterval(kb, 0.95)
	assert.InDelta(t, b.Center-a.Center, res.KneeDiff.Center, 1e-12, "same seeds, same curves: the same centre")
	assert.Equal(t, a.Center, res.KneeA.Center)
	assert.Equal(t, b.Center, res.KneeB.Center)

	// Welch's interval on the difference of the independent means.
	_, sa := stat.MeanStdDev(ka, nil)
	_, sb := stat.MeanStdDev(kb, nil)
	va, vb := sa*sa/float64(len(ka)), sb*sb/float64(len(kb))
	nu := (va + vb) * (va + vb) / (va*va/float64(len(ka)-1) + vb*vb/float64(len(kb)-1))
	unpaired := 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}.Quantile(0.975) * math.Sqrt(va+vb)
	paired := res.KneeDiff.Hi - res.KneeDiff.Lo
	t.Logf("paired Δknee %v (width %.4g), unpaired width %.4g req/s", res.KneeDiff, paired, unpaired)
	assert.LessOrEqual(t, paired, unpaired)
}
