package sim

// RunShard runs shard sh of the experiment: the (load, block) pairs it
// owns, numbered load by load, block by block, each running A and B on the
// block's seed, Workers at a time. Write the result with WriteShardFile;
// Merge computes the verdicts from every shard's.
func (x Experiment) RunShard(sh Shard) (*ShardResult, error) {
	x, study, err := x.shardStudy()
	if err != nil {
		return nil, err
	}
	res := newShardResult(experimentKind, study, sh, len(x.Loads)*x.Blocks)
	err = runShard(res, x.Workers, func(j int) (shardRun, error) {
		var run shardRun
		f := &run.figures
		var err error
		f[0], f[1], f[2], f[3], err = x.runBlock(x.Loads[j/x.Blocks], j%x.Blocks)
		return run, err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Merge computes the experiment's result from the results of every
// shard, by the code that computes Run's: the same result, byte for byte.
// A shard missing or given twice, or another study's, is an error
// (ErrShardSet) naming its file and index.
func (x Experiment) Merge(shards []*ShardResult) (*Result, error) {
	x, study, err := x.shardStudy()
	if err != nil {
		return nil, err
	}
	runs, err := mergeRuns(experimentKind, study, len(x.Loads)*x.Blocks, shards)
	if err != nil {
		return nil, err
	}
	figures := make([][][]float64, 4) // metric of A, of B, attainment of A, of B: [load][block]
	for f := range figures {
		figures[f] = make([][]float64, len(x.Loads))
		for i := range x.Loads {
			figures[f][i] = make([]float64, x.Blocks)
			for k := range x.Blocks {
				figures[f][i][k] = runs[i*x.Blocks+k].figures[f]
			}
		}
	}
	return x.result(figures[0], figures[1], figures[2], figures[3]), nil
}

// shardStudy validates the experiment, fills its defaults and
// fingerprints it (Workers, which changes no run, left out).
func (x Experiment) shardStudy() (Experiment, string, error) {
	if err := x.Validate(); err != nil {
		return x, "", err
	}
	x = x.withDefaults()
	fp := x
	fp.Workers = 0
	return x, studyFingerprint(experimentKind, fp), nil
}
