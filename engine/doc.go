// Package engine is one LLM serving replica's scheduler as a pure state
// machine, mirroring vLLM's V1 scheduler: it owns no clock, no randomness, no
// goroutine and no I/O, so a design reviewer can drive it by hand in a test.
//
// A driver uses it under one of two contracts. The basic contract is
// Engine's own methods, a step a move (below, "The basic contract");
// package enginetest's Checker holds a driver to it. The batched
// contract is Runner (Engine.Runner), for a driver that plans runs of
// identical decode steps as one move and cuts them where something
// happens, as sim does: its rules are written down on Runner, and
// Runner.SetStrict checks them at every call.
//
// Reading guide:
//   - config.go: Config, every field's zero value documented; Validate,
//     which also bounds every count (MaxKVBlocks: block ids are int32;
//     MaxTokens; MaxSeqsLimit), so no value a file can hold overflows.
//   - request.go: Request (what a driver hands in) and the rejection
//     reasons (a prompt at or above MaxModelLen among them; a longer
//     output is cut there, see "MaxModelLen" below).
//   - engine.go: New, Add, Abort, and the Plan/Emit/Outcome the engine
//     answers with. Engine's state is grouped by kind, each group a
//     struct declared in the file that owns it: queues (engine.go),
//     kvState and testKnobs (kv.go), scheduling (schedule.go), runState
//     and priceCache (run.go), cohort (cohort.go), streakState
//     (streak.go), fastPaths (fastpaths.go), recording (steplog.go),
//     checkScratch (check.go), strictState (runner.go).
//   - schedule.go: Schedule (plan a step) and Complete (end it); the
//     scheduling rules below live here.
//   - scheduled.go: Scheduled, the requests of the step in flight by name.
//   - runner.go: Runner, the batched contract: its moves (thin wrappers
//     of the engine's code in run.go, continue.go, streak.go), its rules,
//     and the strict checks of them (SetStrict).
//   - policy.go: the waiting-queue order (FCFS, Priority, ShortestPrompt,
//     EarliestDeadline, PolicyFunc).
//   - kv.go, prefix.go: block accounting and the prefix cache.
//   - remote.go: Remote requests, whose prompt's KV another replica
//     computed (prefill/decode disaggregation): their blocks reserved by
//     the waiting loop (Plan.Reserved), Land, their admission after it.
//   - tier.go: Tier, KV blocks below HBM (vLLM's CPU offloading
//     connector): write-through stores, a lookup after the prefix
//     cache's, a load reserved as a Remote request's transfer is
//     (Reservation.Tier), and the landed request's prefill of the rest.
//   - run.go: a run of identical steps (decodes, and prompts' chunks)
//     planned as one move, its blocks taken step by step, collected
//     (Runner.CompleteUntil) and cut short (Runner.Truncate) where the
//     driver says something happened.
//   - residues.go: a run's blocks counted from the residues of its
//     requests' computed tokens modulo BlockSize, not by walking them.
//   - streak.go: Runner.OmitStreaks, outcomes that count the requests continuing
//     a decode streak instead of listing them (Outcome.Streak, Left).
//   - cohort.go: the decode cohort, the running requests in a streak kept
//     in aggregate (a clock, a finish queue, residue counts), so that a
//     step costs O(1) in them with a cost model that prices decode
//     contexts by their sum (costmodel.DecodeSum). A run of decode steps
//     priced by a model that reads no context (costmodel.ContextFree) is
//     priced by its first step alone.
//   - finqueue.go: the cohort's finish queue, a run of the members that
//     joined in the order they finish and a heap of the others.
//   - continue.go: Runner.Continue, the cohort's next run planned at the step
//     end before it (a member's finish, a prompt's last chunk), before
//     the driver's other events there, when nothing waits and the model
//     reads no decode context (Frozen, tables): a run goes on through a
//     finish, or after a prefill, without a new plan.
//   - fastpaths.go: which fast paths are on, decided once (New,
//     Runner.OmitStreaks, RecordSteps), and FastPaths, which says why one
//     is off; Runner.Continues and Runner.OmitsStreaks read the decision.
//   - view.go: what a router reads of a replica (Outstanding,
//     CachedPrefix; CachedPath over a prompt's PrefixPath, or CachedKeys
//     over its keys, either made once for a whole fleet) without
//     changing it. CachedKeys makes an engine keep its prefix cache by
//     blocks (its keys must be found); CachedPath does not.
//   - runpool.go: the prefix cache kept by runs of blocks, computing
//     only the keys KV events name, with the per-block pool of kv.go as
//     its twin.
//   - check.go: Check, the invariants tests run after every step.
//   - testdata/*.txt: scripted interactions with their expected decisions,
//     replayed by enginetest.RunScript (engine/enginetest).
//
// # Fast paths
//
// Runs of decode steps, residue counts, the decode cohort, Continue,
// omitted streaks (the last three and the runs reached through Runner), joins that do not cut a run and the FCFS run outside
// the waiting heap each compute what a step-by-step engine would, for
// less, and each has a slow twin that tests hold it to. Engine.FastPaths
// says which are on and why not; docs/fastpaths.md in the repository
// lists each with its conditions, its twin, its tests and what it saves.
//
// # The driver's loop
//
//	e, _ := engine.New(engine.Config{}, costmodel.Frozen{})
//	e.Add(now, engine.Request{Ref: 1, Input: 2000, Output: 200}) // or a rejection
//	plan, _ := e.Schedule(now)       // nil when nothing can run
//	out, _ := e.Complete(plan.End)   // tokens emitted, requests done
//
// # The basic contract
//
// A driver that keeps these rules, and uses only New, Add, Schedule,
// Complete, Abort, Land, the read-only queries (Waiting, Running, FreeBlocks,
// CachedBlocks, EvictableBlocks, Busy, AtSeqCap, Idle, Outstanding,
// CachedPrefix, CachedPath, CachedKeys, Config, FastPaths), Scheduled, Check, RecordSteps,
// SetAcceptor and Warm, gets every emit in every Outcome and every
// scheduled request named by Scheduled:
//
//  1. One step is in flight at most: Schedule plans one when none is
//     (ErrStepInFlight otherwise), or returns nil when the engine holds
//     no request, or when nothing it holds can run until the KV of a
//     Remote request lands (Land); Complete ends it (ErrNoStepInFlight
//     with none), at its End. Every plan is one step (Plan.Steps 1).
//  2. The instants a driver passes never go back: a Schedule is at or
//     after the End of the step completed before it, an Add or Abort at
//     or after the last instant named. The engine orders requests by
//     call order, not by instant.
//  3. Add, Abort and Land may come at any instant, a step in flight or
//     not (a landed request waits for the next plan). A
//     request added while a step is in flight waits for the next plan;
//     one aborted while in the step in flight has its work discarded
//     (Complete reports nothing for it). Abort of a request the engine no
//     longer holds is refused (ErrUnknownRef).
//  4. Every request Add accepts ends exactly once: by the Emit of its
//     last token (Emit.Done, after exactly its Output tokens, or
//     MaxModelLen − Input if fewer: Config.ServedOutput; a Remote
//     request, whose first token the prefill replica emitted, after
//     ServedOutput − 1, none of them First) or by an accepted Abort. A
//     Remote request's blocks are reserved by a plan (Plan.Reserved) and
//     it runs only after its Land. A rejected Add (the error says why) holds nothing.
//  5. While a step is in flight, Scheduled names each request it
//     scheduled once, with its tokens (they sum to Plan.Batch.Tokens()),
//     and an Outcome emits only for those, each emit listed.
//  6. A Plan's and an Outcome's slices are the engine's, valid until the
//     next Schedule or Complete.
//  7. RecordSteps is set before the first step; SetAcceptor (speculative
//     decoding) before the first step that drafts; Warm with no step in
//     flight (it is refused otherwise), before the run it warms.
//  8. After any call, Check finds every invariant holding, and the KV
//     blocks held and free add up to Config.KVBlocks.
//
// enginetest.Checker checks rules 3 to 5 and 8 after every call; the
// engine's own errors refuse what breaks rule 1.
//
// # The batched contract
//
// Runner adds the moves of several steps to the basic contract:
// ScheduleUntil (a run of identical decode steps, planned up to an
// instant before which nothing happens), CompleteUntil and Truncate (a
// run collected in part, or cut, where something does), SyncTo (a run's
// blocks brought up to an instant, before reading them), Continue (the
// decode cohort's next run, planned at a step end), JoinChangesNothing
// (a join that leaves the run in flight as planned) and OmitStreaks
// (outcomes that count decode streaks instead of listing them). Under
// it a move may be several steps, a continuing request is counted
// (Outcome.Streak) rather than listed, and a cohort's decodes are counted
// (Plan.Cohort) rather than listed in Plan.Batch; Scheduled still names
// every request. Its nine rules (time-forward,
// no-schedule-while-in-flight, move-in-flight, not-past-end,
// cut-only-runs, no-cut-behind-sync, continue-at-step-end,
// join-needs-move, omit-before-first-step) are written down on Runner
// once, and Runner.SetStrict checks each at every call, panicking with
// the rule's name; engine's and sim's fuzzers and differential tests run
// with it on.
//
// # Scheduling (chunked prefill, the default)
//
// One step is one forward pass with a token budget (MaxBatchedTokens) and a
// sequence cap (MaxSeqs). Running requests go first, in order: a decoding
// request asks for one token, a request still in prefill for
// min(remaining, ChunkCap, budget left). KV blocks are allocated for the
// tokens scheduled; when they run out the engine preempts the running
// request the policy would admit last (under FCFS the tail of the running
// list; under another policy it may be one the step already scheduled,
// which is taken back out of the step, its tokens returned to the budget,
// as vLLM's max(self.running, key=(priority, arrival_time)) does) by recompute:
// its blocks are freed and it returns to the waiting queue (under FCFS to
// its front, ahead of every waiting request, the last preempted first, as
// vLLM's deque prepends it; under another policy at its place by the
// policy, as vLLM's priority heap puts it), and when resumed it recomputes its prompt and every token it had emitted,
// less what it finds of its own blocks still cached, so the stall shows in
// its next inter-token gap. Only if nothing was preempted does the engine
// admit waiting requests (so a step whose first running request was its own
// victim is empty, as in vLLM: it lasts 1 µs, no forward pass, and each
// such step preempts one request, so progress follows), in policy order,
// while the budget, the sequence
// cap and the free blocks allow: the blocks for the request's whole known
// sequence must be free (AdmitOnFirstChunk: those for its next chunk),
// counting a cached block it would take out of the free queue as one it
// allocates, plus the watermark while anything runs. Admission stops at the
// first request that does not fit. At the end of the step every request
// whose existing tokens are all computed samples one token; a request
// leaves when it has emitted its output.
//
// With DisableChunkedPrefill (vLLM V1's enable_chunked_prefill=False) the
// running requests are scheduled the same way, decodes first; a waiting
// prompt whose remaining tokens exceed the budget left is not chunked:
// admission stops there (scheduler.py, the waiting loop's "if not
// enable_chunked_prefill and num_new_tokens > token_budget: break"). vLLM
// V0's prefill-only steps, in which decoders stall, are not modelled.
//
// # KV blocks and the prefix cache
//
// kv.go and prefix.go mirror vLLM V1's block pool: blocks nobody holds wait
// in one free queue in the order they were freed, cached or not; an
// allocation takes the head, evicting its content if it had any; a request
// returns its blocks last first, so a cached chain is evicted from its
// tail. Every full block has a content key chained on the previous
// block's: the workload's prefix ids make content shared across requests
// (the prompt's, and with Request.PrefixCoversOutput the output's too, as
// vLLM hashes generated tokens: a conversation's next turn finds the
// answer it resends), everything else is the request's own, which it
// finds again after a preemption. A waiting request references the leading blocks of its
// sequence that are cached (computing at least its last token); a block of
// shared content is cached when the step computing it is scheduled (a
// block of output by the decode that computes its last token: vLLM caches
// min(num_computed_tokens + num_new_tokens, request.num_tokens),
// kv_cache_manager.py allocate_slots), a
// second copy if another block caches that content already, as vLLM keeps
// every block it computed (block_pool.py, BlockHashToBlockMap: a key maps
// to several blocks, a lookup finds the oldest, an eviction drops one).
// Plan.Cached reports what each new request found.
//
// # MaxModelLen
//
// Config.MaxModelLen (vLLM's max_model_len; by default, and at most, the
// KV capacity KVBlocks × BlockSize, as vLLM will not start with more) is
// the longest sequence a request reaches. Add refuses a prompt of
// MaxModelLen tokens or more with ErrPromptTooLong, as vLLM's front end
// does (v1/engine/input_processor.py, _validate_prompt_len: a prompt
// longer than max_model_len, or equal to it, leaves no room for an output
// token). A request whose prompt + output exceeds it is served and
// stopped when its tokens reach MaxModelLen: vLLM's check_stop
// (v1/core/sched/utils.py) finishes it FINISHED_LENGTH_CAPPED once
// request.num_tokens >= max_model_len after the token that reaches it is
// appended, so it emits MaxModelLen − Input tokens (Config.ServedOutput),
// and the OpenAI front end gives it that max_tokens to begin with
// (entrypoints/utils.py get_max_tokens). Add cuts its Output there, so
// every fast path stops it where a step-by-step engine does. No request
// is refused for its KV: its peak, MaxModelLen − 1 tokens (the last token
// is sampled, never stored), fits the cache, so a request that needs the
// whole pool is served, after preempting the others if need be.
//
// # Naming a step's requests
//
// Plan.Batch gives a step's shape (chunks and decode contexts) without
// their requests. Engine.Scheduled names them: every request the step in
// flight scheduled, in scheduling order, with its tokens this step, its
// computed tokens before the step, the tokens the step found for it in the
// prefix cache, whether it decodes, whether it was aborted in flight, and
// its Kind: new (in Plan.Started), resumed (admitted again after a
// preemption) or continuing, as vLLM's SchedulerOutput tells
// scheduled_new_reqs from scheduled_cached_reqs (and, among those, the
// resumed ones; vllm/v1/core/sched/output.py). It is computed only when
// called and appends into the caller's buffer. It answers in every mode:
// with a decode cohort (Runner.OmitStreaks with a DecodeSum model) it
// walks the cohort's members too, which Plan.Batch.Decode does not list
// (Plan.Cohort counts them). The step observer's record carries the same
// list: with RecordSteps, Outcome.Shape.Scheduled names the requests of the
// steps it describes, filled into a buffer the engine reuses, so an
// engine that records no steps spends nothing on it (sim.Step.Requests,
// and the step log and Chrome trace of sim/report, name them by ID).
//
// # Speculative decoding
//
// With Config.SpeculativeTokens = K a decoding request schedules its last
// token and up to K drafts (never more than it has tokens left to emit,
// and within the step's budget, as vLLM's scheduler counts spec tokens
// against max_num_batched_tokens), takes KV for all of them (vLLM's
// lookahead slots, weighed in preemption like any allocation) and keeps
// the blocks of rejected drafts for its next step, as vLLM keeps a
// request's blocks when it rolls num_computed_tokens back. Plan.Batch
// carries each decode's verified positions (costmodel.Batch.Verify).
// The engine draws nothing: the driver's Acceptor says how many drafts a
// step accepted, and the request emits those plus the token sampled after
// them at the step's end, as one streamed chunk (Outcome.Drafts beside
// Outcome.Emitted). sim's i.i.d. acceptor of one α (internal/accept's
// IID) it calls without an interface call, on the driver's own streams.
// Speculative steps are planned one at a time, since the tokens a step
// emits depend on its acceptance. A driver that asked for OmitStreaks
// under costmodel.Frozen gets plans that count the leading decodes with
// drafts (Plan.Cohort) rather than list them: the speculative cohort,
// planned from what the last step's completion noted of them
// (speccohort.go).
//
// # What each of those is worth
//
// TestKVPressureToggles turns them back one at a time on the Atlas replica
// with 3,000 blocks instead of 28,672, 2,000 requests of 2,000/200 tokens
// (or 1,024 shared + 1,000 own prompt tokens, 80 % sharing one of 8
// system prompts):
//
//	load, sharing          vLLM V1   freed 1st→last  no own hits  FreeBlocksFirst  AdmitOnFirstChunk  all four
//	1.8 req/s, none        75, 1.48 s    87, 1.62 s   86, 1.62 s   75, 1.47 s      564, 1.52 s       625, 1.63 s
//	2.1 req/s, none       173, 23.8 s   172, 28.7 s  172, 28.7 s  173, 23.7 s      570, 24.9 s       737, 35.9 s
//	2.1 req/s, shared      29, 0.35 s    29, 0.37 s   29, 0.35 s   29, 0.35 s       53, 0.34 s        55, 0.35 s
//	2.5 req/s, shared      78, 1.40 s    97, 1.52 s   78, 1.42 s   74, 1.39 s      177, 1.37 s       182, 1.41 s
//
// (preemptions, mean TTFT). The full-sequence gate cuts preemptions two- to
// sevenfold; a preempted request's own hits, which need blocks freed last
// first to survive, cut the mean TTFT by up to 17 % near saturation; the
// free-queue order is worth under 1 %.
//
// # Differences from vLLM V1
//
// Checked against vLLM 0.19 (the version of the measured run in
// examples/validate/testdata, docs/data.md) and its main branch of 2026:
//   - Content comes from the workload's ids, not tokens: output blocks are
//     shared only when a request's ids cover its output
//     (Request.PrefixCoversOutput); vLLM always hashes output tokens
//     (request.py, append_output_token_ids → update_block_hashes).
//   - KVBlocks counts usable blocks; vLLM's pool also holds a null block.
//   - The watermark (vLLM added one to V1 in mid-2026, default 0) applies
//     to both admission checks while anything runs, as in vLLM's main; 0.19
//     has none.
//   - Freed blocks without content go to the tail of the free queue as in
//     0.19; vLLM's main (PR #42656, May 2026) puts them at the head.
//   - AdmitOnFirstChunk is vLLM before 0.19, whose scheduler_reserve_full_isl
//     (PR #37307, default on) gates admission on the whole sequence.
//   - A Remote request (remote.go; vLLM's KV connector, kv_consumer):
//     once its KV lands, its first step here decodes its first output
//     token at context Input, priced as a decode; vLLM instead recomputes
//     the last prompt token as a one-token prefill
//     (_update_waiting_for_remote_kv, num_computed_tokens −= 1 on a full
//     hit), because servesim's cost models would charge that token a
//     prefill chunk's fixed cost (Atlas: 20 ms) where the GPU does a
//     decode's work. Its reservation holds the blocks of its prompt and
//     of that first token (the whole sequence the gate counts), and
//     landed requests are admitted before the waiting queue under every
//     policy: a landed request then needs no block to run, so the
//     blocks that reservations hold never stall a replica with nothing
//     running. vLLM does the same under FCFS (skipped_waiting before
//     waiting) and compares the two queues' heads under priority
//     (_select_waiting_queue_for_scheduling, scheduler.py:1633 at
//     28be48fa, 1580 at fef56c18): a waiting request that outranks the
//     landed ones goes first there, and when it does not fit admission
//     stops ("if new_blocks is None: ... break", 733 / 757) while the
//     landed keep their blocks, which never clears with nothing running.
//     A differential run against vLLM's scheduler (fef56c18, a fake KV
//     connector, a stream of 50 % Remote requests under priority)
//     measured it: the schedules part at step 18, and the stream takes
//     14,651 steps with 243 preemptions here, 14,720 with 228 in vLLM.
//   - Abort of a Remote request whose KV is still in transfer frees its
//     blocks at once; vLLM's finish_requests keeps them
//     (delay_free_blocks, scheduler.py:1837 at 28be48fa, 1807 at
//     fef56c18) until the connector reports the transfer finished
//     (_update_from_kv_xfer_finished, 2156 / 2134), as the DMA still
//     writes into them. The driver (sim) reuses a request's Ref once it
//     ends, so the engine keeps nothing of an aborted request: the
//     blocks are free from the Abort, the transfer's end unreported
//     (Land refuses the aborted Ref).
//   - With DisableChunkedPrefill, vLLM requires max_num_batched_tokens >=
//     max_model_len at startup (config/scheduler.py); servesim, whose
//     MaxModelLen defaults to the whole KV capacity, instead refuses at
//     Add a request whose prompt + output − 1 tokens (output cut at
//     MaxModelLen) exceed MaxBatchedTokens (ErrExceedsBudget).
//   - A Tier (tier.go; vLLM's OffloadingConnector): the lookup stops one
//     token short of the known sequence; a block is loadable once the
//     plan that computes it is accepted; the tier's block is the engine's;
//     loads never fail; a request the tier asks to skip goes back to its
//     place in the waiting queue, not to vLLM's skipped_waiting; and
//     where vLLM would stall for good (landed loads holding blocks none of
//     them can be admitted with, nothing running), landed loads go back
//     to the queue; tier.go says each with vLLM's lines.
package engine
