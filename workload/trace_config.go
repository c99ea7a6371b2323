package workload

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Format is a trace file's syntax.
type Format int

const (
	CSV   Format = iota // a header row names the columns (RFC 4180)
	JSONL               // one JSON object per line; keys name the columns
)

func (f Format) String() string {
	if f == JSONL {
		return "jsonl"
	}
	return "csv"
}

// Columns maps a trace's columns (CSV header names, JSONL keys) to request
// fields. Arrival, Input and Output are required; the other names are
// optional: "" means none, and a named column missing from a CSV header or
// from a JSONL object is absent for that file or row.
type Columns struct {
	// Arrival holds each request's send instant: a number in ArrivalUnit
	// (0 means time.Second), or a date-time such as Azure's
	// "2023-11-16 18:15:46.6805900" or "2024-05-10 00:00:00.009930+00:00"
	// (space or T, 0–9 fractional digits, optional zone). Arrivals are
	// rebased so that the first kept row arrives at instant 0.
	Arrival     string
	ArrivalUnit time.Duration
	// Input and Output hold the prompt and response token counts. A row
	// with 0 in either is kept and marked Failed (BurstGPT marks failed
	// requests by 0 response tokens).
	Input, Output string
	// ID holds an unsigned request id; without it requests are numbered
	// 0, 1, 2, … in the order they are yielded.
	ID string
	// Conversation holds an unsigned integer, or any text (BurstGPT's
	// Session ID) hashed to one with FNV-64a; Turn an integer.
	Conversation, Turn string
	// Class holds a label (BurstGPT's Model); Priority an integer.
	Class, Priority string
	// Failed holds a boolean (true/false/1/0).
	Failed string
	// PrefixHashes holds block hash ids: a JSON array, or unsigned integers
	// separated by spaces, commas or semicolons. Each covers BlockTokens
	// prompt tokens (0 means 512, Mooncake's), or the number in the
	// BlockTokensColumn column when that is set.
	PrefixHashes      string
	BlockTokens       int
	BlockTokensColumn string
}

// Filter keeps only rows whose Column holds one of Values (exactly).
type Filter struct {
	Column string
	Values []string
}

// Transform changes a trace's clock. It is applied after filters, in this
// order: keep the rows whose (rebased) arrival lies in [WindowStart,
// WindowEnd), shift them so WindowStart is instant 0, then scale. Replay
// order is never changed. An instant scaled past time.Duration's range
// (about 292 years) ends the replay with a *ParseError wrapping
// ErrScaleOverflow, naming the transform and the row's line.
type Transform struct {
	// WindowStart and WindowEnd bound the replayed span (WindowEnd 0: to the
	// end of the trace).
	WindowStart, WindowEnd time.Duration
	// Slowdown multiplies every instant (SGLang's slowdown_factor): 2 replays
	// at half the load, 0.5 at twice the load. 0 means 1.
	Slowdown float64
	// TargetRate, when > 0, replaces Slowdown by the factor that makes the
	// mean rate TargetRate requests/s, with vLLM's convention that N
	// requests at rate λ end at N/λ: the last arrival is moved to N/λ. It
	// costs a first pass over the input, so the input must be a file or
	// seekable; the replay takes that pass's rows from memory when they
	// fit in 16 MiB, and reads the input again otherwise (memory bounded,
	// whatever the file's size). On JSON Lines that map no column but the
	// arrival, the token counts and the hash ids (Mooncake's), the pass
	// reads each line's keys and numbers but steps over its hash id list,
	// and the replay reads the input again: a malformed list is reported
	// by Next, at its line, when the replay reaches it (or ends before it
	// at an arrival scaled past time.Duration's range), not by NewTrace;
	// every other malformed line still is.
	TargetRate float64
}

func (t Transform) String() string {
	return fmt.Sprintf("window [%v, %v) slowdown %g target rate %g", t.WindowStart, t.WindowEnd, t.Slowdown, t.TargetRate)
}

// TraceConfig says how to read a trace. Azure, Mooncake and BurstGPT return
// the configurations of the public traces; any other CSV or JSONL file is
// read with its own Columns.
type TraceConfig struct {
	Format  Format
	Columns Columns
	Filters []Filter
	// Sort reads the whole trace into memory (about 120 bytes per request
	// plus 8 per hash id) and replays it in timestamp order, ties in file
	// order. Without it the reader streams in constant memory and a
	// timestamp earlier than the previous row's is an error (ErrUnsorted).
	Sort bool
	// KeepOrigin uses numeric arrivals as they are (instants from the start
	// of the run) instead of rebasing them on the first kept row; the
	// generic form sets it. Date-times are always rebased.
	KeepOrigin bool
	Transform  Transform
	// AllowEmpty accepts a replay of zero requests: an empty file, a CSV
	// header without rows, or rows that the Filters and the Transform
	// window all drop. Without it (the zero value) such a replay is an
	// error wrapping ErrEmptyTrace, returned by Next in place of io.EOF
	// (or by NewTrace, whose TargetRate pass reads the whole trace).
	AllowEmpty bool
	// AnyRate accepts a replay whose implied offered rate (requests over
	// its recorded span, Trace.Clock) lies outside [MinTraceRate,
	// MaxTraceRate]. Without it such a replay ends with an error wrapping
	// ErrImplausibleRate, returned by Next in place of io.EOF, that names
	// Columns.ArrivalUnit: the rate of a column read in the wrong unit is
	// off by a factor of a thousand or a million.
	AnyRate bool
	// Conversations says how a conversation's turns are timed. The zero
	// value is timestamp replay: every row at its recorded (transformed)
	// instant, read by NewTrace or OpenTrace. With Keep set, a turn waits
	// for its predecessor's answer: read it with NewReplay or OpenReplay,
	// which return a *ConversationTrace (NewTrace refuses it).
	Conversations ConversationReplay
}

// ConversationReplay keeps a trace's conversations: turn k+1 of a
// conversation is released at the later of its recorded instant (after
// the Transform) and the end of turn k plus MinThink, so a turn never
// overtakes its predecessor, as the answer it follows must exist first.
// The zero value is timestamp replay.
//
// A conversation is the rows that share a non-zero value of the
// Conversation column (0, like an empty or absent value, means none, as
// Request.Conversation says); its turns are ordered as the file is, by
// timestamp (ties in file order; a file going back in time is ErrUnsorted,
// or sorted first with TraceConfig.Sort). The Turn column is carried, and
// when mapped it is checked against that order (ErrTurnOrder), never used
// to reorder. Rows without a conversation, and first turns, keep their
// recorded instants. See ConversationTrace.
type ConversationReplay struct {
	// Keep turns conversation-keeping replay on.
	Keep bool
	// MinThink is the least time between a turn's end and the release of
	// the next turn (>= 0; 0: the next turn may arrive the instant the
	// answer ends), in the replay's clock: the Transform does not scale
	// it. It is a floor, not an added delay: a turn recorded later than
	// end + MinThink arrives at its recorded instant. Only with Keep.
	MinThink time.Duration
	// Answers is the number of conversations whose last answer's ids the
	// replay remembers, so that a turn that resends its predecessor's
	// prompt and answer (as chat clients do) finds the answer in the
	// prefix cache, as on vLLM, which caches generated tokens: each turn
	// of a row with PrefixHashes is given ids over its answer
	// (HashesCoverOutput), and a turn that resends it the same ids (see
	// ConversationTrace.Resent for the rule). 0 means DefaultAnswers
	// (65,536 conversations, 8 bytes per id of each one's last turn); a
	// negative value keeps every row's ids as the trace gives them, over
	// its prompt only, so that no answer is ever found. Only with Keep;
	// timestamp replay keeps the trace's ids.
	Answers int
}

// String names the replay, for a card: "timestamp replay" or
// "conversation-keeping replay" with its minimum think time.
func (c ConversationReplay) String() string {
	if !c.Keep {
		return "timestamp replay (every row at its recorded instant)"
	}
	return fmt.Sprintf("conversation-keeping replay (a turn is released at the later of its recorded instant and its predecessor's end + %v minimum think time)", c.MinThink)
}

// Validate reports every problem with the configuration.
func (c TraceConfig) Validate() error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("workload: TraceConfig."+format, args...))
	}
	if c.Format != CSV && c.Format != JSONL {
		add("Format must be CSV or JSONL, got %d", int(c.Format))
	}
	col := c.Columns
	if col.Arrival == "" || col.Input == "" || col.Output == "" {
		add("Columns.Arrival, Input and Output must be named, got %q, %q, %q", col.Arrival, col.Input, col.Output)
	}
	if col.ArrivalUnit < 0 || col.BlockTokens < 0 {
		add("Columns.ArrivalUnit and BlockTokens must be >= 0, got %v and %d", col.ArrivalUnit, col.BlockTokens)
	}
	for i, f := range c.Filters {
		if f.Column == "" {
			add("Filters[%d].Column is empty", i)
		}
	}
	t := c.Transform
	if t.WindowStart < 0 || t.WindowEnd < 0 || t.WindowEnd != 0 && t.WindowEnd <= t.WindowStart {
		add("Transform window must satisfy 0 <= WindowStart < WindowEnd (or WindowEnd 0), got [%v, %v)", t.WindowStart, t.WindowEnd)
	}
	if t.Slowdown < 0 || math.IsNaN(t.Slowdown) || math.IsInf(t.Slowdown, 0) {
		add("Transform.Slowdown must be > 0 (or 0 for 1), got %v", t.Slowdown)
	}
	if t.TargetRate < 0 || math.IsNaN(t.TargetRate) || math.IsInf(t.TargetRate, 0) {
		add("Transform.TargetRate must be >= 0, got %v", t.TargetRate)
	}
	if t.TargetRate > 0 && t.Slowdown != 0 {
		add("Transform: set Slowdown or TargetRate, not both")
	}
	if cr := c.Conversations; cr.MinThink < 0 {
		add("Conversations.MinThink must be >= 0, got %v", cr.MinThink)
	} else if cr.MinThink > 0 && !cr.Keep {
		add("Conversations.MinThink (%v) applies only with Conversations.Keep, which is not set", cr.MinThink)
	}
	if cr := c.Conversations; cr.Answers != 0 && !cr.Keep {
		add("Conversations.Answers (%d) applies only with Conversations.Keep, which is not set", cr.Answers)
	}
	return errors.Join(errs...)
}

// Azure reads the Azure LLM inference traces, 2023 (Splitwise) and 2024
// (DynamoLLM): CSV "TIMESTAMP,ContextTokens,GeneratedTokens".
func Azure() TraceConfig {
	return TraceConfig{Format: CSV, Columns: Columns{Arrival: "TIMESTAMP", Input: "ContextTokens", Output: "GeneratedTokens"}}
}

// Mooncake reads Mooncake's JSONL traces ({"timestamp" in ms,
// "input_length", "output_length", "hash_ids"}); blockTokens is the tokens
// per hash id (0 means 512, the published traces').
func Mooncake(blockTokens int) TraceConfig {
	return TraceConfig{Format: JSONL, Columns: Columns{Arrival: "timestamp", ArrivalUnit: time.Millisecond,
		Input: "input_length", Output: "output_length", PrefixHashes: "hash_ids", BlockTokens: blockTokens}}
}

// BurstGPT reads BurstGPT's CSV, with 6 columns ("Timestamp,Model,Request
// tokens,Response tokens,Total tokens,Log Type") or 8 (adding "Session ID"
// and "Elapsed time" after Timestamp). Timestamps are seconds; Model becomes
// the Class, Session ID (when present) the Conversation; 0 response tokens
// mark a failed request. Only rows whose Model is in models and whose Log
// Type is in logTypes are kept (nil: all), e.g. BurstGPT([]string{"GPT-4"},
// []string{"Conversation log"}).
func BurstGPT(models, logTypes []string) TraceConfig {
	c := TraceConfig{Format: CSV, Columns: Columns{Arrival: "Timestamp", Input: "Request tokens",
		Output: "Response tokens", Class: "Model", Conversation: "Session ID"}}
	if models != nil {
		c.Filters = append(c.Filters, Filter{Column: "Model", Values: models})
	}
	if logTypes != nil {
		c.Filters = append(c.Filters, Filter{Column: "Log Type", Values: logTypes})
	}
	return c
}
