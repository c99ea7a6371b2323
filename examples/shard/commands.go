package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim"
)

// indexVar is where a Kubernetes Indexed Job gives each pod its index.
const indexVar = "JOB_COMPLETION_INDEX"

// runShard runs one shard of the study and writes its shard file.
func runShard(w io.Writer, s study, _ *studyOptions, o *options) error {
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
	s.sweep.Workers = o.workers
	res, err := s.sweep.RunShard(sh)
	if err != nil {
		return err
	}
	path, err := sim.WriteShardFile(o.out, res)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d of the study's %d runs, written to %s\n", sh, res.Owned(), res.Runs, path)
	return nil
}

// shardOf is the shard the flags name, its index from -shard or else the
// Indexed Job's environment variable.
func shardOf(o *options) (sim.Shard, error) {
	if o.shards < 1 {
		return sim.Shard{}, fmt.Errorf("-shards: the number of shards must be >= 1, got %d", o.shards)
	}
	i := o.shard
	if i < 0 {
		v, ok := os.LookupEnv(indexVar)
		if !ok {
			return sim.Shard{}, fmt.Errorf("-shard is not set and neither is $%s", indexVar)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return sim.Shard{}, fmt.Errorf("$%s: %q is not an index", indexVar, v)
		}
		i = n
	}
	sh := sim.Shard{Index: i, Count: o.shards}
	if i >= o.shards {
		return sh, fmt.Errorf("shard index %d is not below -shards %d", i, o.shards)
	}
	return sh, sh.Validate()
}

// mergeShards reads the shard files of -in, merges them and reports.
func mergeShards(w io.Writer, s study, st *studyOptions, o *options) error {
	if o.in == "" {
		return fmt.Errorf("-in: the directory of shard files is not set")
	}
	shards, err := sim.ReadShardDir(o.in)
	if err != nil {
		return err
	}
	c, err := s.sweep.Merge(shards)
	if err != nil {
		return err
	}
	return writeReport(w, s, st, c, o.card)
}

// runAll runs the study unsharded and reports as merge does.
func runAll(w io.Writer, s study, st *studyOptions, o *options) error {
	s.sweep.Workers = o.workers
	c, err := s.sweep.Run()
	if err != nil {
		return err
	}
	return writeReport(w, s, st, c, o.card)
}

// printStudy writes the study as a scenario file.
func printStudy(w io.Writer, s study, _ *studyOptions, _ *options) error {
	b, err := scenario.Default().Marshal(s.sweep)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, strings.TrimSpace(string(b)))
	return err
}
