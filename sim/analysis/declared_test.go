package analysis

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// tp2Profile is a one-kernel TP 2 profile whose all-reduces are priced
// from a declared figure (measured: nil) or from a measured curve.
func tp2Profile(t *testing.T, measured *costmodel.AllReduceCurve) *costmodel.ProfileModel {
	t.Helper()
	flat := []costmodel.KernelPoint{{X: 1, Us: 100}, {X: 8192, Us: 100}}
	p := costmodel.Profile{
		Dense:        map[string][]costmodel.KernelPoint{"mlp": flat},
		PerSequence:  map[string][]costmodel.KernelPoint{"lm_head": flat},
		Attention:    []costmodel.AttentionPoint{{Decodes: 1, DecodeContext: 16, Us: 50}, {PrefillChunk: 16, Us: 50}},
		LayerKernels: []string{"mlp"}, SequenceKernels: []string{"lm_head"},
		Layers: 2, TP: 2,
		Collective: costmodel.Collective{Bandwidth: 64e9, Latency: 10 * time.Microsecond, Hidden: 1000, Measured: measured},
	}
	m, err := p.Build()
	require.NoError(t, err)
	return m
}

// A sweep, an experiment and a sizing whose replicas price a TP 2
// collective from a declared figure are refused until the model band
// runs that figure's band (CollectiveBand), as issue 36 asks: a declared
// figure is never accepted silently. A measured curve needs no band.
func TestDeclaredCollectiveNeedsItsBand(t *testing.T) {
	m := tp2Profile(t, nil)
	band := m.CollectiveBand()
	require.Len(t, band, 1)
	cfg := sim.Config{Model: m, Window: sim.Window{Horizon: time.Minute}}
	src := Poisson(workload.Fixed(200, 20))
	sweep := Sweep{Config: cfg, Workload: src, Grid: Grid{Loads: []float64{1}}}
	err := sweep.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sim: ModelError.Shapes: the replicas' cost model prices its all-reduces from a declared figure")
	assert.Contains(t, err.Error(), band[0].Name)

	sweep.ModelError = ModelError{Shapes: band}
	assert.NoError(t, sweep.Validate())

	fleet := cfg
	fleet.Model = nil
	fleet.Fleet = sim.Fleet{Replicas: sim.Copies(2, sim.ReplicaConfig{Model: m}), Router: sim.RoundRobin{}}
	x := Experiment{A: fleet, B: fleet, Workload: src, Loads: []float64{1}}
	err = x.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Experiment.A: sim: ModelError.Shapes")
	x.ModelError = ModelError{Shapes: band}
	assert.NotContains(t, errText(x.Validate()), "ModelError.Shapes")

	sz := Sizing{Config: cfg, Workload: src, Load: 1}
	assert.Contains(t, errText(sz.Validate()), "Sizing.Config: sim: ModelError.Shapes")

	curve, err := costmodel.ReadAllReduce(os.DirFS("../../costmodel/testdata/nccl"), "all_reduce_perf_2gpu_pcie.txt")
	require.NoError(t, err)
	sweep = Sweep{Config: sim.Config{Model: tp2Profile(t, curve), Window: sim.Window{Horizon: time.Minute}}, Workload: src, Grid: Grid{Loads: []float64{1}}}
	assert.NoError(t, sweep.Validate(), "a measured collective needs no band")
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
