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
		b, err := x.RunBlock(x.Loads[j/x.Blocks], j%x.Blocks)
		return shardRun{figures: [4]float64{b.A, b.B, b.AttainA, b.AttainB}}, err
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
	blocks := make([][]Block, len(x.Loads))
	for i := range blocks {
		blocks[i] = make([]Block, x.Blocks)
		for k := range blocks[i] {
			f := runs[i*x.Blocks+k].figures
			blocks[i][k] = Block{A: f[0], B: f[1], AttainA: f[2], AttainB: f[3]}
		}
	}
	return x.ResultOf(blocks)
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
