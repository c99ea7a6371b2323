package report

import (
	"strconv"
	"time"

	"github.com/servesim/servesim/sim"
)

// fieldSink receives one record's fields in schema order. The JSONL and
// CSV writers are sinks, so both formats share one schema (eachField).
type fieldSink interface {
	str(key, v string)
	num(key string, v int64)
	flag(key string, v bool)
	// dur writes an instant or a duration in seconds; sim.Never is null
	// (JSON) or an empty cell (CSV).
	dur(key string, d time.Duration)
	// gaps writes the inter-token gaps of the token instants in one
	// series (eachGap), in seconds; tokens is nil when the run did not
	// keep them.
	gaps(key string, tokens []time.Duration, series sim.ITLSeries)
}

// eachField hands r's fields to s in the order of the event schema (see
// the package doc): vLLM's names where vLLM has the figure, servesim's own
// otherwise.
func eachField(r *sim.Record, s fieldSink) {
	s.num("id", int64(r.ID))
	s.num("conversation", int64(r.Conversation))
	s.num("turn", int64(r.Turn))
	s.str("class", r.Class)
	s.num("replica", int64(r.Replica))
	s.flag("measured", r.Measured)
	s.str("status", r.Status.String())
	s.str("reason", r.Reason)
	s.str("error", errorText(r))
	s.dur("scheduled", r.Scheduled)
	s.dur("arrival", r.Arrival)
	s.dur("finish", r.Finish)
	s.dur("client_wait", clientWait(r))
	s.dur("queue_delay", r.QueueDelay())
	s.dur("ttft", r.TTFT())
	s.dur("tpot", r.TPOT())
	s.dur("e2el", r.E2E())
	s.num("input_len", int64(r.Input))
	s.num("output_len", int64(r.Emitted))
	s.num("requested_output_len", int64(r.Output))
	s.num("cached_tokens", int64(r.Cached))
	s.num("preemptions", int64(r.Preemptions))
	s.dur("max_itl", maxITL(r))
	s.dur("max_token_itl", maxTokenITL(r))
	s.num("itl_over_budget", int64(r.ITLOver))
	s.num("draft_tokens", int64(r.Drafted))
	s.num("accepted_tokens", int64(r.Accepted))
	s.gaps("itl", r.Tokens, sim.PerChunk)
	s.gaps("token_itl", r.Tokens, sim.PerToken)
}

// errorText is vLLM's per-request error: empty when the request succeeded,
// else why it did not.
func errorText(r *sim.Record) string {
	switch {
	case r.Status == sim.StatusOK:
		return ""
	case r.Reason != "":
		return r.Reason
	}
	return r.Status.String()
}

// clientWait is how long r waited client-side for a slot under
// sim.Config.MaxConcurrency (0 without a cap), or Never when it was never
// sent: still waiting when the run stopped, or recorded as failed in the
// trace.
func clientWait(r *sim.Record) time.Duration {
	if !r.Sent {
		return sim.Never
	}
	return r.Arrival - r.Scheduled
}

// maxITL is the largest gap, or Never with fewer than two tokens.
func maxITL(r *sim.Record) time.Duration {
	if r.Emitted < 2 {
		return sim.Never
	}
	return r.MaxITL
}

// maxTokenITL is the largest retokenized gap, or Never with fewer than
// two tokens.
func maxTokenITL(r *sim.Record) time.Duration {
	if r.Emitted < 2 {
		return sim.Never
	}
	return r.MaxTokenITL
}

// eachGap hands f the inter-token gaps of the token instants in series.
// A streamed chunk is the tokens emitted at one instant (several under
// speculative decoding, one otherwise). PerChunk is one gap per chunk
// after the first, from the previous chunk's instant: what a streaming
// client sees and vLLM's bench serve records per request. PerToken is
// SGLang's retokenized series (use_retokenized_itl): each chunk's gap
// divided by its tokens, once per token, truncated to the nanosecond as
// sim.Record.MaxTokenITL is (a chunk's gap exceeds its tokens × their gap
// by less than a nanosecond a token). Without speculative decoding the two
// series are the same.
func eachGap(tokens []time.Duration, series sim.ITLSeries, f func(gap time.Duration)) {
	if len(tokens) == 0 {
		return
	}
	prev, i := tokens[0], 1
	for i < len(tokens) && tokens[i] == prev {
		i++ // the rest of the first chunk: no gap before it
	}
	for i < len(tokens) {
		at, j := tokens[i], i
		for j < len(tokens) && tokens[j] == at {
			j++
		}
		gap, n := at-prev, j-i
		if series == sim.PerToken {
			for range n {
				f(gap / time.Duration(n))
			}
		} else {
			f(gap)
		}
		prev, i = at, j
	}
}

// EventColumns are the event schema's field names in order: the CSV header and
// the JSONL keys (a JSONL line omits "itl" and "token_itl" when tokens
// were not kept).
func EventColumns() []string {
	var h header
	eachField(&sim.Record{}, &h)
	return h
}

type header []string

func (h *header) str(key, _ string)               { *h = append(*h, key) }
func (h *header) num(key string, _ int64)         { *h = append(*h, key) }
func (h *header) flag(key string, _ bool)         { *h = append(*h, key) }
func (h *header) dur(key string, _ time.Duration) { *h = append(*h, key) }
func (h *header) gaps(key string, _ []time.Duration, _ sim.ITLSeries) {
	*h = append(*h, key)
}

// appendSeconds appends d in seconds as an exact decimal (nanosecond
// resolution, trailing zeros trimmed): 90ms is "0.09", 2s is "2".
func appendSeconds(b []byte, d time.Duration) []byte {
	if d < 0 {
		b = append(b, '-')
		d = -d
	}
	sec, ns := int64(d/time.Second), int64(d%time.Second)
	b = strconv.AppendInt(b, sec, 10)
	if ns == 0 {
		return b
	}
	var frac [9]byte
	for i := 8; i >= 0; i-- {
		frac[i] = byte('0' + ns%10)
		ns /= 10
	}
	n := 9
	for frac[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, frac[:n]...)
}
