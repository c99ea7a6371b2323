package main

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/shard"
)

// indexVar is where a Kubernetes Indexed Job gives each pod its index.
const indexVar = "JOB_COMPLETION_INDEX"

// runShard runs one shard of the study and writes its shard file.
func runShard(w io.Writer, s scenario.Scenario, _ *studyOptions, o *options) error {
	sh, err := shardOf(o)
	if err != nil {
		return err
	}
	if o.out == "" {
		return fmt.Errorf("-out: the directory to write the shard file to is not set")
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	setWorkers(&s, o.workers)
	var res *shard.Result
	switch {
	case s.DialSweep != nil:
		res, err = shard.RunDial(*s.DialSweep, sh)
	case s.Experiment != nil:
		res, err = shard.RunExperiment(*s.Experiment, sh)
	default:
		res, err = shard.Run(*s.Sweep, sh)
	}
	if err != nil {
		return err
	}
	path, err := shard.WriteFile(o.out, res)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d of the study's %d runs, written to %s\n", sh, res.Owned(), res.Runs, path)
	return nil
}

// shardOf is the shard the flags name, its index from -shard or else the
// Indexed Job's environment variable.
func shardOf(o *options) (shard.ID, error) {
	if o.shards < 1 {
		return shard.ID{}, fmt.Errorf("-shards: the number of shards must be >= 1, got %d", o.shards)
	}
	i := o.shard
	if i < 0 {
		v, ok := os.LookupEnv(indexVar)
		if !ok {
			return shard.ID{}, fmt.Errorf("-shard is not set and neither is $%s", indexVar)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return shard.ID{}, fmt.Errorf("$%s: %q is not an index", indexVar, v)
		}
		i = n
	}
	sh := shard.ID{Index: i, Count: o.shards}
	if i >= o.shards {
		return sh, fmt.Errorf("shard index %d is not below -shards %d", i, o.shards)
	}
	return sh, sh.Validate()
}

// outcome is what a study gives: a sweep's curve, a dial sweep's result
// or an experiment's.
type outcome struct {
	curve  *analysis.Curve
	dial   *analysis.DialResult
	result *analysis.ExperimentResult
}

// mergeShards reads the shard files of -in, merges them and reports.
func mergeShards(w io.Writer, s scenario.Scenario, st *studyOptions, o *options) error {
	if o.in == "" {
		return fmt.Errorf("-in: the directory of shard files is not set")
	}
	shards, err := shard.ReadDir(o.in)
	if err != nil {
		return err
	}
	var out outcome
	switch {
	case s.DialSweep != nil:
		out.dial, err = shard.MergeDial(*s.DialSweep, shards)
	case s.Experiment != nil:
		out.result, err = shard.MergeExperiment(*s.Experiment, shards)
	default:
		out.curve, err = shard.Merge(*s.Sweep, shards)
	}
	if err != nil {
		return err
	}
	return writeReport(w, s, st, out, o.card)
}

// runAll runs the study unsharded and reports as merge does.
func runAll(w io.Writer, s scenario.Scenario, st *studyOptions, o *options) error {
	setWorkers(&s, o.workers)
	var out outcome
	var err error
	switch {
	case s.DialSweep != nil:
		out.dial, err = s.DialSweep.Run()
	case s.Experiment != nil:
		out.result, err = s.Experiment.Run()
	default:
		out.curve, err = s.Sweep.Run()
	}
	if err != nil {
		return err
	}
	return writeReport(w, s, st, out, o.card)
}

// setWorkers sets the study's Workers when the flag asks (results do not
// depend on it).
func setWorkers(s *scenario.Scenario, n int) {
	if n == 0 {
		return
	}
	switch {
	case s.DialSweep != nil:
		s.DialSweep.Sweep.Workers = n
	case s.Experiment != nil:
		s.Experiment.Workers = n
	default:
		s.Sweep.Workers = n
	}
}

// printStudy writes the study as a scenario file.
func printStudy(w io.Writer, s scenario.Scenario, _ *studyOptions, _ *options) error {
	b, err := scenario.Default().Marshal(s)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
