// Package report writes what a simulation produced, in the shapes the
// serving world already reads: per-request events like vLLM's detailed
// results, a summary like `vllm bench serve --save-result`, a benchmark
// card (docs/design.md §5) as JSON and Markdown, and Go benchmark-format
// lines for benchstat.
//
// Reading guide:
//   - events.go: the per-request event schema, shared by jsonl.go (EventJSONL)
//     and csv.go (EventCSV); lines.go buffers lines and keeps the first error.
//   - serve.go: Serve and WriteServe, the vLLM-shaped summary; Meta and
//     Tally supply what a sim.Summary does not know.
//   - card.go, results.go, system.go, build.go: Card and its sections;
//     band.go: the model error declared and the range it gave;
//     verdictband.go: an experiment's knees, latency readout, model
//     band and warnings on its verdict;
//     prerun.go: the serving capacity and the estimate made before the
//     runs; speculation.go: speculative decoding on the card;
//     clients.go: the workload's concurrency and cache state from the
//     configuration; classes.go: the per-class results;
//     dialcard.go and dialcard_markdown.go: a dial sweep's card;
//     fleet.go and fleet_results.go: a fleet's system and how its
//     replicas shared each load; markdown.go renders it.
//   - bench.go: Bench, the benchmark-format lines.
//   - steplog.go: StepLog, every step of a run as JSON Lines; trace.go:
//     ChromeTrace, a run as a Chrome trace (Perfetto, chrome://tracing);
//     observers.go: Observers, several observers as the one sim.Run
//     takes.
//   - object.go: ordered JSON objects and Num (NaN as null).
//   - rerun.go: EmbedScenario, the scenario a card embeds so that it can
//     be rerun; readevents.go and readrecord.go: ReadJSONL, ReadCSV and
//     ReadEvents, raw events back into records; eventdir.go: EventDir, a
//     sweep's events a file per run, and CurveFromEvents, its curve
//     recomputed from them.
//
// # Per-request events
//
// EventJSONL and EventCSV are sim.Observers: pass one to sim.Run and it writes each
// request's record when the request ends (so lines come in the order
// requests ended, not by id), measured or not (see "measured"). Call Flush
// after the run; the first write error is kept (Err) and later records are
// dropped. Lines are built in a reused buffer: nothing is allocated per
// token, and a record costs no allocation once the buffer has grown.
//
// The columns, in order (EventColumns):
//
//	id, conversation, turn, class    the request (workload.Request)
//	replica                          the replica the router sent it to (0 with one replica; -1 if never routed: recorded failed in the trace)
//	measured                         arrived inside the measurement window
//	status, reason                   ok, rejected, timed_out, errored, unfinished; why
//	error                            vLLM's error: "" iff status is ok, else the reason
//	scheduled                        when the workload issued it (its due instant), s
//	arrival, finish                  when it was sent to the server; its terminal event, s
//	client_wait                      arrival − scheduled, s: the wait for a slot under sim.Config.MaxConcurrency (0 without a cap; null if never sent)
//	queue_delay                      first scheduled by the engine − arrival, s
//	ttft, tpot, e2el                 as vLLM defines them, s
//	input_len, output_len            prompt tokens; output tokens emitted
//	requested_output_len             output tokens the request asked for
//	cached_tokens, preemptions       prefix-cache hits; recompute preemptions
//	max_itl, max_token_itl           largest gap per streamed chunk; largest retokenized gap (s)
//	itl_over_budget                  gaps above the SLO's ITL bound, in the series it gates (sim.SLO.ITLSeries)
//	draft_tokens, accepted_tokens    speculative decoding: drafts verified, drafts accepted (not output)
//	itl                              every gap per streamed chunk, s (only with sim.Config.KeepTokens)
//	token_itl                        every gap retokenized per token, s (only with sim.Config.KeepTokens)
//
// Times are seconds, as vLLM stores its per-request ttfts, itls and
// latencies, written as exact decimals of the simulator's integer
// nanoseconds (90 ms is 0.09). An instant that did not happen (no first
// token, say) is null in JSONL and an empty cell in CSV. In CSV the itl
// and token_itl cells hold the gaps separated by spaces.
//
// The two ITL series: a streamed chunk is the tokens emitted at one
// instant (several under speculative decoding, sim.Speculation: the
// accepted drafts and the token sampled after them; one otherwise). itl
// has one gap per chunk after the first, what a streaming client sees and
// vLLM's bench serve records per request; token_itl has, per chunk, its
// gap divided by its tokens once per token, SGLang's retokenized series
// (use_retokenized_itl), truncated to the nanosecond as
// sim.Record.MaxTokenITL is, so a chunk's gap exceeds its tokens × their
// gap by less than a nanosecond a token. token_itl has output_len − 1
// gaps (the first chunk is the prefill's one token). Without
// speculative decoding the two lists are equal, and so are max_itl and
// max_token_itl. draft_tokens and accepted_tokens are the request's
// drafts verified and accepted (drafted − accepted were rejected), apart
// from output_len, as vLLM's spec-decode metrics count them
// (num_draft_tokens, num_accepted_tokens).
//
// Mirrored from vLLM (vllm/benchmarks/serve.py, RequestFuncOutput and the
// --save-detailed lists input_lens, output_lens, ttfts, itls, latencies,
// start_times, queue_times, errors): the names ttft, itl, input_len,
// output_len and error, seconds, and error empty iff the request
// succeeded. Where servesim differs: vLLM keeps columns of lists in one
// JSON object, servesim one record per line; e2el is vLLM's "latency";
// arrival is its "start_times" (the send, from which TTFT counts; here on
// the run's clock); client_wait is its "queue_times"
// (client_queue_time, the wait on the --max-concurrency semaphore), and
// scheduled, the instant that wait starts from, vLLM does not save; vLLM
// saves only the per-chunk itl; a request that failed keeps the figures
// it reached (a timed-out request has its TTFT), where vLLM zeroes them;
// output_len counts emitted tokens of every request (vLLM's output_lens
// are 0 for a failure); there is no generated_texts (a simulator
// generates no text); and status, reason, measured, queue_delay,
// max_itl, max_token_itl, token_itl, itl_over_budget and the rest are
// servesim's own. Times are the simulator's exact instants, so arrival =
// scheduled + client_wait exactly.
//
// # Steps
//
// StepLog and ChromeTrace are sim.StepObservers: they see every step every
// replica ran (sim.Step), a run of identical decode steps expanded step
// by step exactly as sim.Step.All does. StepLog writes one JSON object a
// step (its keys are listed on the type and by StepColumns): replica,
// start and duration in seconds, composition (decode, mixed, prefill),
// the decodes and the prefill chunks with their new tokens and context,
// prefix-cache hits, preemptions, queue lengths and KV blocks. ChromeTrace
// writes the Trace Event Format: a track per replica with each step a
// slice named by its composition ("mixed 31+1 chunk 256"), counter tracks
// of KV blocks and queue lengths, and each request's lifetime as an async
// span. Neither allocates per step once its buffer has grown. To keep
// them beside the per-request events, combine them with Observers.
//
// # The summary
//
// WriteServe writes one line of JSON with the keys of vLLM's result file,
// in vLLM's order: date (only if Meta.Date is set), endpoint_type and
// backend ("servesim"), label, model_id, tokenizer_id, num_prompts,
// request_rate, burstiness, max_concurrency, duration, completed, failed,
// total_input_tokens, total_output_tokens, request_throughput,
// request_goodput, output_throughput, total_token_throughput, and
// mean_/median_/std_/p90_/p95_/p99_ of ttft_ms, tpot_ms, itl_ms and
// e2el_ms (the percentiles vLLM writes under --metric-percentiles
// 90,95,99), and, when Meta.MaxConcurrency is set, of
// client_queue_time_ms: the client wait for a slot (sim.Summary.ClientWait),
// which vLLM writes under --max-concurrency with client_queue_time among
// its --percentile-metrics. Then servesim's additions: offered, good, attainment, status
// (counts by terminal status), misses (exclusive, in the order not ok →
// TTFT → ITL → TPOT → E2E, so offered = good + Σ misses), miss_causes
// (non-exclusive), preemptions, queue-delay statistics, the statistics
// of each request's worst inter-token gap (worst_itl_ms,
// sim.Summary.WorstITL: what an SLO on every ITL gates), percentile_method,
// slo (bounds in ms, null when unbounded) and window (length, and warm-up
// and horizon when Meta.Window is set).
//
// Where the numbers differ from vLLM's: duration is the measurement
// window's length, not the wall time of the whole run; num_prompts,
// completed and failed count measured requests (failed is every measured
// request that did not complete ok: rejected, timed out, errored or
// unfinished); request_throughput and output_throughput are
// sim.Summary's, what the replica delivered inside the window, so past the
// knee they stay at capacity and completed/duration can differ from
// request_throughput; total_output_tokens is the tokens emitted by measured
// requests; request_goodput is always written (servesim always has an
// SLO, and counts ITL against it, which vLLM's goodput cannot); a
// statistic without samples is null where vLLM writes 0;
// client_queue_time counts every measured request that was sent, where
// vLLM counts those that succeeded; and vLLM's
// e2el_including_client_queue (latency plus client wait),
// max_output_tokens_per_s and max_concurrent_requests are not written.
// total_input_tokens needs Meta.InputTokens, which a Tally counts; without
// it, it and total_token_throughput are null.
//
// # Benchmark cards
//
// NewCard fills a Card from an analysis.Sweep and its curve: the engine, cost
// model and run settings as configured, the SLO and window, the seeds (the
// base seed, the replications and each derived seed), the simulator's
// module version and VCS revision (ReadBuild; "unknown" where the binary
// does not record them, as with GOFLAGS=-buildvcs=false or in tests: set
// Build.Revision yourself then), analysis.AnalysisRevision(), and the results with
// their intervals (every point, the knee, the peak, the collapse and the
// headroom at an operating load), its loads labelled in the sweep's
// unit (req/s, or clients on the Concurrency axis). The window is recorded
// as it ran: a Drain left 0 is written as the window length it stood for.
//
// A card records what its numbers rest on. A sweep that declared its cost
// model's error (analysis.Sweep.ModelError) has its Band on the card
// (Results.Band, band.go): the declaration (the relative scale, the
// alternative models by name, the fragile threshold), the knee's and the
// peak's range over the nominal model and every variant (lo_below and
// hi_above where a curve's knee lay beyond its loads), the fragile flag,
// each variant's name, knee and peak, and in words whether the knee
// holds under every model of the band or rests on the model
// (CardBand.Verdict, analysis.Curve.ModelVerdict); the headroom has its model
// range (CardHeadroom.Model). Its Markdown puts a model-range column beside
// the seed interval of the knee, the peak and the headroom, and says
// under the table what was declared and where each variant put its knee;
// a card without a band says that its intervals are seed noise only. The
// serving capacity the sweep was given (analysis.Sweep.Capacity) is
// Results.Capacity, an estimate whose source the caller states, and each
// point its Utilisation. Each point has TTFT p50 and p99 over every
// offered request (analysis.Point.TTFTOffered) beside vLLM's over successful
// requests, and the p99 of each request's worst inter-token gap
// (analysis.Point.WorstITL) beside ITL's over every gap. Card.Estimate (prerun.go) is the arithmetic estimate made
// before the runs, each CardFigure with its value, unit, arithmetic and knob
// (CardFiguresOf converts costmodel's). A speculating system says its
// speculation (System.Speculation, sim.Speculation.String; per replica
// group in a fleet), the SLO says which ITL series its bound gates
// (CardSLO.ITLSeries, on every card), and each point that drafted carries
// its mean accepted length, acceptance rate and retokenized ITL
// percentiles (CardPoint.Speculation), a table of their own in Markdown (and
// two columns of a dial sweep's probe). Numbers that are not finite (no
// sample, no interval, a percentile beyond every bound) are null in JSON
// and read back as NaN; Markdown prints ∞ for +Inf.
// The workload's concurrency and cache state come from the configuration
// (CardWorkloadOf): "no cap", a cap of N requests in flight
// (sim.Config.MaxConcurrency, as vLLM's --max-concurrency), or N
// closed-loop clients on the Concurrency axis; cold, or warm with
// sim.Config.Warm's prompts and prefix tokens. The caller states the
// claim, the rest of the workload (arrival process, lengths and their
// correlation, prefix reuse, open or closed loop, fingerprint, and for a
// trace the replay: CardWorkload.Replay, the replay's String, which says
// timestamp or conversation-keeping replay) and where the raw events are
// (EventsOf, which lists the columns the files have); CardVerdictOf adds an
// A/B experiment's verdict.
//
// A configuration with request classes (sim.Config.Classes) adds a
// per-class table to the results (Results.Classes, classes.go): each
// class's SLO, priority and knee (analysis.Curve.ClassKnees), and per load
// its offered rate, goodput, attainment by its own SLO and TTFT p50 and
// p99, each with its interval; the default class is left out when it
// received no request. The run settings list the classes and the warm
// start in a line each rather than as Go structs.
// A verdict carries the experiment's second readout and caveats, each a
// subsection of the verdict in Markdown, printed only when it has
// something to say: for a hypothesis on the knee, A's and B's knees and
// their paired difference (CardVerdict.Knee); the latency readout at
// each load, TTFT p50 and p99 and ITL p99 under A and B and the paired
// B − A as PairedDiff prints it (LoadVerdict.Latency); with a model band
// declared (analysis.Experiment.ModelError), the declaration, each
// variant's blocks, improvement, paired knee difference and verdict, and
// whether the verdict holds under every model of the band or rests on
// the model, in analysis.ExperimentResult.BandVerdict's words
// (CardVerdict.Band); and the result's warnings with their kinds. A card
// whose curve ran under the nominal model only while its experiment
// declared a band says which band, not "none declared".
// NewExperimentCard fills a card whose result is that verdict alone, with
// no curve. A verdict says which loads its headline covers
// (analysis.ExperimentResult.Regime: by default those at or below the baseline's knee)
// and carries the loads past that knee apart (CardVerdict.Past). Fields left
// empty render as "not stated".
//
// A fleet (sim.Config.Fleet with several replicas, a router or a signal
// delay) adds a fleet table to the system: the number of replicas, the
// router's type and its settings (defaults filled in), the signal delay,
// and the engine and cost model once when every replica has the same,
// else once per group of replicas configured alike (System.Fleet). Its
// curve's points say how the replicas shared each load (CardPoint.Fleet): the
// fleet's prefix hit rate and its imbalance of requests and of busy time,
// with intervals, and each replica's hit rate, busy fraction, goodput and
// KV occupancy. A single replica's card has neither, and reads as it did
// before fleets. On an A/B card that carries a curve as well as a
// baseline, the curve is system B's, and its heading says so.
//
// NewDialCard fills a card from an analysis.DialSweep and its result, the dial
// sweep described as a value (Card.Dial, CardDialSweep): the dial's name and
// unit, its values, the baseline value and the probe load, and per value
// the knee with its interval, the paired difference of the knee to the
// baseline's with its interval, the peak, the loads measured and the
// point at the probe load (TTFT and ITL p99, attainment). The system is
// the baseline value's; every value ran on the same seeds. Its Markdown
// puts the dial's table where a sweep's card has its curve.
//
// A load whose replications measured no request (analysis.Point.NoMeasured) has
// no attainment: the card says "no measured requests" there, and its JSON
// writes the attainment as null with "no_measured": true. An experiment
// with no block that measured a request has the verdict "no measured
// requests" and no improvement.
//
// # Rerun and re-analysis
//
// A card is a configuration plus results, and both come back. Rerun:
// NewCard, NewExperimentCard and NewDialCard embed what they were given
// as data (Card.Scenario, package scenario's JSON; EmbedScenario embeds a
// whole scenario instead, as examples/run does) and Rerun says so; a
// configuration that is not data says why it cannot be rerun, naming the
// field ("cannot be rerun: Sweep.Workload is a function
// (analysis.WorkloadFunc): …"). scenario.LoadCard gives the scenario back,
// runnable, and `go run ./examples/run -config card.json` reruns it:
// with the same simulator the card it writes is the same, byte for byte.
// The card's analysis revision is analysis.AnalysisRevision, a SHA-256 over
// the sources that compute summaries, curves, knees, intervals and
// verdicts (listed in its doc), so it changes with that code and never by
// hand; LoadCard refuses a card of another revision unless told
// (scenario.CardOptions.AnyRevision).
//
// Re-analysis: ReadJSONL and ReadCSV read the events back into
// sim.Records, every field the columns carry (errors name the file, the
// line and the column); sim.Summarize recomputes a run's summary from
// them with the configuration that ran (the card's scenario: each
// replication's seed is analysis.Seed(base, r)); CurveFromEvents recomputes a
// sweep's curve from a folder of its events (load=<load>-rep=<r>.jsonl,
// EventDir's names, which give each load back exactly; the %.4g names of
// examples/capacity give it rounded, and a point's bootstrap intervals,
// seeded by its load, then differ). The summaries and the curve equal the
// run's, field for field, percentiles included, except what records do
// not describe: the step mix, each replica's busy time and KV occupancy
// (0) and the speculation's per-step counts, and the model band, whose
// runs are not observed. The ITL distributions and the window's output
// tokens need every token's instant: events of runs with
// sim.Config.KeepTokens (the "itl" and "token_itl" columns).
//
// # Benchmark lines
//
// Bench writes one line per replication per load in the Go benchmark data
// format, with the load as a name key, the configuration as a
// configuration line and unit metadata (better=higher or lower), so that
// `benchstat -col config` or `benchstat a.txt b.txt` compares two
// configurations. A run that measured no request writes only its
// throughput.
//
// # Names
//
// No exported type name appears in two of servesim's packages, so that a
// file importing several reads unambiguously; the card's own forms of
// figures the other packages compute carry the prefix Card (CardKnee
// beside analysis.Knee, CardInterval beside stats.Interval, CardSLO
// beside sim.SLO, CardFigure beside costmodel.Figure), the event writers
// the prefix Event (EventJSONL, EventCSV, EventColumns) and the Chrome
// trace writer is ChromeTrace (beside workload.Trace). Two names are
// shared on purpose: Config, each package's own configuration (as in the
// standard library), and Request, engine's admitted request beside
// workload's generated one (a request at two stages, each the natural
// name in its package). Functions parallel by design (New, Run, Merge,
// OpenTrace, WriteTrace, Poisson) are left alike, as gzip.NewReader and
// zlib.NewReader are.
package report
