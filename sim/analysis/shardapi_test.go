package analysis

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

func runLoadsSweep() Sweep {
	return Sweep{
		Config:     sim.Config{Window: sim.Window{Warmup: 15 * time.Second, Horizon: 90 * time.Second}},
		Workload:   Poisson(workload.Fixed(2000, 200)),
		Grid:       Grid{Loads: []float64{3, 1, 2}},
		Reps:       2,
		BaseSeed:   7,
		ModelError: ModelError{Scale: 0.1},
	}
}

// A sweep whose RunLoads runs each replication with RunOne is the sweep:
// the same curve, band included; RunLoads sees the nominal configuration
// then each variant's, defaults filled in and itself cleared.
func TestRunLoadsStandsInForTheRuns(t *testing.T) {
	s := runLoadsSweep()
	want, err := s.Run()
	require.NoError(t, err)
	var calls []string
	s.RunLoads = func(s Sweep, loads []float64) ([][]sim.Summary, error) {
		calls = append(calls, fmt.Sprintf("%v reps %d workers>0 %v hook nil %v", loads, s.Reps, s.Workers > 0, s.RunLoads == nil))
		runs := make([][]sim.Summary, len(loads))
		for i, l := range loads {
			for r := range s.Reps {
				sum, err := s.RunOne(l, r)
				if err != nil {
					return nil, err
				}
				runs[i] = append(runs[i], sum)
			}
		}
		return runs, nil
	}
	got, err := s.Run()
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("%+v", want.Points), fmt.Sprintf("%+v", got.Points))
	assert.Equal(t, want.Knee, got.Knee)
	require.NotNil(t, got.Band)
	assert.Equal(t, want.Band.Knee, got.Band.Knee)
	require.Len(t, calls, 3) // nominal, then the two variants of a ±10 % scale
	for _, c := range calls {
		assert.Equal(t, "[1 2 3] reps 2 workers>0 true hook nil true", c)
	}
}

// RunLoads returning the wrong number of runs, or failing, is an error
// naming it; nothing panics.
func TestRunLoadsOfTheWrongShape(t *testing.T) {
	s := runLoadsSweep()
	s.ModelError = ModelError{}
	s.RunLoads = func(s Sweep, loads []float64) ([][]sim.Summary, error) { return make([][]sim.Summary, 2), nil }
	_, err := s.Run()
	assert.EqualError(t, err, "sim: Sweep.RunLoads returned 2 lists of runs for 3 loads")
	s.RunLoads = func(s Sweep, loads []float64) ([][]sim.Summary, error) {
		return [][]sim.Summary{make([]sim.Summary, 2), make([]sim.Summary, 1), make([]sim.Summary, 2)}, nil
	}
	_, err = s.Run()
	assert.EqualError(t, err, "sim: Sweep.RunLoads returned 1 runs at load 2, not Reps (2)")
	s.RunLoads = func(Sweep, []float64) ([][]sim.Summary, error) { return nil, fmt.Errorf("no runs today") }
	_, err = s.Run()
	assert.EqualError(t, err, "no runs today")
}

// An experiment's result from its blocks run one by one is Run's; blocks
// of the wrong shape are refused by name.
func TestResultOfBlocksIsTheRun(t *testing.T) {
	x := Experiment{
		Hypothesis: Hypothesis{Claim: "a 256-token chunk cap raises goodput by 5 %", Metric: MetricGoodput, Threshold: 0.05},
		A:          runLoadsSweep().Config,
		B:          DialChunkCap.Set(runLoadsSweep().Config, 256),
		Workload:   Poisson(workload.Fixed(2000, 200)),
		Loads:      []float64{1, 2.5},
		Blocks:     3,
	}
	want, err := x.Run()
	require.NoError(t, err)
	blocks := make([][]Block, len(x.Loads))
	for i, l := range x.Loads {
		for k := range x.Blocks {
			b, err := x.RunBlock(l, k)
			require.NoError(t, err)
			blocks[i] = append(blocks[i], b)
		}
	}
	got, err := x.ResultOf(blocks)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("%+v", want), fmt.Sprintf("%+v", got))
	assert.Equal(t, 10, Experiment{}.WithDefaults().Blocks)

	_, err = x.ResultOf(blocks[:1])
	assert.EqualError(t, err, "sim: Experiment.ResultOf needs the blocks of every load: 2 loads, 1 lists of blocks")
	blocks[1] = blocks[1][:2]
	_, err = x.ResultOf(blocks)
	assert.EqualError(t, err, "sim: Experiment.ResultOf: load 2.5 has 2 blocks, not Blocks (3)")
}
