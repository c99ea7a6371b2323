package shard

import (
	"github.com/servesim/servesim/sim/analysis"
)

// RunExperiment runs shard sh of the experiment: the (load, block) pairs
// it owns, numbered load by load, block by block, each running A and B on
// the block's seed, Workers at a time. Write the result with WriteFile;
// MergeExperiment computes the verdicts from every shard's.
func RunExperiment(x analysis.Experiment, sh ID) (*Result, error) {
	x, study, err := experimentStudy(x)
	if err != nil {
		return nil, err
	}
	res := newResult(experimentKind, study, sh, len(x.Loads)*x.Blocks)
	err = runOwned(res, x.Workers, func(j int) (outcome, error) {
		b, err := x.RunBlock(x.Loads[j/x.Blocks], j%x.Blocks)
		f := [10]float64{b.A, b.B, b.AttainA, b.AttainB}
		copy(f[4:7], b.LatencyA[:])
		copy(f[7:], b.LatencyB[:])
		return outcome{figures: f}, err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// MergeExperiment computes the experiment's result from the results of
// every shard, by the code that computes x.Run's: the same result, byte
// for byte. A shard missing or given twice, or another study's, is an
// error (ErrSet) naming its file and index.
func MergeExperiment(x analysis.Experiment, shards []*Result) (*analysis.ExperimentResult, error) {
	x, study, err := experimentStudy(x)
	if err != nil {
		return nil, err
	}
	runs, err := mergeRuns(experimentKind, study, len(x.Loads)*x.Blocks, shards)
	if err != nil {
		return nil, err
	}
	blocks := make([][]analysis.Block, len(x.Loads))
	for i := range blocks {
		blocks[i] = make([]analysis.Block, x.Blocks)
		for k := range blocks[i] {
			f := runs[i*x.Blocks+k].figures
			blocks[i][k] = analysis.Block{A: f[0], B: f[1], AttainA: f[2], AttainB: f[3]}
			copy(blocks[i][k].LatencyA[:], f[4:7])
			copy(blocks[i][k].LatencyB[:], f[7:])
		}
	}
	return x.ResultOf(blocks)
}

// experimentStudy validates the experiment, fills its defaults and
// fingerprints it (Workers, which changes no run, left out).
func experimentStudy(x analysis.Experiment) (analysis.Experiment, string, error) {
	if err := x.Validate(); err != nil {
		return x, "", err
	}
	if x.ModelError.Declared() {
		return x, "", analysis.ErrBandedElsewhere
	}
	x = x.WithDefaults()
	fp := x
	fp.Workers = 0
	return x, studyFingerprint(experimentKind, fp), nil
}
