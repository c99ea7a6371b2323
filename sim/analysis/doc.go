// Package analysis is the study layer over package sim: it runs sim.Run
// at many offered loads, seeds and configurations, and turns the runs'
// summaries into curves, knees, model-error bands, dial comparisons and
// verdicts, each figure with its interval (sim/stats). Package sim runs
// one configuration once; this package asks what that configuration
// sustains, and whether a change improves it.
//
// Reading guide:
//   - sweep.go: Sweep over offered loads (a Grid, or automatic: geometric
//     growth to collapse, then bisection about the knee) with seeded
//     replications in parallel, Seed, and Sweep.CurveOf, the curve of
//     summaries made elsewhere (sim.Summarize makes them from records).
//   - curve.go: the Curve of Points, each figure a stats.Interval
//     (Student-t across replications, stratified bootstrap for
//     percentiles), Saturation labels, Knee (with its Censoring), Peak,
//     Collapse and Headroom. A Point's and a Curve's caveats are
//     Warnings (Point.TypedWarnings, Curve.TypedWarnings): a WarningKind
//     and its figures, whose String is the prose Point.Warnings and
//     Curve.Warnings hold; branch on the Kind, never on the words.
//   - workloads.go: Workload, what a sweep or an experiment builds each
//     run's workload.Source from at a load and a seed: the built-ins are
//     data (PoissonWorkload, SyntheticWorkload, ClassMixWorkload,
//     ClientsWorkload, TraceWorkload; package scenario stores them),
//     WorkloadFunc the escape hatch.
//   - axis.go: a sweep's Axis, offered rate or client population
//     (Concurrency, with the Clients workload). It lives here, not in
//     sim, because only a sweep reads it: a workload takes a load and
//     never asks what it measures.
//   - band.go: ModelError, the model-error band a sweep reruns under
//     (Band, Variant, Range, Move) and its fragility warning; its Shapes,
//     named alternatives of another shape (AtlasBand: ±scale and
//     costmodel.AtlasShapes, refused beside any model but Frozen's
//     defaults); FitBand, the band a fitted model earned
//     (costmodel.FitResult.ErrorOn's scale, refused where the run leaves
//     the fit's samples); Curve.ModelVerdict, whether the knee holds under
//     every model of the band or rests on the model.
//   - declared.go: a sweep, an experiment or a sizing whose replicas price
//     tensor parallelism from a declared collective (costmodel.Collective
//     without an nccl-tests curve) is refused unless its ModelError.Shapes
//     run that model's CollectiveBand: a declared figure never passes
//     silently.
//   - dial.go: Dial, DialFunc and the built-in dials (DialPrefillReplicas:
//     prefill/decode disaggregation as a dial, P of a fleet's n replicas
//     in the prefill pool); DialSweep, a sweep at every value of one dial
//     on common random numbers, and its DialResult (paired knee
//     differences). A dial of the engine sets both pools' replicas; a
//     model band replaces both pools' models.
//   - experiment.go: Experiment, a declared Hypothesis (a Metric and a
//     threshold) tested on paired seeded blocks, with its Verdict,
//     LoadResult, ExperimentResult and Boundary; its model band
//     (Experiment.ModelError, VariantVerdict, BandVerdict).
//   - sizing.go: Sizing, the smallest fleet (copies of one replica
//     behind a router) that meets an attainment target at a load with
//     headroom, by doubling and bisection on the replica count over
//     seeded replications; its SizingResult (the seed range, the
//     attainment at n and n − 1, the cost per million output tokens)
//     and SizingUnmetError; its model band (Sizing.ModelError,
//     SizingVariant, BandVerdict: the size under each model, whether it
//     holds under every model of the band or rests on the model).
//   - day.go: Day, a day of traffic (ShapedWorkload: a diurnal shape
//     scaled to a mean rate; or a trace) through static and autoscaled
//     fleets (DayArm, sim.Autoscale) on common random days: attainment
//     over the day and per bin, replica-hours, cost per million output
//     and good tokens at a declared price, paired differences from the
//     first arm, and whether each reading holds under every model of the
//     band (DayResult.Verdict).
//   - retained.go: Retained, the goodput retained past the knee (at
//     PastKnee's 1.5× and 2× its load, as a share of the peak), measured
//     at those loads (Grid.PastKnee runs them) and never interpolated.
//   - classcurve.go: per-class points and knees (ClassPoint, ClassKnee)
//     and which class binds first; classmix.go: the per-class metrics.
//   - named.go: the built-in metrics and dials written and read by name
//     (JSON), so that a study is data.
//   - shardapi.go: what lets a study's runs run elsewhere: a Sweep's
//     RunLoads and RunOne, an Experiment's RunBlock (Block) and ResultOf;
//     package sim/shard runs sweeps, dial sweeps and experiments as
//     shards through them and merges the shards into the same bytes as
//     Run.
//   - revision.go: AnalysisRevision, a hash of the sources that turn runs
//     into figures (this package's, sim's and sim/stats', registered with
//     internal/revision).
//
// # Curves, knees and verdicts
//
// A Sweep runs Reps replications at every offered load; replication r uses
// seed Seed(base, r) for both the workload and the run at every load, so
// the curve's points share their random numbers (common random numbers)
// and the curve is smooth. Every figure of a Point is a stats.Interval. The
// knee is the highest load whose mean attainment meets the target (0.95
// by default), interpolated where it crosses, with the interval where the
// attainment interval's bounds cross; the peak is the highest mean
// goodput; collapse starts at the first load past the peak whose goodput
// falls below 90 % of it. Saturation labels (stable, backlogged,
// overloaded) come from backlog growth and shed requests across the
// window, so no overloaded point passes for a steady one; a load whose
// every request was refused at arrival (its prompt too long) is refused, not
// overloaded. A point whose replications sketched (sim.Config.ExactSamples)
// takes each replication's own percentiles and the Student-t interval
// across them instead of the pooled bootstrap, and warns so.
//
// A band's verdict on the knee: it holds under every model of the band
// when the knee's range across the band (the nominal model and every
// variant, on the same seeds) spans no more than ModelError.Fragile of
// the nominal knee (half of it by default); otherwise it rests on the
// model, and the verdict names the variant whose knee lies farthest from
// the nominal one (Band.Mover) and its knee there.
//
// An Experiment declares its hypothesis (metric, relative threshold)
// before running A and B on the same seeds in every block; the verdict is
// improved when the interval of the paired relative improvement lies
// above the threshold, not improved when it lies at or below it,
// inconclusive otherwise. On MetricKnee the claim is on capacity: each
// block's knee over the loads, paired (ExperimentResult.KneeDiff), with
// the latency at each load as the second readout (LoadResult.Latency:
// TTFT p50 and p99, ITL p99, paired). An Experiment with a declared
// ModelError reruns under every variant of the band on the same loads and
// seeds (ExperimentResult.Band); its verdict holds under every model of
// the band when each variant's verdict equals the nominal one, and rests
// on the model otherwise (BandFlip, BandVerdict name the first variant
// under which it flips). Package sim/shard refuses a banded experiment
// (ErrBandedElsewhere). A hypothesis on goodput or
// throughput tested only where A's is within its interval of the offered
// load warns (ExperimentResult.TypedWarnings, WarnBoundedByLoad): there
// the metric is bounded by the load, and no B could improve on it.
//
// With request classes (sim.Config.Classes), a Sweep adds Point.Classes
// and Curve.ClassKnees, and warns which class binds first. A Sweep or an
// Experiment of a fleet takes the fleet's total offered load.
package analysis
