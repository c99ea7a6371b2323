// Package costmodel prices one engine step: a batch shape in, a
// time.Duration out. It also makes the chapter's capacity estimate of a
// replica from declared figures, before anything is measured.
//
// Reading guide:
//   - costmodel.go: Batch and Chunk describe a step's shape (per prefill
//     chunk its new tokens and the context before it, per decoding sequence
//     its context length); Model is the seam (one method, StepTime) and Func
//     adapts a function. Two optional interfaces let a model say what its
//     price reads, so an engine can price less: DecodeSum (the decodes'
//     contexts only through their number and sum) and ContextFree (none of
//     them: Frozen, TableModel).
//   - frozen.go: Frozen, the default, the reference chapter's Atlas TP4
//     frozen costs (45 ms decode step, 20 + 0.035·n ms prefill).
//   - linear.go: Linear, a linear form over the batch shape (per step, per
//     scheduled sequence, per decode token and context token, per prefill
//     token, per attention pair) with its coefficients' Unit (ms by
//     default, µs as BLIS publishes them) and an optional Tick that step
//     times are truncated to, as BLIS truncates to 1 µs; NewLinear3 for
//     b0 + b1·prefill + b2·decodes, NewLinear3Requests for b0 +
//     b1·prefill + b2·scheduled requests (BLIS's per-request term).
//   - plausible.go: the limits beyond which Validate refuses a coefficient
//     as implausible in its unit (ErrImplausible: a per-step term over
//     10 s, a per-sequence or per-token term over 1 s, ...).
//   - hardware.go and roofline.go: Hardware and ModelSpec figures, and
//     Roofline, max(memory, compute) plus overheads, with Calibrate to match
//     a measured step.
//   - table.go: Table, measured step times interpolated with gonum's interp;
//     Build compiles it, TableModel.Lookup warns outside the samples.
//   - profile.go, profilemodel.go: Profile, a GPU's per-operator kernel
//     profile (LLMServingSim's layout), and ProfileModel, the step time
//     composed from it: token-count kernels per layer × Layers, attention
//     over its (prefill chunk, prefill context, decodes, decode context)
//     grid with the context-skew correction, once-per-step and
//     per-sequence kernels, the collective for tensor parallelism.
//     Price carries a Warning when a step leaves the profiled grid.
//   - allreduce.go, allreduceread.go: AllReduceCurve, an all-reduce's
//     time against its bytes as nccl-tests' all_reduce_perf measures it
//     (ReadAllReduce: every layout of its output, errors a
//     *ProfileError), which Collective.Measured prices a step's
//     all-reduces from; without it the declared Bandwidth and Latency,
//     and ProfileModel.CollectiveBand, the band such a figure carries
//     (a quarter of the bandwidth, twice the latency).
//   - profileread.go, profilemeta.go: ReadProfile, the reader of that
//     layout; every error a *ProfileError naming file, line and column.
//     DecoderLayout, read from a model.json, says what a profile cannot:
//     any dense decoder's layer count, hidden size and kernel lists.
//   - kernelcurve.go, attentiongrid.go: the monotone curves and the
//     attention grid ProfileModel reads (isotonic regression, fills of
//     cells the profile did not time, multilinear interpolation).
//   - fit.go, nnls.go: Fit, a non-negative least-squares fit of Linear
//     to measured Samples (Lawson–Hanson), by absolute or relative error,
//     each coefficient with its interval, with its MAPE and R².
//   - fiterror.go: FitResult.ErrorOn, a fit's error on the shapes a run
//     visits (FitError): each step's prediction interval, widened beyond
//     the samples' range by a held-out extrapolation of the samples as
//     far, aggregated over the run's step time; the scale of a model band
//     (sim/analysis.FitBand).
//   - coverage.go: Shapes, the batch shapes a configuration visits (from
//     the step observer), Coverage, how a fit's samples lie against them,
//     and Shapes.Draw, the shapes worth measuring.
//   - atlas.go: the Atlas TP4 constants (KV pool of AtlasKVBlocks blocks of
//     AtlasKVBlockSize tokens, ...), the AtlasTP4 replica and AtlasRoofline.
//   - atlasshapes.go: AtlasShapes, the alternatives of another shape to
//     Frozen for a model band, each a NamedModel holding the 45 ms decode
//     step of 32 sequences at 2,000 context: AtlasLinear (batch and
//     context terms split by the roofline, Frozen's prefill line),
//     AtlasRoofline, and AtlasProfiledShape (a Linear fitted to the
//     shipped RTX PRO 6000 kernel profile, rescaled to Atlas's decode
//     point and prefill line). DecodeSum, not ContextFree.
//   - capacity.go and estimate.go: Replica (hardware, model, operating point,
//     cost model) and its Estimate, each bound a Figure with value, unit,
//     basis and the knob that moves it. The operating point carries the
//     scheduler's limits (batch, token budget, chunk cap) and the
//     workload's lengths, so that the estimate describes the replica a
//     simulation runs.
//   - largest.go: the steps those limits let a scheduler form, found here
//     rather than asked of the engine (the package is a leaf, and
//     engine.LargestStep must agree): the largest step against the ITL
//     bound, the one-chunk mixed step, and a prompt cut into chunks.
//   - serving.go: the load figures: serving capacity, 1 / (output × decode
//     step / batch + prefill(prompt)), at which the replica saturates, and
//     its extreme with every prefill chunk paying a step; the
//     TTFT-qualified load from an M/M/c queue of the batch's seats against
//     the queue budget a busy replica's TTFT floor leaves; the utilisation
//     of an offered load.
//   - disagg.go: Disaggregated, a prefill pool's replica and a decode
//     pool's joined by a KV link, and its DisaggEstimate: the prefill-pool
//     capacity (prompts/s over the scheduler's cycle of budget-filling
//     steps), the decode-pool capacity (the batch turning over every
//     output − 1 decode steps), the link's transfer time and bound, the
//     balancing P:D ratio; Fleet and Split, a fleet of whole replicas
//     bound by the least of its pools and its link.
//   - tiers.go: Tiers, a replica's KV tiers below HBM (a host tier over
//     each accelerator's PCIe path, a store shared by the fleet over one
//     link), and its TiersEstimate: each tier's restore bound (tokens/s)
//     against the prefill's marginal rate, and the prefix above which
//     restoring beats recomputing, or that it never does.
//   - numbers.go, shape.go, units.go: shared helpers.
//
// Every model is a plain struct with a documented zero value and a Validate
// method that names each bad field. Models are pure and deterministic: 0 for
// the empty batch, positive for a non-empty one, non-decreasing as sequences,
// tokens or context are added, and StepTime does not allocate. Invalid
// figures never make StepTime panic or go negative. The subpackage
// costmodeltest checks these properties for any Model.
//
// Units: durations are time.Duration; Linear's coefficients are in its
// Unit (milliseconds when 0), Fit's results and table samples in
// milliseconds; bytes, bytes/s, FLOP and FLOP/s are plain SI numbers
// (35e9 bytes is 35 GB; KiB and GiB are written as 1<<10 and 1<<30).
//
// The package is a leaf: it knows nothing of requests, queues or engines.
package costmodel

// Every built-in model implements the seam.
var (
	_ Model = Frozen{}
	_ Model = Linear{}
	_ Model = Roofline{}
	_ Model = (*TableModel)(nil)
	_ Model = (*ProfileModel)(nil)
	_ Model = Func(nil)
)
