package workload

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endOf reads a source to its end and returns the error that ended it
// (nil for io.EOF).
func endOf(src Source) error {
	for {
		_, err := src.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// A client sending every 200 ms, its instants logged in microseconds.
const microsecondLog = "t,in,out\n0,100,10\n200000,100,10\n400000,100,10\n600000,100,10\n800000,100,10\n"

func microsecondColumn(unit time.Duration) TraceConfig {
	return TraceConfig{Columns: Columns{Arrival: "t", ArrivalUnit: unit, Input: "in", Output: "out"}}
}

// Read as seconds (the default), a microsecond column replays 5 requests
// over 800,000 s: 6.25e-6 requests/s, a millionth of the load.
func TestMicrosecondColumnReadAsSecondsIsRefused(t *testing.T) {
	tr, err := NewTrace(strings.NewReader(microsecondLog), "client.csv", microsecondColumn(0))
	require.NoError(t, err)
	err = endOf(tr)
	require.ErrorIs(t, err, ErrImplausibleRate)
	for _, part := range []string{
		"client.csv", "arrivals read in seconds, as TraceConfig.Columns.ArrivalUnit says",
		"5 requests over 222h13m20s: 6.25e-06 requests/s, below one a day",
		"set TraceConfig.Columns.ArrivalUnit to the column's unit (read in microseconds it would be 6.25 requests/s)",
		"or set TraceConfig.AnyRate to accept it",
	} {
		assert.ErrorContains(t, err, part)
	}
	assert.True(t, math.Abs(tr.Clock().Rate()-6.25e-6) < 1e-15, "%v", tr.Clock().Rate())

	tr, err = NewTrace(strings.NewReader(microsecondLog), "client.csv", microsecondColumn(time.Microsecond))
	require.NoError(t, err)
	require.NoError(t, endOf(tr))
	c := tr.Clock()
	assert.Equal(t, TraceClock{Unit: time.Microsecond, Field: "TraceConfig.Columns.ArrivalUnit", Requests: 5, Span: 800 * time.Millisecond}, c)
	assert.Equal(t, 6.25, c.Rate(), "5 requests over 0.8 s")
	assert.Equal(t, "arrivals read in microseconds, as TraceConfig.Columns.ArrivalUnit says; 5 requests over 800ms: 6.25 requests/s", c.String())
}

// A column of seconds read as microseconds: 4 requests over 3 µs, 1.3
// million a second.
func TestSecondsColumnReadAsMicrosecondsIsRefused(t *testing.T) {
	trace := "t,in,out\n0,100,10\n1,100,10\n2,100,10\n3,100,10\n"
	tr, err := NewTrace(strings.NewReader(trace), "s.csv", microsecondColumn(time.Microsecond))
	require.NoError(t, err)
	err = endOf(tr)
	require.ErrorIs(t, err, ErrImplausibleRate)
	assert.ErrorContains(t, err, "4 requests over 3µs: 1.333e+06 requests/s, above a million a second")
	assert.ErrorContains(t, err, "(read in seconds it would be 1.333 requests/s)", "seconds: closest to 10 requests/s of the plausible units")
}

func TestAnyRateAcceptsTheTraceAsItIs(t *testing.T) {
	cfg := microsecondColumn(0)
	cfg.AnyRate = true
	tr, err := NewTrace(strings.NewReader(microsecondLog), "client.csv", cfg)
	require.NoError(t, err)
	require.NoError(t, endOf(tr))
	assert.Equal(t, 800000*time.Second, tr.Clock().Span)
}

func TestDateTimesTwoYearsApartAreRefusedWithoutAUnitToSet(t *testing.T) {
	trace := "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\n2025-11-16 18:15:46.68,396,109\n"
	tr, err := NewTrace(strings.NewReader(trace), "az.csv", Azure())
	require.NoError(t, err)
	err = endOf(tr)
	require.ErrorIs(t, err, ErrImplausibleRate)
	assert.ErrorContains(t, err, "date-time arrivals; 2 requests over 17544h0m0s")
	assert.ErrorContains(t, err, "date-times carry their unit: check the file, or set TraceConfig.AnyRate")
	assert.Zero(t, tr.Clock().Unit)
}

// One request, or any number at one instant, implies no rate.
func TestNoRateWithoutASpan(t *testing.T) {
	for _, trace := range []string{"t,in,out\n5000000000,1,1\n", "t,in,out\n7,1,1\n7,2,2\n7,3,3\n"} {
		tr, err := NewTrace(strings.NewReader(trace), "x.csv", microsecondColumn(0))
		require.NoError(t, err)
		require.NoError(t, endOf(tr))
		assert.True(t, math.IsNaN(tr.Clock().Rate()))
		assert.Contains(t, tr.Clock().String(), "no rate implied")
	}
}

// The rate is the window's, measured on the recorded clock: a Slowdown
// does not change it, so it cannot hide a unit mistake.
func TestRateIsTheRecordedWindows(t *testing.T) {
	cfg := microsecondColumn(time.Microsecond)
	cfg.Transform = Transform{WindowStart: 200 * time.Millisecond, WindowEnd: 700 * time.Millisecond, Slowdown: 4}
	tr, err := NewTrace(strings.NewReader(microsecondLog), "client.csv", cfg)
	require.NoError(t, err)
	require.NoError(t, endOf(tr))
	assert.Equal(t, 3, tr.Clock().Requests, "200, 400 and 600 ms")
	assert.Equal(t, 400*time.Millisecond, tr.Clock().Span)
	assert.Equal(t, 7.5, tr.Clock().Rate())
}

func TestConversationReplayReportsTheUnitError(t *testing.T) {
	cfg := microsecondColumn(0)
	cfg.Conversations.Keep = true
	rep, err := NewReplay(strings.NewReader(microsecondLog), "client.csv", cfg)
	require.NoError(t, err)
	err = endOf(rep)
	assert.True(t, errors.Is(err, ErrImplausibleRate), "%v", err)
	assert.Equal(t, 5, rep.(*ConversationTrace).Clock().Requests)
}

// The shipped traces are plausible as configured: Azure's 2023
// conversation trace, an hour at about 5.5 requests/s; Mooncake's
// synthetic trace, millisecond timestamps, about 3.9 requests/s.
func TestSharedTracesArePlausible(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  TraceConfig
		n    int
		rate float64
	}{
		{azureConv, Azure(), 19366, 5.530},
		{mooncake, Mooncake(0), 3993, 3.907},
	} {
		tr, err := OpenTrace(sharedTrace(t, tc.name), tc.cfg)
		require.NoError(t, err)
		require.NoError(t, endOf(tr), tc.name)
		tr.Close()
		assert.Equal(t, tc.n, tr.Clock().Requests, tc.name)
		assert.InDelta(t, tc.rate, tr.Clock().Rate(), 0.001, tc.name)
	}
}
