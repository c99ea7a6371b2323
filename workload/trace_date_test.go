package workload

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkPlainDateTime holds plainDateTime to its twin, parseDateTime and
// arrival's range check: a date-time it reads is one parseDateTime reads
// to the same instant, inside time.Duration's range.
func checkPlainDateTime(t *testing.T, v string) bool {
	t.Helper()
	d, ok := plainDateTime(v)
	if !ok {
		return false
	}
	tm, ok := parseDateTime(v)
	require.True(t, ok, "%q: plainDateTime read %v, parseDateTime refuses it", v, d)
	require.False(t, tm.Before(minDate) || tm.After(maxDate), "%q: out of range", v)
	require.Equal(t, time.Duration(tm.UnixNano()), d, "%q", v)
	return true
}

// TestPlainDateTimeIsParse holds plainDateTime to parseDateTime on the
// Azure sample's date-times and on random date-times of its shape, their
// fields and fractions in and out of range, one byte changed in some.
func TestPlainDateTimeIsParse(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "examples", "tracereplay", "testdata", "azure_conv_sample.csv"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")[1:]
	for _, line := range lines {
		v, _, _ := strings.Cut(line, ",")
		require.True(t, checkPlainDateTime(t, v), "%q is plain", v)
	}
	for _, v := range []string{"2024-02-29 00:00:00", "2023-02-29 00:00:00", "2000-02-29 23:59:59.999999999999", "1900-02-29 00:00:00",
		"2023-11-16T18:15:46.5", "2023-11-16 18:15:46.", "2023-11-16 18:15:46Z", "2023-11-16 18:15:46,5", "1677-12-31 00:00:00",
		"1678-01-01 00:00:00", "2261-12-31 23:59:59.9", "2262-01-01 00:00:00", "2023-11-16 24:00:00", "2023-11-16 18:60:00",
		"2023-11-16 18:15:60", "2023-00-16 18:15:46", "2023-13-16 18:15:46", "2023-11-00 18:15:46", "2023-11-31 18:15:46",
		"+023-11-16 18:15:46", "2023-11-16 8:15:46.12"} {
		checkPlainDateTime(t, v)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	taken := 0
	for range 200_000 {
		b := []byte("2023-11-16 18:15:46")
		num := func(i, n, most int) {
			x := rng.IntN(most + 1)
			if n == 4 {
				x = 1600 + rng.IntN(most-1599)
			}
			for k := n - 1; k >= 0; k-- {
				b[i+k] = byte('0' + x%10)
				x /= 10
			}
		}
		num(0, 4, 2300)
		num(5, 2, 12+rng.IntN(2))
		num(8, 2, 29+rng.IntN(4))
		num(11, 2, 23+rng.IntN(2))
		num(14, 2, 59+rng.IntN(2))
		num(17, 2, 59+rng.IntN(2))
		if rng.IntN(2) == 0 {
			b[10] = 'T'
		}
		if rng.IntN(3) > 0 {
			b = append(b, '.')
			for range rng.IntN(13) {
				b = append(b, byte('0'+rng.IntN(10)))
			}
		}
		if rng.IntN(8) == 0 {
			b[rng.IntN(len(b))] = "0123456789 -:.TZ+a"[rng.IntN(18)]
		}
		if checkPlainDateTime(t, string(b)) {
			taken++
		}
	}
	assert.Greater(t, taken, 100_000, "date-times read by plainDateTime")
	t.Logf("%d of 200,000 read by plainDateTime", taken)
}

// FuzzPlainDateTime holds plainDateTime to parseDateTime on any string.
func FuzzPlainDateTime(f *testing.F) {
	for _, v := range []string{"2023-11-16 18:15:46.6805900", "2024-02-29T00:00:00", "2023-11-16 18:15:46", "1678-01-01 00:00:00.000000000001"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) { checkPlainDateTime(t, v) })
}

// The Azure sample replays to the same requests with its date-times read
// by parseDateTime (fastDates off), TargetRate's two passes and all.
func TestPlainDateTimesReplayAsParse(t *testing.T) {
	path := filepath.Join("..", "examples", "tracereplay", "testdata", "azure_conv_sample.csv")
	read := func() []Request {
		cfg := Azure()
		cfg.Transform.TargetRate = 1.5
		tr, err := OpenTrace(path, cfg)
		require.NoError(t, err)
		defer tr.Close()
		var out []Request
		for {
			r, err := tr.Next()
			if err != nil {
				require.ErrorIs(t, err, io.EOF)
				return out
			}
			out = append(out, r)
		}
	}
	fast := read()
	fastDates = false
	defer func() { fastDates = true }()
	require.Len(t, fast, 2000)
	assert.Equal(t, read(), fast)
}

// checkPlainCount holds plainCount to strconv.ParseInt, natural's twin.
func checkPlainCount(t *testing.T, v string) bool {
	t.Helper()
	n, ok := plainCount(v)
	if !ok {
		return false
	}
	x, err := strconv.ParseInt(v, 10, 32)
	require.NoError(t, err, "%q", v)
	require.Equal(t, int(x), n, "%q", v)
	require.GreaterOrEqual(t, n, 0, "%q", v)
	return true
}

// TestPlainCountIsParseInt holds plainCount to strconv.ParseInt on
// random strings of digits, signs, spaces and other bytes, up to twelve
// long, and on the edges.
func TestPlainCountIsParseInt(t *testing.T) {
	for _, v := range []string{"", "0", "007", "999999999", "2147483647", "2147483648", "+5", "-5", " 5", "5 ", "1e3", "0x10", "1_000"} {
		checkPlainCount(t, v)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	taken := 0
	for range 200_000 {
		b := make([]byte, rng.IntN(13))
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
			if rng.IntN(30) == 0 {
				b[i] = "+- x./:9\x00"[rng.IntN(9)]
			}
		}
		if checkPlainCount(t, string(b)) {
			taken++
		}
	}
	assert.Greater(t, taken, 50_000)
}

// FuzzPlainCount holds plainCount to strconv.ParseInt on any string.
func FuzzPlainCount(f *testing.F) {
	for _, v := range []string{"374", "007", "999999999", "+1", "1234567890"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) { checkPlainCount(t, v) })
}

// TestDateMemoIsPlainDateTime holds dateTime, which takes a date-time's
// minute from the last one's, to plainDateTime alone: sequences of
// date-times that share their minute for a few rows, then move on,
// their seconds, fractions and later bytes random, one byte changed in
// some (in the minute too).
func TestDateMemoIsPlainDateTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var p parser
	memo, cur := 0, ""
	for range 100_000 {
		if rng.IntN(5) == 0 {
			cur = fmt.Sprintf("%04d-%02d-%02d %02d:%02d", 1990+rng.IntN(60), 1+rng.IntN(12), 1+rng.IntN(31), rng.IntN(25), rng.IntN(61))
		}
		b := []byte(cur)
		if len(b) != 16 {
			b = []byte("2023-11-16 18:15")
		}
		b = append(b, fmt.Sprintf(":%02d", rng.IntN(61))...)
		if rng.IntN(3) > 0 {
			b = append(b, '.')
			for range rng.IntN(12) {
				b = append(b, byte('0'+rng.IntN(10)))
			}
		}
		if rng.IntN(10) == 0 {
			b[rng.IntN(len(b))] = "0123456789 -:.Tx"[rng.IntN(16)]
		}
		v := string(b)
		hit := len(v) >= 16 && p.minute != "" && v[:16] == p.minute
		d, ok := p.dateTime(v)
		want, wantOK := plainDateTime(v)
		require.Equal(t, wantOK, ok, "%q", v)
		if ok {
			require.Equal(t, want, d, "%q", v)
			if hit {
				memo++
			}
		}
	}
	require.Greater(t, memo, 20_000, "date-times read from the memo")
}
