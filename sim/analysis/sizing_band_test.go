package analysis

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// sameInterval asserts two intervals are the same figures, NaN equal to
// NaN.
func sameInterval(t *testing.T, want, got any, what string) {
	t.Helper()
	assert.Equal(t, fmt.Sprintf("%+v", want), fmt.Sprintf("%+v", got), what)
}

// A band of the nominal model alone (Alternatives: the same Frozen the
// template runs, nil) is the same runs on the same seeds: the variant's
// size, seed range, attainment at n and n − 1 and cost are the nominal
// ones exactly, and the size holds.
func TestSizingBandOfTheNominalModel(t *testing.T) {
	s := Sizing{
		Config:   sim.Config{Fleet: sim.Fleet{Router: sim.LeastLoaded{}}, Window: sim.Window{Warmup: 30 * time.Second, Horizon: 300 * time.Second}},
		Workload: Poisson(workload.Fixed(2000, 200)),
		Load:     5, Headroom: 0.2, Reps: 3, Price: 10,
		ModelError: ModelError{Alternatives: []costmodel.Model{costmodel.Frozen{}}},
	}
	res, err := s.Run()
	require.NoError(t, err)
	require.Len(t, res.Band, 1)
	v := res.Band[0]
	t.Logf("nominal %d (%v; below %v), %s %d (%v; below %v)", res.Replicas, res.Attainment, res.Below, v.Name, v.Replicas, v.Attainment, v.Below)
	assert.False(t, v.Unmet)
	assert.Equal(t, res.Replicas, v.Replicas)
	assert.Equal(t, 3, v.Reps)
	assert.Equal(t, [2]int{res.SeedLo, res.SeedHi}, [2]int{v.SeedLo, v.SeedHi})
	sameInterval(t, res.Attainment, v.Attainment, "attainment at n")
	sameInterval(t, res.Below, v.Below, "attainment at n − 1")
	sameInterval(t, res.CostPerMillion, v.CostPerMillion, "cost")
	assert.Equal(t, res.Runs, v.Runs)
	assert.True(t, res.BandHolds)
	assert.Equal(t, Range{Lo: float64(res.Replicas), Hi: float64(res.Replicas), LoModel: "nominal", HiModel: "nominal"}, res.Sizes)
	assert.Equal(t, fmt.Sprintf("holds under every model of the band (%s): %d replicas", v.Name, res.Replicas), res.BandVerdict())
}

// Step times ×1.1 never need fewer replicas than ×0.9 on the same seeds,
// and the nominal size lies between them. On the degenerate replica
// behind Random routing this holds run by run, not only on average: the
// router's draws and the requests are the seed's whatever the model, so
// each replica is a single FCFS server fed the same arrivals, and by
// Lindley's recursion (W' = max(0, W + S − A)) a longer service never
// shortens a wait. So every request's TTFT is no shorter under ×1.1 than
// under ×1 or ×0.9, every replication's attainment at every count no
// higher, and the sizes (of the mean, and of each seed) are ordered.
func TestSizingBandMonotone(t *testing.T) {
	for _, load := range []float64{5, 15} {
		t.Run(fmt.Sprint(load), func(t *testing.T) {
			s := quickSizing(load)
			s.Config.SLO.TTFT = time.Second
			s.ModelError = ModelError{Scale: 0.1}
			res, err := s.Run()
			require.NoError(t, err)
			require.Len(t, res.Band, 2)
			slow, fast := res.Band[0], res.Band[1]
			require.Equal(t, "step times ×1.1", slow.Name)
			require.Equal(t, "step times ×0.9", fast.Name)
			t.Logf("×0.9 %d [%d, %d], ×1 %d [%d, %d], ×1.1 %d [%d, %d]; %s",
				fast.Replicas, fast.SeedLo, fast.SeedHi, res.Replicas, res.SeedLo, res.SeedHi, slow.Replicas, slow.SeedLo, slow.SeedHi, res.BandVerdict())
			assert.GreaterOrEqual(t, slow.Replicas, res.Replicas)
			assert.GreaterOrEqual(t, res.Replicas, fast.Replicas)
			assert.GreaterOrEqual(t, slow.SeedLo, res.SeedLo)
			assert.GreaterOrEqual(t, slow.SeedHi, res.SeedHi)
			assert.GreaterOrEqual(t, res.SeedLo, fast.SeedLo)
			assert.GreaterOrEqual(t, res.SeedHi, fast.SeedHi)
			assert.Equal(t, float64(fast.Replicas), res.Sizes.Lo)
			assert.Equal(t, float64(slow.Replicas), res.Sizes.Hi)
			if slow.Replicas == fast.Replicas {
				assert.True(t, res.BandHolds)
			} else {
				assert.Contains(t, res.BandVerdict(), "rests on the model: under ")
			}
		})
	}
}

// Scaling the service time by f is scaling the load by f, seen in a clock
// f times slower. On the degenerate replica (batch 1, service priced per
// prompt token, no fixed cost) at load λ under step times ×1.25, every
// arrival instant, service and wait is 1.25 times that of the nominal
// model at load 1.25λ on the same seed (the arrivals are the same
// unit-rate gaps divided by the rate; Random routing draws the same
// replicas). So the sizing under ×1.25 at λ with TTFT bound b and window
// (W, H) is the nominal sizing at 1.25λ with bound b/1.25 and window
// (W/1.25, H/1.25): the same size, seed range and attainment, figure for
// figure. It holds to the nanosecond's rounding of the arrival instants
// (round(u/λ) against 1.25·round(u/1.25λ)), which moves an attainment only
// if a TTFT lies within a few nanoseconds of its bound: measured, every
// figure is identical (λ 8: 4 replicas, attainment 0.9828, 3 attain
// 0.9334; λ 20: 9 replicas, 0.9656, 8 attain 0.9486).
//
// With the bound b kept (the same SLO at 1.25λ under the nominal model)
// it is not an identity: the nominal fleet at 1.25λ is judged against b,
// the slowed one at λ against b in its slower clock, that is b/1.25 in
// the nominal one, a tighter bound. Each request's TTFT meets the looser
// bound whenever it meets the tighter, so every replication's attainment
// at every count is at least as high, and the nominal size at 1.25λ with
// bound b is at most the size under ×1.25 at λ (measured: 3 against 4 at
// λ 8, 8 against 9 at λ 20).
func TestSizingScaledStepIsScaledLoad(t *testing.T) {
	const f = 1.25
	window := sim.Window{Warmup: 50 * time.Second, Horizon: 250 * time.Second}
	for _, load := range []float64{8, 20} {
		t.Run(fmt.Sprint(load), func(t *testing.T) {
			slowed := Sizing{Config: mm1Config(window, 2*time.Second), Workload: mm1Workload, Load: load, Reps: 3, BaseSeed: 3,
				ModelError: ModelError{Scale: f - 1}}
			res, err := slowed.Run()
			require.NoError(t, err)
			v := res.Band[0]
			require.Equal(t, "step times ×1.25", v.Name)

			scaled := Sizing{Config: mm1Config(sim.Window{Warmup: 40 * time.Second, Horizon: 200 * time.Second}, 1600*time.Millisecond),
				Workload: mm1Workload, Load: f * load, Reps: 3, BaseSeed: 3}
			want, err := scaled.Run()
			require.NoError(t, err)
			t.Logf("×1.25 at %v: %d [%d, %d] attainment %v, below %v; nominal at %v, bound and window /1.25: %d [%d, %d] attainment %v, below %v",
				load, v.Replicas, v.SeedLo, v.SeedHi, v.Attainment, v.Below, f*load, want.Replicas, want.SeedLo, want.SeedHi, want.Attainment, want.Below)
			assert.Equal(t, want.Replicas, v.Replicas)
			assert.Equal(t, [2]int{want.SeedLo, want.SeedHi}, [2]int{v.SeedLo, v.SeedHi})
			sameInterval(t, want.Attainment, v.Attainment, "attainment at n")
			sameInterval(t, want.Below, v.Below, "attainment at n − 1")
			assert.Equal(t, want.Runs, v.Runs)

			same := Sizing{Config: mm1Config(window, 2*time.Second), Workload: mm1Workload, Load: f * load, Reps: 3, BaseSeed: 3}
			looser, err := same.Run()
			require.NoError(t, err)
			t.Logf("nominal at %v with the bound kept: %d [%d, %d]", f*load, looser.Replicas, looser.SeedLo, looser.SeedHi)
			assert.LessOrEqual(t, looser.Replicas, v.Replicas)
			assert.LessOrEqual(t, looser.SeedHi, v.SeedHi)
		})
	}
}

// A variant under which no fleet within MaxReplicas meets the target is
// recorded as unmet, not an error: its size is MaxReplicas + 1, its
// attainment at MaxReplicas is Below, the range's high end is MaxReplicas
// and lies above it, and the verdict says so.
func TestSizingBandUnmetVariant(t *testing.T) {
	s := quickSizing(10)
	// The nominal needs 4 here (TestSizingMonotoneInLoad's table); twice
	// the step time needs about twice as many.
	s.MaxReplicas = 5
	s.ModelError = ModelError{Alternatives: []costmodel.Model{costmodel.Scaled{Model: s.Config.Fleet.Replicas[0].Model, Factor: 2}}}
	res, err := s.Run()
	require.NoError(t, err)
	require.Len(t, res.Band, 1)
	v := res.Band[0]
	t.Logf("nominal %d; %s: %+v; %s", res.Replicas, v.Name, v, res.BandVerdict())
	assert.True(t, v.Unmet)
	assert.Equal(t, 6, v.Replicas)
	assert.True(t, math.IsNaN(v.Attainment.Center))
	assert.Less(t, v.Below.Center, 0.95)
	assert.True(t, math.IsNaN(v.CostPerMillion.Center))
	assert.False(t, res.BandHolds)
	assert.Equal(t, 5.0, res.Sizes.Hi)
	assert.True(t, res.Sizes.HiAbove)
	assert.Equal(t, v.Name, res.Sizes.HiModel)
	assert.Equal(t, "nominal", res.Sizes.LoModel)
	assert.Contains(t, res.BandVerdict(), "rests on the model: under "+v.Name+" no fleet of at most 5 replicas (MaxReplicas) meets the target")
	assert.Contains(t, res.BandVerdict(), fmt.Sprintf("the size spans [%d, > 5]", res.Replicas))
}

// The words name the variant farthest from the nominal size, the larger
// on a tie.
func TestSizingBandVerdictWords(t *testing.T) {
	r := SizingResult{Replicas: 7, Band: []SizingVariant{
		{Name: "step times ×1.1", Replicas: 8}, {Name: "step times ×0.9", Replicas: 6}, {Name: "atlas-roofline", Replicas: 9}, {Name: "atlas-linear", Replicas: 5},
	}, Sizes: Range{Lo: 5, Hi: 9, LoModel: "atlas-linear", HiModel: "atlas-roofline"}}
	assert.Equal(t, "rests on the model: under atlas-roofline it needs 9 (nominal 7); across the band (step times ×1.1, step times ×0.9, atlas-roofline, atlas-linear) the size spans [5, 9]", r.BandVerdict())
	assert.Equal(t, "", SizingResult{Replicas: 3}.BandVerdict())
}

// A declared band is checked with the sizing: a bad ModelError names its
// field, and the Atlas shapes are refused beside a template that runs
// another model than the one they were calibrated to.
func TestSizingBandValidate(t *testing.T) {
	s := Sizing{
		Config:   sim.Config{Window: sim.Window{Horizon: time.Minute}},
		Workload: Poisson(workload.Fixed(2000, 200)), Load: 1,
		ModelError: AtlasBand(0.1),
	}
	require.NoError(t, s.Validate())
	bad := s
	bad.ModelError.Scale = 1.5
	assert.ErrorContains(t, bad.Validate(), "ModelError.Scale")
	other := s
	other.Config.Model = costmodel.Frozen{DecodeStep: 30 * time.Millisecond}
	assert.ErrorContains(t, other.Validate(), "ModelError.Calibrated")
	one := s
	one.Config.Fleet.Replicas = []sim.ReplicaConfig{{Model: costmodel.AtlasRoofline()}}
	assert.ErrorContains(t, one.Validate(), "ModelError.Calibrated")
	one.ModelError.Calibrated = nil
	assert.NoError(t, one.Validate())
}
