package report

import (
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/servesim/servesim/sim"
)

// EventJSONL is a sim.Observer that writes each request's record as one JSON
// object per line, keys in the order of EventColumns (see the package doc for
// their meaning and units). Times are in seconds, as vLLM's detailed
// results; an instant that did not happen is null; "itl" and "token_itl"
// (the lists of inter-token gaps per streamed chunk and retokenized per
// token) are present only when the run kept token instants
// (sim.Config.KeepTokens).
//
// Writes are buffered: call Flush when the run ends. The first write error
// is kept (Err) and every later record is dropped. An EventJSONL is not safe for
// concurrent use; give each run its own.
type EventJSONL struct {
	lineWriter
}

// NewEventJSONL returns an EventJSONL writing to w.
func NewEventJSONL(w io.Writer) *EventJSONL { return &EventJSONL{newLineWriter(w)} }

// Observe writes r as one line.
func (j *EventJSONL) Observe(r *sim.Record) {
	if j.err != nil {
		return
	}
	j.buf = append(j.buf[:0], '{')
	eachField(r, j)
	j.buf = append(j.buf, "}\n"...)
	j.emit()
}

func (j *EventJSONL) key(k string) {
	if len(j.buf) > 1 {
		j.buf = append(j.buf, ',')
	}
	j.buf = append(j.buf, '"')
	j.buf = append(j.buf, k...)
	j.buf = append(j.buf, `":`...)
}

func (j *EventJSONL) str(k, v string) {
	j.key(k)
	j.buf = appendJSONString(j.buf, v)
}

func (j *EventJSONL) num(k string, v int64) {
	j.key(k)
	j.buf = strconv.AppendInt(j.buf, v, 10)
}

func (j *EventJSONL) flag(k string, v bool) {
	j.key(k)
	j.buf = strconv.AppendBool(j.buf, v)
}

func (j *EventJSONL) dur(k string, d time.Duration) {
	j.key(k)
	if d == sim.Never {
		j.buf = append(j.buf, "null"...)
		return
	}
	j.buf = appendSeconds(j.buf, d)
}

func (j *EventJSONL) gaps(k string, tokens []time.Duration, series sim.ITLSeries) {
	if tokens == nil {
		return
	}
	j.key(k)
	j.buf = append(j.buf, '[')
	first := true
	eachGap(tokens, series, func(d time.Duration) {
		if !first {
			j.buf = append(j.buf, ',')
		}
		first = false
		j.buf = appendSeconds(j.buf, d)
	})
	j.buf = append(j.buf, ']')
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		case c < utf8.RuneSelf:
			b = append(b, c)
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			b = utf8.AppendRune(b, r) // RuneError for invalid bytes
			i += n
			continue
		}
		i++
	}
	return append(b, '"')
}
