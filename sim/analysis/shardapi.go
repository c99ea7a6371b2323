package analysis

import (
	"errors"
	"fmt"

	"github.com/servesim/servesim/sim"
)

// A study's runs are independent of each other: what this file exports
// lets a caller run them elsewhere and build the study's result from their
// outcomes by the code Run builds it with, the same bytes. Package
// sim/shard splits sweeps, dial sweeps and experiments across machines
// with it; a cache of runs or another scheduler of them could too.

// WithDefaults is the sweep as Run runs it: every zero field that has a
// default (Grid.Factor, Grid.MaxPoints, Grid.Bisect, Reps, Target,
// Confidence, Workers) set to it.
func (s Sweep) WithDefaults() Sweep { return s.withDefaults() }

// RunOne runs replication rep at load: the run Run makes there, on seed
// Seed(BaseSeed, rep) for both the workload and the run, observed by
// Observe when it is set.
func (s Sweep) RunOne(load float64, rep int) (sim.Summary, error) { return s.runOne(load, rep) }

// runElsewhere takes the summaries of every replication at loads from
// s.RunLoads, checking that it returned one list of s.Reps per load.
func (s Sweep) runElsewhere(loads []float64) ([][]sim.Summary, error) {
	hook := s.RunLoads
	s.RunLoads = nil
	sums, err := hook(s, loads)
	if err != nil {
		return nil, err
	}
	if len(sums) != len(loads) {
		return nil, fmt.Errorf("sim: Sweep.RunLoads returned %d lists of runs for %d loads", len(sums), len(loads))
	}
	for i, runs := range sums {
		if len(runs) != s.Reps {
			return nil, fmt.Errorf("sim: Sweep.RunLoads returned %d runs at load %v, not Reps (%d)", len(runs), loads[i], s.Reps)
		}
	}
	return sums, nil
}

// WithDefaults is the experiment as Run runs it: Blocks, Confidence,
// Workers and Target set to their defaults when zero.
func (x Experiment) WithDefaults() Experiment { return x.withDefaults() }

// Block is the outcome of one seeded block of an experiment at one load:
// the hypothesis's metric under A and under B, their attainment and, for
// MetricKnee, their latency readout (TTFT p50, TTFT p99 and ITL p99, ms;
// zero for the other metrics); all are NaN for a configuration under
// which no measured request reached an outcome (no evidence).
type Block struct {
	A, B               float64
	AttainA, AttainB   float64
	LatencyA, LatencyB [3]float64
}

// RunBlock runs block k at load: A then B on seed Seed(BaseSeed, k), as
// Run runs them.
func (x Experiment) RunBlock(load float64, k int) (Block, error) {
	return x.runBlock(load, k)
}

// ErrBandedElsewhere refuses an experiment with a declared model band
// where its runs are made elsewhere (ResultOf, package sim/shard): its
// blocks hold the nominal model's runs only, and a result without the
// band's verdicts would pass for one that holds under it.
var ErrBandedElsewhere = errors.New("sim: an experiment with a declared Experiment.ModelError runs its band in Run only: its blocks cannot be run or merged elsewhere (run it with Run, or leave ModelError out)")

// ResultOf computes the experiment's result from its blocks, as Run does
// from the runs: blocks[i][k] is block k at Loads[i], Blocks of them
// (defaults filled in) at every load. An experiment with a declared
// ModelError is refused (ErrBandedElsewhere).
func (x Experiment) ResultOf(blocks [][]Block) (*ExperimentResult, error) {
	if err := x.Validate(); err != nil {
		return nil, err
	}
	if x.ModelError.Declared() {
		return nil, ErrBandedElsewhere
	}
	x = x.withDefaults()
	if len(blocks) != len(x.Loads) {
		return nil, fmt.Errorf("sim: Experiment.ResultOf needs the blocks of every load: %d loads, %d lists of blocks", len(x.Loads), len(blocks))
	}
	for i, row := range blocks {
		if len(row) != x.Blocks {
			return nil, fmt.Errorf("sim: Experiment.ResultOf: load %v has %d blocks, not Blocks (%d)", x.Loads[i], len(row), x.Blocks)
		}
	}
	return x.result(blocks), nil
}
