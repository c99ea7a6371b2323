// Package workload yields the requests offered to a serving system: arrival
// processes, length distributions and their correlation, prefix reuse,
// multi-turn conversations, and streaming readers of real traces.
//
// # Reading guide
//
// The seam (request.go, stream.go):
//   - Request is one offered request; Source yields them one at a time,
//     io.EOF after the last.
//   - Feedback is how a driver tells a closed-loop source that a request
//     ended, so it can issue the next; such a source returns ErrWaiting
//     while every possible next request waits for an answer.
//   - NewStream derives a named random stream from a seed: every consumer
//     of randomness has its own, and nothing draws from a global source.
//   - Loop labels a workload; LoopOf(src) says ClosedLoop iff the source
//     takes Feedback. Every source also has a Loop method.
//   - Paced is a Feedback source whose requests also keep instants of
//     their own (a conversation-keeping trace replay): Next yields those
//     in arrival order, to be pulled one at a time like an open-loop
//     source, and Released the ones feedback timed. A driver that pulls
//     it that way holds only what is due next; one that drains it like
//     any Feedback source is also correct but holds every request that
//     does not wait.
//
// In memory (requests.go): Requests is a list of requests in arrival
// order whose Validate names every problem by index; NewSlice makes it an
// open-loop Source (Slice, which Reset rewinds for the next run), and
// ReadAll drains any open-loop source into one.
//
// Synthetic open-loop workloads (synthetic.go, arrival.go, schedule.go):
//   - NewPoisson(seed, rate, count, lengths) is the simplest source:
//     Poisson arrivals, lengths from any Joint (Fixed(in, out) for fixed).
//   - NewSynthetic(Synthetic{…}) takes an Arrival (Poisson, Gamma with a
//     Burstiness, Periodic; vLLM's Normalize; a linear or exponential Ramp;
//     or a piecewise Schedule such as Diurnal), a Joint for lengths, a
//     PrefixReuse, a Count and/or a Duration.
//
// Lengths (length.go, length_dist.go, joint.go):
//   - Length: Constant, Uniform (vLLM's range ratio), Normal and LogNormal
//     (clipped, from gonum's distuv), Zipf, Empirical.
//   - Joint: Independent, Resample (pairs from a trace, correlation kept
//     exactly; ResampleFrom reads them), Copula (a Gaussian copula over any
//     two Lengths with a target Spearman correlation).
//
// Prefixes (prefix.go, prefix_fleet.go):
//   - PrefixReuse gives each prompt a system prompt of PrefixTokens tokens,
//     shared with a Probability among Groups groups, followed by the
//     sampled input as the request's own suffix; it is expressed as
//     Mooncake-style block hash ids, one per BlockTokens prompt tokens.
//     Two requests of the same group share exactly the prompt's full
//     blocks, a common leading run of ids; every other id is fresh.
//   - Popularity: uniform over the groups (Zipf 0, one IntN from the
//     "prefix" stream, as before the field existed: the same seed gives
//     the same bytes), or Zipf of exponent s, P(group k) ∝ 1/(k+1)^s,
//     drawn with one Float64 from the same stream through an exact
//     inverse-CDF table over the groups. Not math/rand/v2's Zipf, which
//     needs s > 1 while measured popularities often have s <= 1; not gonum,
//     whose distuv has no Zipf and whose Categorical binds its random
//     source when built, while each conversation draws from its own
//     stream.
//   - Presets: LowReuse and HighReuse are illustrative. FleetLowReuse and
//     FleetHighReuse are sized for the routing experiment against the
//     Atlas TP4 KV pool (458,752 tokens a replica, 1,835,008 for 4):
//     FleetHighReuse's 256 prefixes of 4,096 tokens with Zipf s = 0.8 are
//     a working set of 1,048,576 tokens, more than one replica holds and
//     less than the fleet does, where routing matters; FleetLowReuse's 64
//     flat-popular 512-token prompts shared by one request in four
//     (32,768 tokens) fit every replica, where routing cannot gain
//     much. Their docs give the arithmetic; String prints their
//     parameters.
//
// Closed loop (closed.go, conversation.go, think.go):
//   - NewClients: N clients, each sending its next request when the
//     previous ends plus a Think time.
//   - NewConversations: multi-turn chats; first turns arrive open-loop,
//     each follow-up is released by Feedback with prompt = previous prompt +
//     previous answer + new user tokens. Each turn's ids cover its prompt
//     and its answer (HashesCoverOutput), and the next turn carries over
//     every full block of both (so a replica that served a turn serves the
//     next one's history, the answer included, from its cache, as vLLM
//     does: session affinity pays).
//
// Traces (trace_config.go, trace.go, trace_rows.go, trace_parse.go,
// trace_write.go):
//   - NewTrace / OpenTrace read a TraceConfig: Azure() (2023 and 2024
//     timestamps), Mooncake(blockTokens), BurstGPT(models, logTypes) (6 or 8
//     columns), or any CSV/JSONL through Columns. A Transform takes a time
//     window, a Slowdown, or a TargetRate; an instant it scales past
//     time.Duration's range is an error (ErrScaleOverflow), never a
//     wrapped-around arrival.
//   - Readers stream one row per Next: memory does not grow with the file
//     (BenchmarkTraceStreaming). A malformed line is a *ParseError naming
//     file, line and field, wrapping ErrMalformed, and saying whether the
//     value is not a number, negative, or out of the range of its field's
//     type (an arrival beyond time.Duration's 292 years, a token count
//     beyond an int32, an id beyond a uint64); a timestamp going back
//     wraps ErrUnsorted unless TraceConfig.Sort is set, which holds the
//     whole trace in memory (about 120 bytes a request plus 8 per hash id).
//   - Rows with 0 input or 0 output tokens are kept and marked Failed, so a
//     failed request stays in the denominator instead of vanishing.
//   - A replay of zero requests (an empty file, a CSV header without
//     rows, or rows the Filters and the window all drop) is an error
//     wrapping ErrEmptyTrace, naming the file and what dropped the rows,
//     unless TraceConfig.AllowEmpty accepts it: an empty replay would
//     otherwise measure nothing and still be reported.
//   - A reader reports the unit it reads a numeric arrival column in and
//     the offered rate that implies, requests over the recorded span
//     (Trace.Clock, a TraceClock; trace_clock.go). A replay whose implied
//     rate lies below one request a day or above a million a second
//     (MinTraceRate, MaxTraceRate) ends with an error wrapping
//     ErrImplausibleRate in place of io.EOF, naming the file, the unit
//     assumed, Columns.ArrivalUnit and the unit that would give a
//     plausible rate: a microsecond column read as seconds would
//     otherwise replay at a millionth of its load. TraceConfig.AnyRate
//     accepts it; the generic form, whose column names its unit, does.
//   - A UTF-8 byte order mark at the start of a file (as spreadsheet
//     programs write it) is skipped, in CSV and JSONL alike.
//   - A CSV header naming a column the configuration reads (a mapped
//     column or a filter's) twice is refused, naming both positions:
//     which one to read would be a guess. Duplicates of unread columns
//     are ignored.
//   - A Git LFS pointer (a file whose first line is "version
//     https://git-lfs.github.com/spec/v1", committed in place of a trace
//     whose content was never fetched) is a *ParseError wrapping
//     ErrLFSPointer that says so and suggests `git lfs pull`.
//   - TraceWriter / WriteTrace write the generic form, which Generic(format)
//     reads back exactly.
//   - Replay order: timestamp replay by default (every row at its
//     recorded instant, SGLang's use_trace_timestamps), or, with
//     TraceConfig.Conversations{Keep, MinThink}, conversation-keeping
//     replay (trace_conversation.go): turn k+1 of a conversation is
//     released at the later of its recorded (transformed) instant and turn
//     k's end + MinThink, so a follow-up never arrives before the answer
//     it follows, as the chapter's replay must preserve. NewReplay /
//     OpenReplay return the right source for the configuration (a *Trace,
//     or a *ConversationTrace that takes Feedback); NewTrace refuses Keep.
//     Conversations are the rows sharing a non-zero Conversation value,
//     their turns ordered by timestamp (file order; the Turn column, when
//     mapped, is checked against it: ErrTurnOrder names the line). Rows
//     without a conversation and first turns keep their instants; every
//     other field is timestamp replay's, but for the prefix ids of turns:
//     each goes on over its answer (HashesCoverOutput), and a turn that
//     resends its predecessor's prompt and answer carries that answer's
//     ids (trace_conversation_answers.go, ConversationReplay.Answers), so
//     it finds the answer in the prefix cache as on vLLM, which caches
//     generated tokens; a trace gives ids over prompts only, and the
//     replay streams, so an answer's ids are the replay's own. A failed turn does
//     not end its conversation (its successors are recorded traffic). It
//     streams: it holds only the turns waiting for an unfinished
//     predecessor (ConversationTrace.Held) and the conversations still
//     active. String says which replay was used, for a card, and
//     FingerprintFile tells the two apart.
//
// Other formats (csvrows.go): CSVRows reads a CSV trace of a format no
// TraceConfig describes, by column name, with the trace readers' checks
// and *ParseErrors; TraceClock.Check is their rate check. Package
// workload/blis reads and writes BLIS's TraceV2 with them.
//
// Fingerprints (fingerprint.go): Fingerprint(src) or a Hasher fed the
// requests of a run is sha256 over the request stream; FingerprintFile is
// sha256 over a trace's bytes plus its TraceConfig. Both go on benchmark
// cards.
//
// # Common random numbers
//
// Every arrival process draws unit-rate gaps (mean 1) from the stream
// "arrivals" and divides them by the rate, so the same seed at rate λ and
// at rate 2λ yields the same requests (same ids, lengths, prefixes) with
// every arrival instant halved, to the nanosecond; the same holds for a
// ramp with both ends doubled. Lengths draw from "input" and "output",
// prefixes from "prefix", so changing one distribution leaves the others'
// draws untouched. A goodput curve swept over load therefore moves only
// with the load, not with resampling noise. A Schedule maps the same unit
// process through the inverse of its cumulative rate, so it keeps the
// same requests too, at instants that depend on the schedule's shape.
// Closed-loop sources give each client (or conversation) its own streams,
// so client i's k-th request is the same whatever the system under test
// does.
//
// # What this mirrors, and where it differs
//
//   - vLLM's vllm/benchmarks/serve.py, get_request: gaps are gamma of shape
//     burstiness and scale 1/(rate·burstiness) (burstiness 1: exponential;
//     inf: constant 1/rate); delays are cumulative from the first request,
//     so the first request arrives after one gap, not at 0; without
//     ramp-up the schedule is rescaled so the last of N requests leaves at
//     N/rate (Arrival.Normalize, optional here). _get_current_request_rate:
//     request i's rate at progress i/max(N−1, 1), linear start+(end−start)·p
//     or exponential start·(end/start)^p, never normalised.
//   - vLLM's RandomDataset (vllm/benchmarks/datasets/random.py): lengths
//     uniform on [floor(L·(1−r)), ceil(L·(1+r))], r in [0, 1), the output's
//     low end at least 1; a fixed prefix_len prepended to every prompt
//     (here PrefixReuse.PrefixTokens).
//   - vLLM's BurstGPTDataset keeps Model "GPT-4" and drops rows with 0
//     response tokens; here the model filter is yours and those rows are
//     kept as Failed. Columns follow BurstGPT's README (Timestamp in
//     seconds, Model, Request tokens, Response tokens, Total tokens, Log
//     Type) and the release with Session ID and Elapsed time.
//   - SGLang's trace replay with slowdown_factor: Transform.Slowdown.
//     Conversation-keeping replay is what vLLM's benchmarks/multi_turn
//     does for generated conversations (a turn is sent after the previous
//     answer), applied to a trace's recorded turns; unlike it, a failed
//     turn does not end the conversation, and a turn waits for its
//     recorded instant as well.
//   - Azure LLM inference traces: 2023 (Splitwise, ISCA 2024) timestamps
//     like "2023-11-16 18:15:46.6805900", 2024 (DynamoLLM, HPCA 2025) like
//     "2024-05-10 00:00:00.009930+00:00" with mixed fractional digits.
//   - Mooncake's FAST'25 traces: timestamp in ms, input_length,
//     output_length, hash_ids with one id per 512-token block.
//
// The package is a leaf: it knows nothing of engines or cost models.
package workload
