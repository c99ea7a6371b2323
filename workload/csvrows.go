package workload

import (
	"io"
	"strconv"
)

// CSVRows reads a CSV trace of a format this package has no TraceConfig
// for, one row at a time by column name, with the checks and errors of
// the trace readers: a UTF-8 byte order mark is skipped, a Git LFS
// pointer refused (ErrLFSPointer), a header without a required column or
// naming a read column twice refused, and every error is a *ParseError
// naming the file, the line and the column. workload/blis reads BLIS's
// TraceV2 with it.
type CSVRows struct {
	rows *csvRows
	p    parser
	row  row
}

// NewCSVRows reads r's header; name is used in errors. required lists the
// columns the header must name, read every column the caller reads (a
// duplicate of one of them is refused). A file without a header has no
// rows.
func NewCSVRows(r io.Reader, name string, required, read []string) (*CSVRows, error) {
	br := skipBOM(r)
	if isLFSPointer(br) {
		return nil, &ParseError{File: name, Line: 1, Reason: "the file is a Git LFS pointer, not the trace (run `git lfs pull` to fetch its content)", Err: ErrLFSPointer}
	}
	rows, err := newCSVRows(br, name, required, read)
	if err != nil {
		return nil, err
	}
	return &CSVRows{rows: rows, p: parser{name: name}}, nil
}

// Next moves to the next row: io.EOF after the last, a *ParseError for a
// line encoding/csv refuses.
func (c *CSVRows) Next() error {
	r, err := c.rows.next()
	c.row = r
	return err
}

// Line is the current row's line (the header is line 1).
func (c *CSVRows) Line() int { return c.rows.line() }

// Get returns the current row's value of col, trimmed of spaces; false
// when the header has no such column or the row is short.
func (c *CSVRows) Get(col string) (string, bool) { return c.rows.get(col) }

// Opt returns an optional column's value; false when the column is
// missing or the value empty.
func (c *CSVRows) Opt(col string) (string, bool) { return opt(c.rows, col) }

// Fail is a *ParseError wrapping ErrMalformed at the current line: field
// col's value v, and reason completing the sentence ("is not an integer").
func (c *CSVRows) Fail(col, v, reason string) error { return c.p.fail(c.rows, col, v, reason) }

// Value returns a required column's value, or an error naming it.
func (c *CSVRows) Value(col string) (string, error) { return c.p.value(c.rows, col) }

// Count parses a required token count, in [0, math.MaxInt32].
func (c *CSVRows) Count(col string) (int, error) { return c.p.count(c.rows, col) }

// Natural parses v, col's value, as a count in [0, math.MaxInt32].
func (c *CSVRows) Natural(col, v string) (int, error) { return c.p.natural(c.rows, col, v) }

// Uint parses a required unsigned 64-bit integer (an id).
func (c *CSVRows) Uint(col string) (uint64, error) {
	v, err := c.p.value(c.rows, col)
	if err != nil {
		return 0, err
	}
	n, perr := strconv.ParseUint(v, 10, 64)
	if perr != nil {
		return 0, c.p.fail(c.rows, col, v, uintReason(perr, ""))
	}
	return n, nil
}

// Hashes sets r's PrefixHashes from the hash ids in column col (as
// Columns.PrefixHashes reads them) and PrefixBlockTokens from column
// block (as Columns.BlockTokensColumn, MooncakeBlockTokens without one);
// it leaves r alone when col is missing or empty.
func (c *CSVRows) Hashes(col, block string, r *Request) error {
	p := parser{name: c.p.name, cfg: TraceConfig{Columns: Columns{PrefixHashes: col, BlockTokensColumn: block}}}
	return p.hashes(c.rows, r)
}

// ConversationID is the Conversation a trace's conversation value names:
// the value itself when it is an unsigned integer, else its FNV-64a hash.
func ConversationID(v string) uint64 { return conversationID(v) }
