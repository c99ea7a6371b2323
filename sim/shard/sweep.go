package shard

import (
	"fmt"
	"slices"
	"sort"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
)

// The kinds of study a shard file holds (named as before the package
// left sim, so that the files read alike).
const (
	sweepKind      = "sim.Sweep"
	dialSweepKind  = "sim.DialSweep"
	experimentKind = "sim.Experiment"
)

// Run runs shard sh of the sweep: the runs it owns among those s.Run
// makes (every replication of every load, then the same under each
// variant of a declared ModelError), Workers at a time, each observed as
// s.Run observes it. Write the result with WriteFile; Merge builds the
// curve from every shard's. The grid must be explicit: an automatic one
// is refused with ErrAutomaticGrid.
func Run(s analysis.Sweep, sh ID) (*Result, error) {
	p, study, err := planSweep(s)
	if err != nil {
		return nil, err
	}
	res := newResult(sweepKind, study, sh, p.jobs)
	if err := runOwned(res, s.WithDefaults().Workers, p.run); err != nil {
		return nil, err
	}
	return res, nil
}

// Merge builds the sweep's curve from the results of every shard of it
// (ReadDir reads a directory of them) by the code that builds s.Run's from
// its runs: the same curve, byte for byte, however many shards. A shard
// missing or given twice, another study's (its configuration's
// fingerprint differs), another split's or another build's is an error
// (ErrSet) naming its file and index. Observe is not called: the shards
// observed their runs.
func Merge(s analysis.Sweep, shards []*Result) (*analysis.Curve, error) {
	p, study, err := planSweep(s)
	if err != nil {
		return nil, err
	}
	runs, err := mergeRuns(sweepKind, study, p.jobs, shards)
	if err != nil {
		return nil, err
	}
	s.RunLoads = (&plan{replay: runs}).segment
	return s.Run()
}

// planSweep validates the sweep, numbers its runs and fingerprints it.
func planSweep(s analysis.Sweep) (*plan, string, error) {
	if err := s.Validate(); err != nil {
		return nil, "", err
	}
	if len(s.Grid.Loads) == 0 {
		return nil, "", ErrAutomaticGrid
	}
	p := &plan{}
	s.RunLoads = p.segment
	if _, err := s.Run(); err != nil {
		return nil, "", err
	}
	return p, studyFingerprint(sweepKind, forFingerprint(s)), nil
}

// forFingerprint is the sweep as its runs see it: defaults filled in,
// its loads in the order it runs them, and Workers, Observe and RunLoads,
// which change no run, left out.
func forFingerprint(s analysis.Sweep) analysis.Sweep {
	s = s.WithDefaults()
	s.Workers, s.Observe, s.RunLoads = 0, nil, nil
	s.Grid.Loads = slices.Compact(slices.Sorted(slices.Values(s.Grid.Loads)))
	return s
}

// RunDial runs shard sh of the dial sweep: the runs it owns among those
// d.Run makes (value by value: its sweep, its model band, its probe), as
// Run does. The grid must be explicit (ErrAutomaticGrid).
func RunDial(d analysis.DialSweep, sh ID) (*Result, error) {
	p, study, err := planDial(d)
	if err != nil {
		return nil, err
	}
	res := newResult(dialSweepKind, study, sh, p.jobs)
	if err := runOwned(res, d.Sweep.WithDefaults().Workers, p.run); err != nil {
		return nil, err
	}
	return res, nil
}

// MergeDial builds the dial sweep's result from the results of every
// shard, as Merge does: the same bytes as d.Run's.
func MergeDial(d analysis.DialSweep, shards []*Result) (*analysis.DialResult, error) {
	p, study, err := planDial(d)
	if err != nil {
		return nil, err
	}
	runs, err := mergeRuns(dialSweepKind, study, p.jobs, shards)
	if err != nil {
		return nil, err
	}
	d.Sweep.RunLoads = (&plan{replay: runs}).segment
	return d.Run()
}

func planDial(d analysis.DialSweep) (*plan, string, error) {
	if err := d.Validate(); err != nil {
		return nil, "", err
	}
	if len(d.Sweep.Grid.Loads) == 0 {
		return nil, "", ErrAutomaticGrid
	}
	p := &plan{}
	d.Sweep.RunLoads = p.segment
	if _, err := d.Run(); err != nil {
		return nil, "", err
	}
	d.Sweep = forFingerprint(d.Sweep)
	return p, studyFingerprint(dialSweepKind, d), nil
}

// plan stands in for the runs of a sharded sweep or dial sweep, as its
// Sweep.RunLoads: the study's own Run hands it each segment (one
// configuration at its loads), so that a merge builds its result by the
// code that builds the unsharded one:
//   - planning (replay nil), it records the segments, numbering the runs
//     segment by segment, load by load, replication by replication, and
//     hands out zero summaries (an explicit grid's loads do not depend on
//     them);
//   - merging, it hands out the summaries the shards wrote.
type plan struct {
	segments []segment
	jobs     int       // runs numbered so far
	replay   []outcome // every run's outcome, by number; nil while planning
}

// segment is one set of runs a study hands its Sweep.RunLoads: a sweep's
// configuration at its loads, every replication; its runs are numbered
// from first.
type segment struct {
	sweep analysis.Sweep
	loads []float64
	first int
}

// segment numbers the runs of s at loads and returns their summaries,
// [load][replication].
func (p *plan) segment(s analysis.Sweep, loads []float64) ([][]sim.Summary, error) {
	seg := segment{sweep: s, loads: slices.Clone(loads), first: p.jobs}
	p.segments = append(p.segments, seg)
	p.jobs += len(loads) * s.Reps
	if p.replay != nil && p.jobs > len(p.replay) {
		return nil, fmt.Errorf("shard: merge: the study asks for %d runs or more, its plan had %d", p.jobs, len(p.replay))
	}
	sums := make([][]sim.Summary, len(loads))
	for i := range loads {
		sums[i] = make([]sim.Summary, s.Reps)
		if p.replay != nil {
			for r := range sums[i] {
				sums[i][r] = p.replay[seg.first+i*s.Reps+r].summary
			}
		}
	}
	return sums, nil
}

// run runs run j of the plan.
func (p *plan) run(j int) (outcome, error) {
	seg := p.segments[sort.Search(len(p.segments), func(i int) bool { return p.segments[i].first > j })-1]
	k := j - seg.first
	load, rep := seg.loads[k/seg.sweep.Reps], k%seg.sweep.Reps
	sum, err := seg.sweep.RunOne(load, rep)
	if err != nil {
		return outcome{}, fmt.Errorf("shard: sweep at %v requests/s: %w", load, err)
	}
	return outcome{summary: sum}, nil
}
