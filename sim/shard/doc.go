// Package shard runs a study too large for one machine as shards, one per
// machine, pod or array task, and merges their results into the same
// bytes as the unsharded run: a analysis.Sweep over explicit loads, a
// analysis.DialSweep or a analysis.Experiment.
//
// The study's runs are numbered in the order the unsharded study runs
// them, and run j belongs to shard j mod n (an ID: Index j mod n, Count
// n). Each shard runs the runs it owns and writes a shard file; once all
// n are written, the merge reads them and hands their outcomes to the
// study's own code (analysis.Sweep.RunLoads, analysis.Experiment.ResultOf), which
// builds the curve, the dial result or the verdicts as the unsharded Run
// does, byte for byte:
//
//	res, _ := shard.Run(sweep, shard.ID{Index: i, Count: n}) // on machine i
//	shard.WriteFile(dir, res)                               // dir/shard-<i>-of-<n>.simshard
//	shards, _ := shard.ReadDir(dir)                         // once all n are there
//	curve, _ := shard.Merge(sweep, shards)                  // = sweep.Run()
//
// Reading guide:
//   - shard.go: ID, Result (one shard's outcomes, with the fingerprint of
//     its study and the build that ran it), running the runs a shard
//     owns, checking that a merge has exactly the study's shards
//     (ErrSet, naming each wrong file), and shard files in a directory
//     (FileName, WriteFile, ReadFile, ReadDir).
//   - sweep.go: Run and Merge for a sweep, RunDial and MergeDial for a
//     dial sweep; both plan the study by running it with a RunLoads that
//     only numbers its runs, so an automatic grid, which picks each load
//     from the results before it, is refused (ErrAutomaticGrid).
//   - experiment.go: RunExperiment and MergeExperiment, block by block.
//   - codec.go: the shard file format (gzip over varints and float bits,
//     bit for bit, NaN and −0 included; refused when sim.Summary's layout
//     differs from the writer's, or when damaged).
//   - fingerprint.go: the fingerprint of a study's configuration, so that
//     another study's shards cannot be merged.
//   - parallel.go: the worker pool a shard runs its runs on.
//
// Give every shard and the merge the same study: a shard file carries the
// study's fingerprint (Workers and Observe left out, as they change no
// run) and the build that ran it, and a merge refuses a shard missing or
// given twice, another study's, another split's or another build's.
// examples/shard runs the Atlas sweep, or a scenario file, as shards, with
// a Kubernetes Indexed Job beside it.
//
// The package imports sim; sim does not import it.
package shard
