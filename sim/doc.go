// Package sim owns virtual time: it wires a workload to one replica, or to a
// fleet of replicas behind a router, each an engine priced by a cost model;
// turns the engines' events into per-request records; and computes metrics
// and goodput over a measurement window.
//
// Reading guide:
//   - config.go: Config (engine, cost model, fleet, SLO, Window, timeout,
//     injected error rate, seed), each with a documented zero value and
//     Validate.
//   - fleet.go: Fleet (replicas, router, stale signals, frontends), the
//     Router seam and the read-only View a router decides on.
//   - gateway*.go: Gateway, admission in front of the fleet, one policy a
//     file: TokenBucket (Envoy's local rate limit), ConcurrencyLimit (a
//     cap per replica, a bounded gateway queue, a time-to-live) and
//     Saturation (llm-d's saturation detector, on the router's stale
//     signal).
//   - router_*.go: the built-in routers, one per file — RoundRobin (the
//     default), Random, LeastLoaded, PowerOfTwo, PrefixAffinity (SGLang's
//     cache-aware policy), ConsistentHash. A new router is one type with a
//     Route method, in a file of its own; it keeps no state of its own
//     (View.Routed and View.Rand give it what it must remember), so one
//     value serves every run of a sweep.
//   - pools.go: PrefillPool (Fleet.Prefill), a disaggregated fleet's
//     prefill pool: its replicas, router, Decider, Link and KV bytes per
//     token; the way a remote request goes (prefilled there with its first
//     token, handed to its decode replica, which reserves blocks, its KV
//     moved, landed: engine.Request.Remote); DisaggSummary.
//   - tiers.go, tiers_summary.go: HostTier and SharedStore (Fleet), KV
//     blocks below HBM that a prefix hit loads back over a Link (vLLM's
//     CPU offloading, LMCache's remote store); the runner's tiers (each an
//     engine.Tier, a kvtier.LRU); TierSummary.
//   - decider_*.go: the built-in Deciders, one per file — AlwaysRemote
//     (vLLM's disaggregated proxy), NeverRemote, PrefixThreshold (llm-d's
//     prefix-based decider).
//   - cacheview.go: CacheView, what a prefix-aware router (PrefixAware,
//     View.CachedPrefix) knows of the replicas' caches: ExactView, the
//     caches as they are (the zero value); ApproxView, SGLang's tree of
//     what each router instance routed, pruned on a timer; EventsView,
//     llm-d's index of the replicas' KV events, late by a declared lag.
//   - autoscale.go, lifecycle.go, scaleview.go, scale_summary.go: Autoscale
//     (Fleet), replicas
//     that join a running fleet after a declared ColdStart and leave it by
//     a Drain (finish, hand back the never-scheduled, abort at a
//     deadline), a controller ticking every Interval; the Autoscaler seam
//     and the read-only ScaleView a policy decides on. An index names one
//     replica's whole life (never reused, as a pod's name). The routable
//     list is the router's View; the controller's tick is an event that
//     never keeps a run going. ScaleSummary: replica-hours by state,
//     joins and leaves, the timeline a tick at a time.
//   - autoscale_*.go: the built-in policies, one per file — Schedule (a
//     size by the clock: the static fleet, the time-of-day baseline,
//     perfect foresight with Lead); KVSaturation (llm-d's variant
//     autoscaler's V1 saturation rule: a replica more or fewer a tick on
//     KV cache usage and waiting queues); TargetUtilisation (HPA on a
//     per-replica vLLM gauge, a Pods metric: the replica calculator's
//     rule, warming replicas at 0 on a scale-up); QueueDepth (KEDA's
//     Prometheus scaler on sum(vllm:num_requests_waiting), an External
//     AverageValue metric); SLOHeadroom (the measured TTFT p99 or
//     attainment of a lookback's ends against its bound: it reads
//     ScaleView.Recent, scale_recent.go's ring of the recent ends, kept
//     only for a policy that declares a History). behavior.go: Behavior, HPA's
//     stabilisation windows and rate limits, which the controller applies
//     to every policy's recommendation. A new policy is one type with a
//     Desired method, in a file of its own.
//   - transfer.go: Link, the path a prefill pool's KV takes to a decode
//     pool (bandwidth, latency, FIFO or fair sharing; which real
//     connectors behave which way), and the state of its transfers that
//     the runner drives: landing instants, bytes moved and busy time over
//     the window.
//   - The runner, one concern per file: run.go, the event loop and when it
//     stops; intake.go, the source, routing each arrival, client
//     deadlines; replica.go, each replica's engine and its move in flight;
//     window.go, the clock, the window and what is integrated over it;
//     step.go, how a move's end becomes tokens, gaps and terminal states;
//     streak.go, decode streaks: the tokens of a request that decodes in
//     every move, accounted when it stops; the engine counts the requests
//     continuing their streak instead of listing them (engine.Runner.OmitStreaks),
//     so a move costs what changed in it (Config.Stepwise is the eager
//     slow twin).
//   - events.go: the typed event heap keyed on (instant, class, sequence),
//     and the replicas' step ends, kept apart from it (first at their
//     instant, by replica index).
//   - record.go: Record, Status and the Observer that receives each
//     record; the step observer (Step, StepMix).
//   - summary.go: Summary, Misses, ReplicaSummary, Samples and the
//     collector that makes a Summary of a run's records; Summarize, a
//     summary from records alone (raw events read back); and the files
//     of this package the analysis revision hashes.
//   - sample.go: the samples a summary keeps of each latency: exact up to
//     Config.ExactSamples values, then a stats.Sketch (the mergeable
//     relative-error quantile sketch), so that memory stays bounded at
//     any number of requests; ITLs as distinct values with counts.
//   - window.go (above) also holds the warm-up report and MSER-5
//     truncation (Window.DetectWarmup, stats.MSER5).
//   - speculation.go: Speculation, the acceptance draws and SpecSummary.
//   - classes.go: request classes with their own SLOs and per-class
//     summaries (ClassSummary); analysis.ClassMix is the workload of
//     several classes.
//   - A run takes a workload.Source. Statistics of plain values (Dist,
//     percentile Methods, Sketch, intervals, MSER-5) are package
//     sim/stats; the study layer (the Workloads a study builds each run's
//     source from at a load and a seed, Sweep, Curve, knees, bands, dial
//     sweeps, Experiment, AnalysisRevision) is package sim/analysis,
//     which imports sim: sim never imports it.
//   - sim/report writes raw events (JSONL, CSV), vLLM-shaped summaries,
//     benchmark cards and benchstat lines; sim/chart draws the curves.
//
// # Semantics
//
// Time is a time.Duration from the start of the run. At one instant, a step
// that ends emits its tokens first, then arrivals join the queue, then
// deadlines are enforced; the next step is planned once every event at the
// instant is handled. A request's metrics follow vLLM's bench serve: TTFT =
// first token − arrival; every ITL (each gap between consecutive tokens of a
// request, not a mean); TPOT = (E2E − TTFT)/(output − 1); E2E = last token −
// arrival; queue delay = first scheduled − arrival. Latency distributions
// are over measured requests that completed ok, as vLLM reports them; the
// ITL distribution holds every gap of every measured request (kept exactly
// as counts of distinct values, since gaps are step durations).
//
// Exact up to a bound: each latency keeps up to Config.ExactSamples values
// (DefaultExactSamples, 100,000; distinct gaps for the ITL) exactly, and
// past it moves to a stats.Sketch whose percentiles lie within
// stats.SketchAccuracy (0.5 %) of the exact ones, by the same stats.Method
// on the same ranks; N, mean, standard deviation and maximum stay exact,
// the stats.Dist's RelErr says which, and Samples keeps no slice for it. A
// curve point (sim/analysis) whose replications sketched takes each
// replication's own percentiles and the Student-t interval across them
// instead of the pooled bootstrap, and warns so (the
// card prints the warning). Ten million Atlas requests run in about 18 MB
// of resident memory (go run ./examples/scale -requests 10000000).
//
// Every request that arrives ends in exactly one Status: ok, rejected (by
// the engine, with its reason), timed_out (Config.Timeout), errored (a
// server error injected at Config.ErrorRate: the request is served and fails
// at its end; or a request the trace recorded as failed, which ends at its
// arrival without loading the replica, since its real cost is unknown),
// unfinished (in flight when the run stopped), or, behind a Config.Gateway,
// throttled, shed, queue_full or expired (ended at the gateway, never
// reaching a replica). A request is good iff it is ok and every SLO bound held;
// goodput = good / window length, attainment = good / offered, and
// failures stay in the denominator. Misses are attributed exclusively in the
// order gateway → not ok → TTFT → ITL → TPOT → E2E, so offered = good + Σ misses; the
// non-exclusive counts are reported as well.
//
// # Curves, knees and verdicts
//
// Sweeps over offered load, their curves and knees, and Experiments with
// their verdicts are package sim/analysis, over the Summaries Run
// returns.
//
// # Clients and classes
//
// Config.MaxConcurrency caps the requests in flight as vLLM's bench serve
// --max-concurrency does: an arrival that finds the cap reached waits
// client-side, first come first served, and is sent when a request ends.
// Record.Scheduled keeps when it was due, Record.Arrival when it was sent;
// TTFT and E2E count from the send, as vLLM measures them, and the wait
// is Summary.ClientWait (inference-perf's schedule delay). A request still
// waiting when the run stops ends unfinished and never Sent. An infinite
// rate under cap N is N closed-loop clients with zero think time, and an
// analysis.Sweep with Axis analysis.Concurrency sweeps those populations
// (analysis.Clients), its curve labelled in clients.
//
// Config.Classes lists request classes, each with its own SLO (zero
// bounds inherit Config.SLO's) and a priority added to its requests'; a
// request of no listed class belongs to the default class, judged by
// Config.SLO. Each request is judged by its class's SLO, in the aggregate
// as in Summary.Classes, where every class (the default last) has its
// offered, good, attainment, exclusive misses and latencies; an
// analysis.Sweep adds Point.Classes and Curve.ClassKnees, and warns which
// class binds first.
// The engine's policies (engine.FCFS, Priority, ShortestPrompt,
// EarliestDeadline) see each request's class, priority, arrival, prompt,
// declared output and deadline (arrival + its class's TTFT bound).
//
// A conversation-keeping trace replay (workload.OpenReplay with
// TraceConfig.Conversations.Keep) is a workload.Paced source: the runner
// pulls it as lazily as an open-loop trace, each row at its recorded
// instant, and schedules a turn its predecessor's answer released when the
// source releases it (at the later of its recorded instant and that
// answer's end plus the minimum think time), so the replay streams.
//
// Config.Warm is a warm start: before the run, every replica's prefix
// cache holds the listed prompts' shared blocks (a PrefixReuse's
// SharedPrompts, say), never measured; a warm-up larger than the cache is
// refused.
//
// # Speculative decoding
//
// Config.Speculation (ReplicaConfig.Speculation in a fleet) sets K draft tokens
// a decode step verifies, the acceptance (i.i.d. α, an empirical
// distribution of accepted lengths, α per class) and the drafter's cost
// (costmodel.Drafting: a draft model, drafting heads, or free n-gram).
// The engine takes KV for the drafts and asks the runner how many were
// accepted; the runner draws it from the request's own stream, seeded by
// the run's seed ("sim/speculation") and the request's ID, so the draws
// are common random numbers across configurations. Under i.i.d.
// acceptance a step draws one uniform u for a request, and of its d
// drafts accepts A = #{j ≤ d : u < α^j}: the inverse CDF of the
// truncated geometric law P(A ≥ j) = α^j, j ≤ d, which is the law of a
// draw a draft up to the first rejection, from one draw a step. u has
// 53 bits and each α^j is taken exactly, so each P(A ≥ j) is α^j to
// within 2⁻⁵³ (above it, ⌈α^j·2⁵³⌉/2⁵³). A step emits the
// accepted drafts and the token sampled after them as one streamed chunk:
// Summary.ITL is per chunk, as vLLM's bench serve measures it (and what a
// streaming client sees), Summary.ITLRetokenized per token, each chunk's
// gap over its tokens (SGLang's use_retokenized_itl); SLO.ITLSeries says
// which the ITL bound gates (per chunk by default). Records keep the
// drafted and accepted tokens apart from the output, and
// Summary.Speculation the acceptance rate and the mean tokens a full step
// emits, (1 − α^(K+1)) / (1 − α) under i.i.d. acceptance. Speculative
// steps are planned one at a time (no fast path): K = 0 runs exactly as
// before.
//
// # Fleets
//
// A fleet is N replicas driven from one event queue; the single replica is
// the fleet of one (the same bytes under any router). Each arrival is
// routed once, by the Router, on a View of every replica: its load
// (waiting, running, outstanding tokens, free KV blocks) as fresh as
// Fleet.SignalDelay allows, and how much of the request's prompt each
// replica's prefix cache holds. Records carry their replica; the Summary
// adds each replica's share (Replicas) and how unevenly the work fell
// (Imbalance). A Sweep or an Experiment of a fleet takes the fleet's total
// offered load. Replicas run runs of identical decode steps of their own:
// a request joining or leaving a replica cuts its run there
// (engine.Runner.Truncate), so the fleet costs about what its replicas would
// alone (BenchmarkRunFleet). A router that reads every replica at every
// arrival adds to that: 64 replicas behind LeastLoaded or PrefixAffinity
// cost 2.6–2.9× one replica's instructions a request, held under 3× by
// TestInstructionBudget (BenchmarkRunFleet64), since a request's prefix
// keys are computed once per arrival, not once per replica asked
// (View.CachedPrefix). Every replica is allocated when the run
// starts, about 6 KB each whatever it holds (10,000 replicas: 60 MB and
// 0.2 s of setup), so a fleet is at most MaxReplicas (10,000) replicas
// and MaxFrontends (256) frontends; Validate refuses more.
//
// # Disaggregated fleets
//
// A Fleet with a PrefillPool splits prefill from decode: Fleet.Replicas
// are the decode pool, behind Fleet.Router; each send asks the router for
// a decode replica, then the pool's Decider whether a prefill replica
// (the pool's Router chooses it) prefills the request. A remote request's
// TTFT ends at its prefill replica with its first token; its decode
// replica then reserves blocks for its prompt (under the full-sequence
// gate: one that cannot, waits) and its KV moves over the prefill
// replica's Link (bytes: PrefillPool.KVBytesPerToken × the prompt tokens
// the decode replica's cache lacks); the wait and the transfer are in its
// first ITL (Record.KVWait, Record.Transfer). Records, Summary,
// Summarize, the observers and every metric work unchanged;
// Summary.Disagg adds the decider's split, the waits, the bytes moved,
// the links' use and each pool's. A landing cuts a decode replica's run
// of decode steps as an arrival does (engine.Config.RemoteKV turns off
// joins that change nothing: a landing is not a join);
// the prefill replicas keep every fast path. With NeverRemote the
// fleet is its decode pool co-located, byte for byte.
//
// # KV tiers below HBM
//
// Fleet.HostTier gives every replica host memory below its HBM and
// Fleet.SharedStore one store the whole fleet reaches over one link.
// Every full block a step computes is written through to both (vLLM's
// OffloadingConnector; LMCache's batched_put); a waiting request whose
// prefix HBM lost finds the blocks that follow its HBM hits in the host
// tier, then the store, and loads them over the tier's Link while the
// replica's steps go on (bytes: the tokens × KVBytesPerToken); it waits
// outside the queue, with no budget and no seat, and prefills the rest of
// its prompt once the load landed. A load from the store is written back
// into the host tier. With a host tier alone a replica runs several
// steps a move (a landing cuts the run, as an arrival does), each step's
// stores, and its lookup of a waiting head, handed to the tier as the run
// reaches it; with a shared store, which every replica calls, the
// engines run one step a move. Record.CachedHost, CachedShared and TierLoad, and
// Summary.Tiers, say what the tiers served and what their loads cost in
// TTFT. A tier of no room (Blocks 0) is no tier, byte for byte. Tiers
// need the prefix cache, one BlockSize across the fleet for a shared
// store, no prefill pool, and a declared warm-up.
//
// # Determinism
//
// The same configuration, workload and seed give byte-identical records and
// summaries: one goroutine, ties broken by event class and insertion order,
// random streams derived from the seed by name ("sim/errors"), no map
// iteration that matters.
//
// # Speed
//
// The loop allocates nothing per token or per step; BenchmarkRunAtlas
// reports simulated requests per second and allocations per request. A
// replica's run of decode steps ends at its first finish; when nothing
// waits and the cost model prices a decode step whatever its count (the
// Atlas default), the step end plans the next run at once
// (engine.Runner.Continue) instead of after every event at that instant, and a
// request that then joins the replica at that instant cuts it whole, so
// the run goes on through the finish as step by step (Config.Stepwise
// never continues; TestContinuedRunsAreStepwise holds the two to the same
// bytes under closed-loop clients with no think time).
package sim
