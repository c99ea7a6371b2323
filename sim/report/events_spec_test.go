package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// specLine is the speculation columns of one JSON Lines record, times in
// exact nanoseconds.
type specLine struct {
	ID          uint64
	Output      int
	MaxITL      time.Duration
	MaxTokenITL time.Duration
	Drafted     int
	Accepted    int
	ITL         []time.Duration // per streamed chunk
	TokenITL    []time.Duration // retokenized, per token
	HasITL      bool
}

// seconds reads an exact decimal of seconds (as appendSeconds writes it)
// back to nanoseconds, without a float in between.
func seconds(t *testing.T, s string) time.Duration {
	t.Helper()
	whole, frac, _ := strings.Cut(s, ".")
	sec, err := strconv.ParseInt(whole, 10, 64)
	require.NoError(t, err, s)
	frac = (frac + "000000000")[:9]
	ns, err := strconv.ParseInt(frac, 10, 64)
	require.NoError(t, err, s)
	return time.Duration(sec)*time.Second + time.Duration(ns)
}

func secondsList(t *testing.T, raw []json.Number) []time.Duration {
	out := make([]time.Duration, len(raw))
	for i, n := range raw {
		out[i] = seconds(t, n.String())
	}
	return out
}

// specLines runs cfg over src writing JSON Lines, and reads the lines back.
func specLines(t *testing.T, cfg sim.Config, src workload.Source) []specLine {
	t.Helper()
	var buf bytes.Buffer
	w := NewEventJSONL(&buf)
	_, err := sim.Run(cfg, src, w)
	require.NoError(t, err)
	require.NoError(t, w.Flush())
	var out []specLine
	dec := json.NewDecoder(&buf)
	dec.UseNumber()
	for dec.More() {
		var m struct {
			ID          uint64        `json:"id"`
			Output      int           `json:"output_len"`
			MaxITL      *json.Number  `json:"max_itl"`
			MaxTokenITL *json.Number  `json:"max_token_itl"`
			Drafted     int           `json:"draft_tokens"`
			Accepted    int           `json:"accepted_tokens"`
			ITL         []json.Number `json:"itl"`
			TokenITL    []json.Number `json:"token_itl"`
		}
		require.NoError(t, dec.Decode(&m))
		l := specLine{ID: m.ID, Output: m.Output, Drafted: m.Drafted, Accepted: m.Accepted,
			ITL: secondsList(t, m.ITL), TokenITL: secondsList(t, m.TokenITL), HasITL: m.ITL != nil}
		if m.MaxITL != nil {
			l.MaxITL = seconds(t, m.MaxITL.String())
		}
		if m.MaxTokenITL != nil {
			l.MaxTokenITL = seconds(t, m.MaxTokenITL.String())
		}
		out = append(out, l)
	}
	return out
}

func poissonSource(t *testing.T, seed uint64, rate float64, n int, lengths workload.Joint) workload.Source {
	t.Helper()
	src, err := workload.NewPoisson(seed, rate, n, lengths)
	require.NoError(t, err)
	return src
}

// α = 1 with free drafting and K = 4: after the prefill's token every
// decode step emits 5 tokens as one chunk, 45 + 4 × 0.035 = 45.14 ms
// after the last. A 201-token answer is 40 such chunks: 40 gaps per
// chunk, 200 retokenized gaps, each 9.028 ms, five of which make the
// chunk's gap to the nanosecond; 160 drafts, all accepted.
func TestEventsOfAllAcceptedSpeculation(t *testing.T) {
	cfg := sim.Config{Speculation: sim.Speculation{Tokens: 4, Acceptance: 1}, KeepTokens: true}
	src := &slice{ // apart: each alone on the replica
		{ID: 0, Arrival: 0, InputTokens: 2000, OutputTokens: 201},
		{ID: 1, Arrival: 10 * time.Second, InputTokens: 2000, OutputTokens: 201},
		{ID: 2, Arrival: 20 * time.Second, InputTokens: 2000, OutputTokens: 201},
	}
	lines := specLines(t, cfg, src)
	require.Len(t, lines, 3)
	for _, l := range lines {
		require.Len(t, l.ITL, 40, "request %d: one gap per chunk after the first", l.ID)
		require.Len(t, l.TokenITL, 200, "request %d: one gap per token after the first", l.ID)
		for i, g := range l.ITL {
			assert.Equal(t, 45140*time.Microsecond, g, "request %d, chunk %d", l.ID, i+1)
			for _, tok := range l.TokenITL[5*i : 5*i+5] {
				assert.Equal(t, g, 5*tok, "request %d, chunk %d: 5 tokens × the retokenized gap is the chunk's gap", l.ID, i+1)
			}
		}
		assert.Equal(t, 45140*time.Microsecond, l.MaxITL)
		assert.Equal(t, 9028*time.Microsecond, l.MaxTokenITL)
		assert.Equal(t, 160, l.Drafted)
		assert.Equal(t, 160, l.Accepted)
	}
}

// K = 0 is no speculation: a chunk is one token, so the per-chunk and the
// retokenized lists are the same, one gap per token after the first, and
// nothing is drafted.
func TestEventsWithoutSpeculationHaveOneSeries(t *testing.T) {
	cfg := fixtureConfig(true)
	for _, l := range specLines(t, cfg, fixture()) {
		assert.Equal(t, l.ITL, l.TokenITL, "request %d", l.ID)
		assert.Equal(t, l.MaxITL, l.MaxTokenITL, "request %d", l.ID)
		if l.HasITL {
			assert.Len(t, l.ITL, max(l.Output-1, 0), "request %d", l.ID)
		}
		assert.Zero(t, l.Drafted)
		assert.Zero(t, l.Accepted)
	}
}

// Under i.i.d. acceptance the chunks vary in size. On every request: the
// retokenized list has one gap per token after the first; walking it
// chunk by chunk, each chunk's tokens share one retokenized gap, no
// larger than the chunk's, whose tokens × it fall short of the chunk's
// gap by less than a nanosecond a token; the maxima are those of the
// lists; accepted ≤ drafted. CSV carries the same lists as JSON Lines.
func TestEventsOfSpeculationAgreeWithTheDomain(t *testing.T) {
	cfg := sim.Config{Speculation: sim.Speculation{Tokens: 4, Acceptance: 0.7}, KeepTokens: true}
	lines := specLines(t, cfg, poissonSource(t, 3, 1, 40, workload.Fixed(1000, 120)))
	require.Len(t, lines, 40)
	multi := 0
	for _, l := range lines {
		require.Len(t, l.TokenITL, l.Output-1, "request %d", l.ID)
		j := 0
		for i, g := range l.ITL {
			tok := l.TokenITL[j]
			n := int(g / tok) // the chunk's tokens: g/n truncates to tok
			for n > 1 && g/time.Duration(n) != tok {
				n--
			}
			require.Equal(t, tok, g/time.Duration(n), "request %d, chunk %d", l.ID, i+1)
			for k := range n {
				require.Equal(t, tok, l.TokenITL[j+k], "request %d, chunk %d: one retokenized gap a chunk", l.ID, i+1)
			}
			assert.LessOrEqual(t, tok, g)
			assert.Less(t, g-time.Duration(n)*tok, time.Duration(n), "request %d, chunk %d: to the nanosecond", l.ID, i+1)
			if n > 1 {
				multi++
			}
			j += n
		}
		require.Equal(t, len(l.TokenITL), j, "request %d: the chunks cover every token", l.ID)
		assert.Equal(t, maxOf(l.ITL), l.MaxITL, "request %d", l.ID)
		assert.Equal(t, maxOf(l.TokenITL), l.MaxTokenITL, "request %d", l.ID)
		assert.LessOrEqual(t, l.Accepted, l.Drafted)
		assert.Positive(t, l.Drafted)
	}
	assert.Greater(t, multi, 100, "α = 0.7 accepts drafts: chunks of several tokens")

	var buf bytes.Buffer
	w := NewEventCSV(&buf)
	_, err := sim.Run(cfg, poissonSource(t, 3, 1, 40, workload.Fixed(1000, 120)), w)
	require.NoError(t, err)
	require.NoError(t, w.Flush())
	rows, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	for i, l := range lines {
		row := rows[i+1]
		assert.Equal(t, strconv.FormatUint(l.ID, 10), row[col["id"]])
		assert.Equal(t, strconv.Itoa(l.Drafted), row[col["draft_tokens"]])
		assert.Equal(t, strconv.Itoa(l.Accepted), row[col["accepted_tokens"]])
		for name, want := range map[string][]time.Duration{"itl": l.ITL, "token_itl": l.TokenITL} {
			var got []time.Duration
			for _, f := range strings.Fields(row[col[name]]) {
				got = append(got, seconds(t, f))
			}
			assert.Equal(t, want, got, "request %d, %s", l.ID, name)
		}
	}
}

func maxOf(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}
