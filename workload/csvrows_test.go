package workload

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// CSVRows, for readers of formats without a TraceConfig (workload/blis):
// columns by name, the generic reader's parsing rules and *ParseErrors.
func TestCSVRows(t *testing.T) {
	data := "\ufeffid, tokens ,hashes,block,conv\n7,12,1 2,16,chat-7\n8,-1,,,\n"
	c, err := NewCSVRows(strings.NewReader(data), "x.csv", []string{"id", "tokens"}, []string{"id", "tokens", "hashes", "block"})
	require.NoError(t, err)
	require.NoError(t, c.Next())
	assert.Equal(t, 2, c.Line())
	id, err := c.Uint("id")
	require.NoError(t, err)
	assert.Equal(t, uint64(7), id)
	n, err := c.Count("tokens")
	require.NoError(t, err)
	assert.Equal(t, 12, n, "the header's spaces are trimmed")
	var r Request
	require.NoError(t, c.Hashes("hashes", "block", &r))
	assert.Equal(t, []uint64{1, 2}, r.PrefixHashes)
	assert.Equal(t, 16, r.PrefixBlockTokens)
	v, ok := c.Opt("conv")
	assert.True(t, ok)
	assert.Equal(t, conversationID("chat-7"), ConversationID(v))
	assert.Equal(t, uint64(42), ConversationID("42"))
	_, err = c.Value("missing")
	assert.EqualError(t, err, `workload: x.csv:2: field missing: "" is missing`)

	require.NoError(t, c.Next())
	_, err = c.Count("tokens")
	assert.EqualError(t, err, `workload: x.csv:3: field tokens: "-1" is negative`)
	_, ok = c.Opt("hashes")
	assert.False(t, ok, "an empty value is absent")
	var pe *ParseError
	assert.True(t, errors.As(c.Fail("id", "8", "is taken"), &pe))
	assert.Equal(t, ParseError{File: "x.csv", Line: 3, Field: "id", Value: "8", Reason: "is taken", Err: ErrMalformed}, *pe)
	assert.Equal(t, io.EOF, c.Next())

	for _, tc := range []struct{ data, want string }{
		{"id\n1\n", `workload: y.csv:1: field tokens: "id" is a header without this column`},
		{"id,tokens,id\n", `workload: y.csv:1: field id: "id,tokens,id" is a header naming this column twice, as columns 1 and 3`},
		{"version https://git-lfs.github.com/spec/v1\n", "workload: y.csv:1: the file is a Git LFS pointer, not the trace (run `git lfs pull` to fetch its content)"},
	} {
		_, err := NewCSVRows(strings.NewReader(tc.data), "y.csv", []string{"id", "tokens"}, []string{"id", "tokens"})
		assert.EqualError(t, err, tc.want)
	}
}
