package workload

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSliceYieldsTheListAndRewinds(t *testing.T) {
	rs := Requests{
		{ID: 7, Arrival: 0, InputTokens: 2000, OutputTokens: 200},
		{ID: 3, Arrival: time.Second, InputTokens: 100, OutputTokens: 10, Class: "batch"},
		{ID: 9, Arrival: time.Second, InputTokens: 0, OutputTokens: 5, Failed: true},
	}
	s, err := NewSlice(rs)
	require.NoError(t, err)
	assert.Equal(t, OpenLoop, s.Loop())
	assert.Equal(t, OpenLoop, LoopOf(s))
	for pass := range 2 {
		got, err := ReadAll(s, 0)
		require.NoError(t, err)
		assert.Equal(t, rs, got, "pass %d: every request as it is, ids kept", pass)
		assert.Equal(t, 3, s.Count())
		_, err = s.Next()
		assert.Equal(t, io.EOF, err)
		s.Reset()
	}
	assert.Equal(t, 3, s.Len())
	assert.Equal(t, "in-memory list of 3 requests over 1s", s.String())
}

func TestRequestsValidateNamesEveryProblem(t *testing.T) {
	rs := Requests{
		{ID: 1, Arrival: 2 * time.Second, InputTokens: 10, OutputTokens: 1},
		{ID: 2, Arrival: time.Second, InputTokens: 10, OutputTokens: 0},
		{ID: 1, Arrival: 3 * time.Second, InputTokens: -1, OutputTokens: 1, PrefixHashes: []uint64{4}},
		{ID: 4, Arrival: -time.Second, InputTokens: 10, OutputTokens: 1, PrefixBlockTokens: 16, Turn: -1},
	}
	err := rs.Validate()
	for _, want := range []string{
		"workload: Requests[1].Arrival 1s is before Requests[0].Arrival 2s: an open-loop workload is in non-decreasing arrival order",
		"workload: Requests[1] has InputTokens 10 and OutputTokens 0 without Failed",
		"workload: Requests[2].ID 1 repeats Requests[0].ID",
		"workload: Requests[2] token counts must be >= 0, got InputTokens -1 and OutputTokens 1",
		"workload: Requests[2].PrefixBlockTokens must be > 0 with PrefixHashes, got 0",
		"workload: Requests[3].Arrival must be >= 0, got -1s",
		"workload: Requests[3].PrefixBlockTokens is 16 without PrefixHashes",
		"workload: Requests[3].Turn must be >= 0, got -1",
	} {
		assert.ErrorContains(t, err, want)
	}
	_, err = NewSlice(rs)
	assert.Error(t, err, "NewSlice validates")
	assert.NoError(t, Requests(nil).Validate(), "an empty list is valid")
}

func TestRequestsValidateListsTenProblemsAndCountsTheRest(t *testing.T) {
	rs := make(Requests, 25) // 25 requests with id 0 and no tokens
	err := rs.Validate()
	assert.Equal(t, 11, strings.Count(err.Error(), "\n")+1, "ten problems and a count")
	assert.ErrorContains(t, err, "workload: and 39 more problems", "25 without Failed + 24 repeated ids − 10 listed")
}

func TestReadAllRefusesClosedLoopAndHonoursItsLimit(t *testing.T) {
	_, err := ReadAll(&closedList{}, 0)
	assert.ErrorContains(t, err, "*workload.closedList is closed-loop")

	src, err := NewPoisson(1, 5, 10, Fixed(100, 10))
	require.NoError(t, err)
	got, err := ReadAll(src, 4)
	assert.ErrorContains(t, err, "the source has more than 4 requests")
	assert.Len(t, got, 4)
}

// A list read from a Poisson source and replayed gives the same requests.
func TestSliceReplaysAGeneratedWorkload(t *testing.T) {
	src, err := NewPoisson(7, 3.5, 200, Fixed(2000, 200))
	require.NoError(t, err)
	rs, err := ReadAll(src, 0)
	require.NoError(t, err)
	s, err := NewSlice(rs)
	require.NoError(t, err)
	again, err := NewPoisson(7, 3.5, 200, Fixed(2000, 200))
	require.NoError(t, err)
	want, n, err := Fingerprint(again)
	require.NoError(t, err)
	got, m, err := Fingerprint(s)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, 200, n)
	assert.Equal(t, n, m)
}

// closedList is a Slice that takes Feedback.
type closedList struct{ Slice }

func (*closedList) Finished(uint64, time.Duration, bool) {}
