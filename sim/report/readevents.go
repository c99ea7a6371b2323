package report

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/servesim/servesim/sim"
)

// ReadEvents reads a file of per-request events written by EventJSONL (".jsonl")
// or EventCSV (".csv") back into records, in the file's order. Errors name the
// file, the line and the column.
func ReadEvents(path string) ([]sim.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	switch ext := filepath.Ext(path); ext {
	case ".jsonl":
		return ReadJSONL(f, path)
	case ".csv":
		return ReadCSV(f, path)
	default:
		return nil, fmt.Errorf("report: %s: events are .jsonl or .csv, not %q", path, ext)
	}
}

// ReadJSONL reads events written by EventJSONL back into records; name names
// the source in errors ("…: line 3, column \"ttft\": …").
//
// Every column of EventColumns must be on every line but the optional ones:
// "itl" and "token_itl" (present when the run kept token instants,
// sim.Config.KeepTokens), and, for events written before they existed,
// "max_token_itl" (then max_itl), "draft_tokens" and "accepted_tokens"
// (then 0). A record gets back every field the events carry: its
// instants from scheduled, arrival, finish and the latencies (first
// scheduled = arrival + queue_delay, first token = arrival + ttft, last
// token = arrival + e2el), Sent from client_wait, and with "itl" its token
// instants: each streamed chunk's instant from the per-chunk gaps, its
// tokens from "token_itl" (each chunk's gap over its tokens, once per
// token; without it, one token a chunk) and the first chunk's from
// output_len. The values are exact: the writers print integer
// nanoseconds as decimals.
func ReadJSONL(r io.Reader, name string) ([]sim.Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<30)
	var out []sim.Record
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		rec, err := jsonlRecord(sc.Bytes())
		if err != nil {
			return out, fmt.Errorf("report: %s: line %d%w", name, line, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("report: %s: %w", name, err)
	}
	return out, nil
}

// jsonlRecord reads one line; its error starts with the column.
func jsonlRecord(line []byte) (sim.Record, error) {
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return sim.Record{}, fmt.Errorf(": not a JSON object: %w", err)
	}
	if dec.More() {
		return sim.Record{}, errors.New(": trailing data after the object")
	}
	cells := make(map[string]cell, len(m))
	for k, raw := range m {
		c, err := jsonCell(raw)
		if err != nil {
			return sim.Record{}, fmt.Errorf(", column %q: %w", k, err)
		}
		cells[k] = c
	}
	return recordOf(cells)
}

// jsonCell turns a JSON value into a cell: null, a string or a number's
// text, or a list of numbers.
func jsonCell(raw json.RawMessage) (cell, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case string(raw) == "null":
		return cell{null: true}, nil
	case len(raw) > 0 && raw[0] == '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return cell{text: s, quoted: true}, err
	case len(raw) > 0 && raw[0] == '[':
		var list []json.Number
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&list); err != nil {
			return cell{}, fmt.Errorf("want a list of seconds, got %.40s", raw)
		}
		c := cell{isList: true, list: make([]string, len(list))}
		for i, n := range list {
			c.list[i] = n.String()
		}
		return c, nil
	}
	return cell{text: string(raw)}, nil
}

// ReadCSV reads events written by EventCSV back into records, as ReadJSONL
// does: the header names the columns (EventColumns, the optional ones
// possibly missing); an empty instant is null, and the "itl" and
// "token_itl" cells hold space-separated gaps (empty when no instants
// were kept: a record that emitted tokens then gets none back, and one
// that emitted one token gets its first token's instant).
func ReadCSV(r io.Reader, name string) ([]sim.Record, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("report: %s: no header", name)
	}
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", name, err)
	}
	cols := append([]string(nil), head...)
	for _, c := range cols {
		if _, ok := columnKinds[c]; !ok {
			return nil, fmt.Errorf("report: %s: line 1: unknown column %q (the columns are %s)", name, c, strings.Join(EventColumns(), ", "))
		}
	}
	var out []sim.Record
	for {
		row, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			// encoding/csv's error names the line; FieldPos has no
			// record to describe after a failed Read.
			return out, fmt.Errorf("report: %s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		cells := make(map[string]cell, len(cols))
		for i, c := range cols {
			cells[c] = csvCell(columnKinds[c], row[i])
		}
		rec, err := recordOf(cells)
		if err != nil {
			return out, fmt.Errorf("report: %s: line %d%w", name, line, err)
		}
		out = append(out, rec)
	}
}

func csvCell(k kind, s string) cell {
	switch {
	case k == kindGaps:
		return cell{isList: true, list: strings.Fields(s), csvEmpty: s == ""}
	case s == "" && k == kindDur:
		return cell{null: true}
	}
	return cell{text: s, quoted: k == kindStr}
}

// cell is one value of an event, as either format wrote it.
type cell struct {
	text     string
	quoted   bool // a JSON string (or a CSV text column)
	null     bool
	isList   bool
	list     []string
	csvEmpty bool // an empty CSV gaps cell: kept instants or none, CSV cannot say
}

// kind is how a column is written.
type kind uint8

const (
	kindNum kind = iota
	kindStr
	kindFlag
	kindDur
	kindGaps
)

// columnKinds are the kinds of the schema's columns, from eachField.
var columnKinds = func() map[string]kind {
	k := kindSink{}
	eachField(&sim.Record{}, k)
	return k
}()

// kindSink notes each column's kind.
type kindSink map[string]kind

func (k kindSink) str(key, _ string)                                   { k[key] = kindStr }
func (k kindSink) num(key string, _ int64)                             { k[key] = kindNum }
func (k kindSink) flag(key string, _ bool)                             { k[key] = kindFlag }
func (k kindSink) dur(key string, _ time.Duration)                     { k[key] = kindDur }
func (k kindSink) gaps(key string, _ []time.Duration, _ sim.ITLSeries) { k[key] = kindGaps }
