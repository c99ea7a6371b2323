package workload

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/ascend"
)

func richWorkload(t testing.TB) *Generator {
	g, err := NewSynthetic(Synthetic{Seed: 8, Count: 300, Arrival: Arrival{Process: Gamma, Rate: 3, Burstiness: 0.5},
		Lengths: Copula{Input: LogNormalMean(800, 1), Output: Uniform{Center: 200, RangeRatio: 0.9}, Spearman: 0.5},
		Prefix:  LowReuse, Class: "chat, \"quoted\""})
	require.NoError(t, err)
	return g
}

// withoutRuns is reqs with their promises of runs of ids cleared: a
// trace does not carry them (a reader promises nothing).
func withoutRuns(reqs []Request) []Request {
	for i := range reqs {
		reqs[i].PrefixTwoRuns = ascend.Promise{}
	}
	return reqs
}

// The generic form reads back exactly, in both syntaxes (but for the
// promises of runs of ids, which a trace does not carry).
func TestGenericRoundTrip(t *testing.T) {
	want := withoutRuns(drain(t, richWorkload(t)))
	want[5].Failed = true
	want[6].Conversation, want[6].Turn, want[6].Priority = 42, 3, -1
	for _, f := range []Format{CSV, JSONL} {
		var buf bytes.Buffer
		w := NewTraceWriter(&buf, f)
		for _, r := range want {
			require.NoError(t, w.Write(r))
		}
		require.NoError(t, w.Flush())
		tr, err := NewTrace(bytes.NewReader(buf.Bytes()), "generic."+f.String(), Generic(f))
		require.NoError(t, err)
		assert.Equal(t, want, drain(t, tr), f.String())
	}
}

func TestFingerprint(t *testing.T) {
	a, n, err := Fingerprint(richWorkload(t))
	require.NoError(t, err)
	assert.Equal(t, 300, n)
	b, _, _ := Fingerprint(richWorkload(t))
	assert.Equal(t, a, b, "same seed, same fingerprint")
	assert.True(t, strings.HasPrefix(a, "sha256:") && len(a) == 7+64)

	g, _ := NewPoisson(1, 5, 300, Fixed(10, 10))
	c, _, _ := Fingerprint(g)
	g, _ = NewPoisson(2, 5, 300, Fixed(10, 10))
	d, _, _ := Fingerprint(g)
	assert.NotEqual(t, c, d, "another seed, another fingerprint")

	var buf bytes.Buffer
	_, err = WriteTrace(&buf, JSONL, richWorkload(t))
	require.NoError(t, err)
	tr, err := NewTrace(&buf, "x.jsonl", Generic(JSONL))
	require.NoError(t, err)
	e, _, err := Fingerprint(tr)
	require.NoError(t, err)
	assert.Equal(t, a, e, "a written trace replays with the generator's fingerprint")
}

func TestFingerprintFile(t *testing.T) {
	path := sharedTrace(t, azureConv)
	a, err := FingerprintFile(path, Azure())
	require.NoError(t, err)
	slow := Azure()
	slow.Transform.Slowdown = 2
	b, err := FingerprintFile(path, slow)
	require.NoError(t, err)
	assert.NotEqual(t, a, b, "the transform is part of the fingerprint")
}

// azureRows is an endless generated Azure CSV, produced on the fly so that
// the test measures the reader's memory, not the input's.
type azureRows struct {
	rows, limit int
	pending     []byte
	header      bool
}

func (a *azureRows) Read(p []byte) (int, error) {
	for len(a.pending) < len(p) && a.rows < a.limit {
		if !a.header {
			a.header = true
			a.pending = append(a.pending, "TIMESTAMP,ContextTokens,GeneratedTokens\n"...)
		}
		at := time.Date(2023, 11, 16, 0, 0, 0, 0, time.UTC).Add(time.Duration(a.rows) * 17 * time.Millisecond)
		a.pending = at.AppendFormat(a.pending, "2006-01-02 15:04:05.0000000")
		a.pending = append(a.pending, ",1155,211\n"...)
		a.rows++
	}
	if len(a.pending) == 0 {
		return 0, io.EOF
	}
	n := copy(p, a.pending)
	a.pending = a.pending[:copy(a.pending, a.pending[n:])]
	return n, nil
}
