package report

import (
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/servesim/servesim/sim"
)

// EventCSV is a sim.Observer that writes each request's record as one CSV row
// (RFC 4180, as encoding/csv reads it) under a header of EventColumns. Values
// are those of EventJSONL; an instant that did not happen is an empty cell, and
// the "itl" and "token_itl" cells hold the inter-token gaps in seconds
// separated by single spaces (empty when the run did not keep token
// instants).
//
// Writes are buffered: call Flush when the run ends. The first write error
// is kept (Err) and every later record is dropped. An EventCSV is not safe for
// concurrent use.
type EventCSV struct {
	lineWriter
	started bool
}

// NewEventCSV returns an EventCSV writing to w. The header is written with the first
// record, or by Flush if there was none.
func NewEventCSV(w io.Writer) *EventCSV { return &EventCSV{lineWriter: newLineWriter(w)} }

// Observe writes r as one row.
func (c *EventCSV) Observe(r *sim.Record) {
	c.header()
	if c.err != nil {
		return
	}
	c.buf = c.buf[:0]
	eachField(r, c)
	c.buf[len(c.buf)-1] = '\n' // the last separator ends the row
	c.emit()
}

// Flush writes the header if no record came, then any buffered rows, and
// returns the first error met so far.
func (c *EventCSV) Flush() error {
	c.header()
	return c.lineWriter.Flush()
}

func (c *EventCSV) header() {
	if c.started {
		return
	}
	c.started = true
	c.buf = append(c.buf[:0], strings.Join(EventColumns(), ",")...)
	c.buf = append(c.buf, '\n')
	c.emit()
}

func (c *EventCSV) str(_, v string) {
	if strings.ContainsAny(v, ",\"\r\n") || strings.TrimSpace(v) != v {
		c.buf = append(c.buf, '"')
		c.buf = append(c.buf, strings.ReplaceAll(v, `"`, `""`)...)
		c.buf = append(c.buf, '"')
	} else {
		c.buf = append(c.buf, v...)
	}
	c.buf = append(c.buf, ',')
}

func (c *EventCSV) num(_ string, v int64) {
	c.buf = append(strconv.AppendInt(c.buf, v, 10), ',')
}

func (c *EventCSV) flag(_ string, v bool) {
	c.buf = append(strconv.AppendBool(c.buf, v), ',')
}

func (c *EventCSV) dur(_ string, d time.Duration) {
	if d != sim.Never {
		c.buf = appendSeconds(c.buf, d)
	}
	c.buf = append(c.buf, ',')
}

func (c *EventCSV) gaps(_ string, tokens []time.Duration, series sim.ITLSeries) {
	first := true
	eachGap(tokens, series, func(d time.Duration) {
		if !first {
			c.buf = append(c.buf, ' ')
		}
		first = false
		c.buf = appendSeconds(c.buf, d)
	})
	c.buf = append(c.buf, ',')
}
