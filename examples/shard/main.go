// Command shard runs a goodput sweep too large for one machine as shards,
// one process each — a pod of a Kubernetes Indexed Job (job.yaml beside
// this file), a task of any array job — and merges their shard files into
// the curve, the knee and the benchmark card the unsharded sweep gives,
// byte for byte (package sim/shard).
//
//	go run ./examples/shard run -shard 0 -shards 4 -out shards   # one per index 0…3
//	go run ./examples/shard merge -in shards -card card            # when all four are done
//	go run ./examples/shard all -card card                         # the same sweep in one process
//	go run ./examples/shard study > study.json                     # the study as data
//
// The study is the Atlas TP4 capacity sweep (Poisson arrivals of 2,000 /
// 200-token requests, the frozen cost model, every step time ±10 % as a
// declared model error) over explicit loads, or a scenario file (-study,
// package scenario's; `shard study` writes the built-in one as such a
// file) holding a sweep, a dial sweep or an experiment. Every process of
// a study must be given the same study flags: the shard files carry the
// study's fingerprint, and the merge refuses those of another study,
// naming the file. run takes its index from -shard or, without it, from
// $JOB_COMPLETION_INDEX, as an Indexed Job's pod gets it. The card the
// merge writes embeds the scenario, so go run ./examples/run -config
// card.json reruns it on one machine.
//
// A sweep with an automatic grid (analysis.Grid.Start) cannot be sharded: it
// chooses each load from the results at the loads before it. Shard one
// with explicit loads (-loads, Grid.Loads), for instance those an
// automatic sweep on one machine chose. Neither can a scenario's study of
// groups (its experiments' loads come from a sweep's knee) nor a replay
// (one run).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/servesim/servesim/scenario"
)

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "shard:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  shard run   -shards n [-shard i] -out dir [study flags]   run shard i of n ($JOB_COMPLETION_INDEX without -shard)
  shard merge -in dir [-card dir] [study flags]             merge the shard files of dir: curve, knee, card
  shard all   [-card dir] [study flags]                     the same sweep unsharded, in this process
  shard study [study flags]                                 print the study as a scenario file
study flags: -study scenario.json (a sweep, dial sweep or experiment), or the built-in Atlas sweep's
  -loads, -reps, -warmup, -horizon, -seed, -model-error, -prompt, -output
(shard <command> -h lists them)`

// run runs one command and writes its report to w.
func run(w io.Writer, args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return fmt.Errorf("unknown command %q\n%s", args[0], usage)
	}
	fs := flag.NewFlagSet("shard "+args[0], flag.ContinueOnError)
	fs.SetOutput(w)
	st := studyFlags(fs)
	o := cmd.flags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	s, err := st.scenario(fs)
	if err != nil {
		return err
	}
	return cmd.run(w, s, st, o)
}

// options are a command's own flags.
type options struct {
	shard, shards int
	out, in, card string
	workers       int
}

// command is a subcommand: its own flags, and what it does with the study.
type command struct {
	flags func(fs *flag.FlagSet) *options
	run   func(w io.Writer, s scenario.Scenario, st *studyOptions, o *options) error
}

var commands = map[string]command{
	"run":   {runFlags, runShard},
	"merge": {mergeFlags, mergeShards},
	"all":   {allFlags, runAll},
	"study": {func(*flag.FlagSet) *options { return &options{} }, printStudy},
}

func runFlags(fs *flag.FlagSet) *options {
	o := &options{shard: -1}
	fs.IntVar(&o.shard, "shard", o.shard, "this shard's index in [0, shards); default $JOB_COMPLETION_INDEX")
	fs.IntVar(&o.shards, "shards", 0, "the number of shards the study is split into (an Indexed Job's completions)")
	fs.StringVar(&o.out, "out", "", "directory to write the shard file to (shared by every shard: a volume, or a bucket mounted there)")
	fs.IntVar(&o.workers, "workers", 0, "runs at a time in this process; 0: GOMAXPROCS")
	return o
}

func mergeFlags(fs *flag.FlagSet) *options {
	o := &options{}
	fs.StringVar(&o.in, "in", "", "directory holding every shard file of the study, and no other study's")
	fs.StringVar(&o.card, "card", "", "directory to write the benchmark card to (card.md, card.json); empty: none")
	return o
}

func allFlags(fs *flag.FlagSet) *options {
	o := &options{}
	fs.StringVar(&o.card, "card", "", "directory to write the benchmark card to (card.md, card.json); empty: none")
	fs.IntVar(&o.workers, "workers", 0, "runs at a time; 0: GOMAXPROCS")
	return o
}
