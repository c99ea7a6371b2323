package sim

import (
	"fmt"
	"slices"
	"sort"
)

// The kinds of study a shard file holds.
const (
	sweepKind      = "sim.Sweep"
	dialSweepKind  = "sim.DialSweep"
	experimentKind = "sim.Experiment"
)

// RunShard runs shard sh of the sweep: the runs it owns among those Run
// makes (every replication of every load, then the same under each
// variant of a declared ModelError), Workers at a time, each observed as
// Run observes it. Write the result with WriteShardFile; Merge builds the
// curve from every shard's. The grid must be explicit: an automatic one
// is refused with ErrAutomaticGrid.
func (s Sweep) RunShard(sh Shard) (*ShardResult, error) {
	plan, study, err := s.planShards()
	if err != nil {
		return nil, err
	}
	res := newShardResult(sweepKind, study, sh, plan.jobs)
	if err := runShard(res, s.withDefaults().Workers, plan.run); err != nil {
		return nil, err
	}
	return res, nil
}

// Merge builds the curve from the results of every shard of the sweep
// (ReadShardDir reads a directory of them) by the code that builds Run's
// from its runs: the same curve, byte for byte, however many shards. A
// shard missing or given twice, another study's (its configuration's
// fingerprint differs), another split's or another build's is an error
// (ErrShardSet) naming its file and index. Observe is not called: the
// shards observed their runs.
func (s Sweep) Merge(shards []*ShardResult) (*Curve, error) {
	plan, study, err := s.planShards()
	if err != nil {
		return nil, err
	}
	runs, err := mergeRuns(sweepKind, study, plan.jobs, shards)
	if err != nil {
		return nil, err
	}
	s.RunLoads = (&shardRuns{replay: runs}).segment
	return s.Run()
}

// planShards validates the sweep, numbers its runs and fingerprints it.
func (s Sweep) planShards() (*shardRuns, string, error) {
	if err := s.Validate(); err != nil {
		return nil, "", err
	}
	if len(s.Grid.Loads) == 0 {
		return nil, "", ErrAutomaticGrid
	}
	plan := &shardRuns{}
	s.RunLoads = plan.segment
	if _, err := s.Run(); err != nil {
		return nil, "", err
	}
	return plan, studyFingerprint(sweepKind, s.forFingerprint()), nil
}

// forFingerprint is the sweep as its runs see it: defaults filled in,
// its loads in the order it runs them, and Workers and Observe, which
// change no run, left out.
func (s Sweep) forFingerprint() Sweep {
	s = s.withDefaults()
	s.Workers, s.Observe, s.RunLoads = 0, nil, nil
	s.Grid.Loads = slices.Compact(slices.Sorted(slices.Values(s.Grid.Loads)))
	return s
}

// RunShard runs shard sh of the dial sweep: the runs it owns among those
// Run makes (value by value: its sweep, its model band, its probe), as
// Sweep.RunShard does. The grid must be explicit (ErrAutomaticGrid).
func (d DialSweep) RunShard(sh Shard) (*ShardResult, error) {
	plan, study, err := d.planShards()
	if err != nil {
		return nil, err
	}
	res := newShardResult(dialSweepKind, study, sh, plan.jobs)
	if err := runShard(res, d.Sweep.withDefaults().Workers, plan.run); err != nil {
		return nil, err
	}
	return res, nil
}

// Merge builds the dial sweep's result from the results of every shard,
// as Sweep.Merge does: the same bytes as Run's.
func (d DialSweep) Merge(shards []*ShardResult) (*DialResult, error) {
	plan, study, err := d.planShards()
	if err != nil {
		return nil, err
	}
	runs, err := mergeRuns(dialSweepKind, study, plan.jobs, shards)
	if err != nil {
		return nil, err
	}
	d.Sweep.RunLoads = (&shardRuns{replay: runs}).segment
	return d.Run()
}

func (d DialSweep) planShards() (*shardRuns, string, error) {
	if err := d.Validate(); err != nil {
		return nil, "", err
	}
	if len(d.Sweep.Grid.Loads) == 0 {
		return nil, "", ErrAutomaticGrid
	}
	plan := &shardRuns{}
	d.Sweep.RunLoads = plan.segment
	if _, err := d.Run(); err != nil {
		return nil, "", err
	}
	d.Sweep = d.Sweep.forFingerprint()
	return plan, studyFingerprint(dialSweepKind, d), nil
}

// shardRuns stands in for the runs of a sharded sweep or dial sweep. The
// study's own Run goes through it (runLoads hands it each segment: one
// configuration at its loads), so that a merge builds its result by the
// code that builds the unsharded one:
//   - planning (replay nil), it records the segments, numbering the runs
//     segment by segment, load by load, replication by replication, and
//     hands out zero summaries (an explicit grid's loads do not depend on
//     them);
//   - merging, it hands out the summaries the shards wrote.
type shardRuns struct {
	segments []shardSegment
	jobs     int        // runs numbered so far
	replay   []shardRun // every run's outcome, by number; nil while planning
}

// shardSegment is one call of runLoads: a sweep's configuration at its
// loads, every replication; its runs are numbered from first.
type shardSegment struct {
	sweep Sweep
	loads []float64
	first int
}

// segment numbers the runs of s at loads and returns their summaries.
func (p *shardRuns) segment(s Sweep, loads []float64) ([][]Summary, error) {
	seg := shardSegment{sweep: s, loads: slices.Clone(loads), first: p.jobs}
	p.segments = append(p.segments, seg)
	p.jobs += len(loads) * s.Reps
	if p.replay != nil && p.jobs > len(p.replay) {
		return nil, fmt.Errorf("sim: merge: the study asks for %d runs or more, its plan had %d", p.jobs, len(p.replay))
	}
	sums := make([][]Summary, len(loads))
	for i := range loads {
		sums[i] = make([]Summary, s.Reps)
		if p.replay != nil {
			for r := range sums[i] {
				sums[i][r] = p.replay[seg.first+i*s.Reps+r].summary
			}
		}
	}
	return sums, nil
}

// run runs run j of the plan.
func (p *shardRuns) run(j int) (shardRun, error) {
	seg := p.segments[sort.Search(len(p.segments), func(i int) bool { return p.segments[i].first > j })-1]
	k := j - seg.first
	load, rep := seg.loads[k/seg.sweep.Reps], k%seg.sweep.Reps
	sum, err := seg.sweep.RunOne(load, rep)
	if err != nil {
		return shardRun{}, fmt.Errorf("sim: sweep at %v requests/s: %w", load, err)
	}
	return shardRun{summary: sum}, nil
}
