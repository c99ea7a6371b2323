package report

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servesim/servesim/sim"
)

// optional are the columns an event may lack (see ReadJSONL).
var optional = map[string]bool{"itl": true, "token_itl": true, "max_token_itl": true, "draft_tokens": true, "accepted_tokens": true}

// recordOf builds a record from one event's cells; its error starts with
// ", column …" to follow the line.
func recordOf(cells map[string]cell) (sim.Record, error) {
	var unknown []string
	for k := range cells {
		if _, ok := columnKinds[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return sim.Record{}, fmt.Errorf(", column %q: unknown column (the columns are %s)", unknown[0], strings.Join(EventColumns(), ", "))
	}
	g := getter{cells: cells}
	rec := sim.Record{
		ID: uint64(g.num("id", 0)), Conversation: uint64(g.num("conversation", 0)), Turn: int(g.num("turn", 0)),
		Class: g.str("class"), Replica: int(g.num("replica", sim.Unrouted)), Measured: g.flag("measured"),
		Status: g.status("status"), Reason: g.str("reason"),
		Scheduled: g.instant("scheduled", false), Arrival: g.instant("arrival", false), Finish: g.instant("finish", false),
		Input: int(g.num("input_len", 0)), Emitted: int(g.num("output_len", 0)), Output: int(g.num("requested_output_len", 0)),
		Cached: int(g.num("cached_tokens", 0)), Preemptions: int(g.num("preemptions", 0)), ITLOver: int(g.num("itl_over_budget", 0)),
	}
	rec.Sent = g.instant("client_wait", true) != sim.Never
	// A request that ended ok with fewer tokens than it asked for was cut
	// at MaxModelLen, as the run's Record said.
	rec.LengthCapped = rec.Status == sim.StatusOK && rec.Emitted < rec.Output
	rec.FirstScheduled = after(rec.Arrival, g.instant("queue_delay", true))
	rec.FirstToken = after(rec.Arrival, g.instant("ttft", true))
	rec.LastToken = after(rec.Arrival, g.instant("e2el", true))
	rec.MaxITL = max(0, g.instant("max_itl", true))
	rec.MaxTokenITL = rec.MaxITL
	if g.has("max_token_itl") {
		rec.MaxTokenITL = max(0, g.instant("max_token_itl", true))
	}
	if g.has("draft_tokens") {
		rec.Drafted = int(g.num("draft_tokens", 0))
	}
	if g.has("accepted_tokens") {
		rec.Accepted = int(g.num("accepted_tokens", 0))
	}
	if g.err != nil {
		return rec, g.err
	}
	tokens, err := g.tokens(&rec)
	if err != nil {
		return rec, err
	}
	rec.Tokens = tokens
	return rec, nil
}

// after is base + d, or Never when d is.
func after(base, d time.Duration) time.Duration {
	if d == sim.Never {
		return sim.Never
	}
	return base + d
}

// getter reads typed values from cells, keeping the first error (which
// names its column).
type getter struct {
	cells map[string]cell
	err   error
}

func (g *getter) has(k string) bool { _, ok := g.cells[k]; return ok }

// get returns column k's cell, or notes it missing.
func (g *getter) get(k string) (cell, bool) {
	c, ok := g.cells[k]
	if !ok && !optional[k] && g.err == nil {
		g.err = fmt.Errorf(", column %q is missing", k)
	}
	return c, ok && g.err == nil
}

func (g *getter) fail(k string, format string, a ...any) {
	if g.err == nil {
		g.err = fmt.Errorf(", column %q: "+format, append([]any{k}, a...)...)
	}
}

// num reads a whole number at least lo.
func (g *getter) num(k string, lo int64) int64 {
	c, ok := g.get(k)
	if !ok {
		return 0
	}
	if c.quoted || c.null || c.isList {
		g.fail(k, "want a whole number, got %s", c.show())
		return 0
	}
	if k == "id" || k == "conversation" { // written from uint64
		v, err := strconv.ParseUint(c.text, 10, 64)
		if err != nil {
			g.fail(k, "want a whole number >= 0, got %s", c.show())
		}
		return int64(v)
	}
	v, err := strconv.ParseInt(c.text, 10, 64)
	if err != nil || v < lo {
		g.fail(k, "want a whole number >= %d, got %s", lo, c.show())
	}
	return v
}

func (g *getter) str(k string) string {
	c, ok := g.get(k)
	if ok && !c.quoted {
		g.fail(k, "want a string, got %s", c.show())
	}
	return c.text
}

func (g *getter) flag(k string) bool {
	c, ok := g.get(k)
	if !ok {
		return false
	}
	v, err := strconv.ParseBool(c.text)
	if err != nil || c.quoted || (c.text != "true" && c.text != "false") {
		g.fail(k, "want true or false, got %s", c.show())
	}
	return v
}

func (g *getter) status(k string) sim.Status {
	name := g.str(k)
	for s := sim.StatusOK; s <= sim.StatusExpired; s++ {
		if s.String() == name {
			return s
		}
	}
	if g.err == nil {
		g.fail(k, "%q is not a status (ok, rejected, timed_out, errored, unfinished; a gateway's throttled, shed, queue_full, expired)", name)
	}
	return 0
}

// instant reads seconds as an exact duration; null is sim.Never where
// nullable.
func (g *getter) instant(k string, nullable bool) time.Duration {
	c, ok := g.get(k)
	switch {
	case !ok:
		return sim.Never
	case c.null && nullable:
		return sim.Never
	case c.null || c.quoted || c.isList:
		g.fail(k, "want seconds, got %s", c.show())
		return sim.Never
	}
	d, err := parseSeconds(c.text)
	if err != nil {
		g.fail(k, "%v", err)
	}
	return d
}

// gaps reads a list of gaps in seconds; ok is false when the column is
// absent (token instants not kept).
func (g *getter) gaps(k string) (gaps []time.Duration, ok bool) {
	c, present := g.get(k)
	if !present || c.csvEmpty {
		return nil, false
	}
	if !c.isList {
		g.fail(k, "want a list of seconds, got %s", c.show())
		return nil, false
	}
	out := make([]time.Duration, len(c.list))
	for i, s := range c.list {
		d, err := parseSeconds(s)
		if err != nil || d < 0 {
			g.fail(k, "gap %d: want seconds >= 0, got %q", i, s)
			return nil, false
		}
		out[i] = d
	}
	return out, true
}

// tokens rebuilds the token instants from the gaps: each streamed
// chunk's instant from "itl", its tokens from "token_itl" (each chunk's
// gap over its tokens, once per token), the first chunk's the rest of
// output_len. nil when the events kept no instants.
func (g *getter) tokens(rec *sim.Record) ([]time.Duration, error) {
	itl, ok := g.gaps("itl")
	tok, perToken := g.gaps("token_itl")
	if g.err != nil || !ok {
		if g.err == nil && rec.Emitted == 1 && rec.FirstToken != sim.Never && !g.has("itl") && g.has("token_itl") {
			return nil, nil
		}
		return nil, g.err
	}
	if rec.FirstToken == sim.Never {
		if len(itl) > 0 || rec.Emitted > 0 {
			return nil, errors.New(`, column "itl": gaps of a request without a first token (ttft null)`)
		}
		return []time.Duration{}, nil
	}
	sizes := make([]int, len(itl))
	pos := 0
	for i, gap := range itl {
		n := 1
		if perToken {
			var err error
			if n, err = chunkTokens(gap, tok[pos:]); err != nil {
				return nil, fmt.Errorf(`, column "token_itl": chunk %d: %w`, i+1, err)
			}
		}
		sizes[i], pos = n, pos+n
	}
	if perToken && pos != len(tok) {
		return nil, fmt.Errorf(`, column "token_itl": %d gaps for the %d tokens "itl"'s chunks carry`, len(tok), pos)
	}
	first := rec.Emitted - pos
	if first < 1 {
		return nil, fmt.Errorf(`, column "output_len": %d tokens, fewer than the %d the gaps account for`, rec.Emitted, pos+1)
	}
	out := make([]time.Duration, 0, rec.Emitted)
	at := rec.FirstToken
	for range first {
		out = append(out, at)
	}
	for i, gap := range itl {
		at += gap
		for range sizes[i] {
			out = append(out, at)
		}
	}
	return out, nil
}

// chunkTokens is how many tokens a chunk after a gap carried: the n whose
// next n retokenized gaps are each gap / n.
func chunkTokens(gap time.Duration, tok []time.Duration) (int, error) {
	for n := 1; n <= len(tok); n++ {
		if tok[0] != gap/time.Duration(n) {
			continue
		}
		for _, t := range tok[1:n] {
			if t != tok[0] {
				return 0, fmt.Errorf("its gap %v over %d tokens is %v, but the series has %v", gap, n, tok[0], t)
			}
		}
		return n, nil
	}
	return 0, fmt.Errorf("no token count divides its gap %v into the series' %v", gap, tok[:min(1, len(tok))])
}

// parseSeconds reads a decimal number of seconds exactly, to the
// nanosecond, as appendSeconds writes them.
func parseSeconds(s string) (time.Duration, error) {
	bad := fmt.Errorf("want seconds (a decimal such as 0.045), got %q", s)
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if whole == "" || len(frac) > 9 || strings.ContainsAny(whole+frac, "+-eE") {
		return 0, bad
	}
	sec, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || sec > int64(sim.Unbounded/time.Second) {
		return 0, bad
	}
	var ns int64
	if frac != "" {
		if ns, err = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
			return 0, bad
		}
	}
	d := time.Duration(sec)*time.Second + time.Duration(ns)
	if d < 0 {
		return 0, bad
	}
	if neg {
		d = -d
	}
	return d, nil
}

// show prints a cell for an error.
func (c cell) show() string {
	switch {
	case c.null:
		return "null"
	case c.isList:
		return "a list"
	case c.quoted:
		return strconv.Quote(c.text)
	}
	return c.text
}
