package workload

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// GenericColumns is the column mapping of the generic trace form that
// TraceWriter writes: arrivals in integer nanoseconds from the start of the
// run, so a written stream reads back exactly.
var GenericColumns = Columns{
	ID: "id", Arrival: "arrival_ns", ArrivalUnit: time.Nanosecond,
	Input: "input_tokens", Output: "output_tokens",
	Conversation: "conversation", Turn: "turn", Class: "class", Priority: "priority", Failed: "failed",
	BlockTokensColumn: "prefix_block_tokens", PrefixHashes: "prefix_hashes",
}

// Generic reads the generic form in format f (CSV hash ids are separated by
// spaces, JSONL's are an array). Its arrival column names its unit
// (arrival_ns), so it accepts any implied rate (AnyRate): a written test
// workload may well put requests nanoseconds apart.
func Generic(f Format) TraceConfig {
	return TraceConfig{Format: f, Columns: GenericColumns, KeepOrigin: true, AnyRate: true}
}

var genericHeader = []string{"id", "arrival_ns", "input_tokens", "output_tokens", "conversation", "turn",
	"class", "priority", "failed", "prefix_block_tokens", "prefix_hashes"}

// genericJSON is one JSONL line of the generic form.
type genericJSON struct {
	ID                uint64   `json:"id"`
	ArrivalNS         int64    `json:"arrival_ns"`
	InputTokens       int      `json:"input_tokens"`
	OutputTokens      int      `json:"output_tokens"`
	Conversation      uint64   `json:"conversation,omitempty"`
	Turn              int      `json:"turn,omitempty"`
	Class             string   `json:"class,omitempty"`
	Priority          int      `json:"priority,omitempty"`
	Failed            bool     `json:"failed,omitempty"`
	PrefixBlockTokens int      `json:"prefix_block_tokens,omitempty"`
	PrefixHashes      []uint64 `json:"prefix_hashes,omitempty"`
}

// TraceWriter writes requests in the generic form, one row each; call Flush
// at the end.
type TraceWriter struct {
	format Format
	csv    *csv.Writer
	json   *json.Encoder
	header bool
	rec    []string
}

// NewTraceWriter writes the generic form in format f to w.
func NewTraceWriter(w io.Writer, f Format) *TraceWriter {
	tw := &TraceWriter{format: f}
	if f == JSONL {
		tw.json = json.NewEncoder(w)
	} else {
		tw.csv = csv.NewWriter(w)
	}
	return tw
}

// Write writes one request. Its prefix_hashes are its prompt's: the ids of
// a request whose PrefixHashes go on over its answer (HashesCoverOutput)
// are cut to the blocks of its prompt, since the generic form, like
// Mooncake's, gives ids over the prompt only.
func (w *TraceWriter) Write(r Request) error {
	if r.HashesCoverOutput && r.PrefixBlockTokens > 0 {
		r.PrefixHashes = r.PrefixHashes[:min(len(r.PrefixHashes), blocks(r.InputTokens, r.PrefixBlockTokens))]
	}
	if w.format == JSONL {
		return w.json.Encode(genericJSON{r.ID, int64(r.Arrival), r.InputTokens, r.OutputTokens, r.Conversation,
			r.Turn, r.Class, r.Priority, r.Failed, r.PrefixBlockTokens, r.PrefixHashes})
	}
	if !w.header {
		w.header = true
		if err := w.csv.Write(genericHeader); err != nil {
			return err
		}
	}
	return w.csv.Write(w.record(r))
}

func (w *TraceWriter) record(r Request) []string {
	ids := make([]string, len(r.PrefixHashes))
	for i, id := range r.PrefixHashes {
		ids[i] = strconv.FormatUint(id, 10)
	}
	blk := ""
	if r.PrefixHashes != nil {
		blk = strconv.Itoa(r.PrefixBlockTokens)
	}
	w.rec = append(w.rec[:0], strconv.FormatUint(r.ID, 10), strconv.FormatInt(int64(r.Arrival), 10),
		strconv.Itoa(r.InputTokens), strconv.Itoa(r.OutputTokens), strconv.FormatUint(r.Conversation, 10),
		strconv.Itoa(r.Turn), r.Class, strconv.Itoa(r.Priority), strconv.FormatBool(r.Failed), blk, strings.Join(ids, " "))
	return w.rec
}

// Flush writes any buffered data (CSV) and reports an earlier write error.
func (w *TraceWriter) Flush() error {
	if w.csv == nil {
		return nil
	}
	w.csv.Flush()
	return w.csv.Error()
}

// WriteTrace writes every request of an open-loop source in the generic
// form and returns how many it wrote.
func WriteTrace(w io.Writer, f Format, src Source) (int, error) {
	tw := NewTraceWriter(w, f)
	n := 0
	for {
		r, err := src.Next()
		if err == io.EOF {
			return n, tw.Flush()
		}
		if err != nil {
			return n, err
		}
		if err := tw.Write(r); err != nil {
			return n, fmt.Errorf("workload: writing trace: %w", err)
		}
		n++
	}
}
