package workload

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/ascend"
)

// flatObject is json.Unmarshal into a map[string]json.RawMessage wherever
// it reads a line: the same members (the last of a key given twice), the
// same raw bytes, and string values whose bytes are their text. A row
// read either way answers every column alike.
func FuzzFlatObject(f *testing.F) {
	for _, s := range []string{
		`{"timestamp": 0, "input_length": 40160, "output_length": 6, "hash_ids": [0, 1, 2, 3]}`,
		`{"timestamp":27482,"input_length":6955,"output_length":52,"hash_ids":[46,47]}`,
		`{}`, ` { } `, `{"a":null,"b":true,"c":false,"d":"x y","e":[],"f":-0.5e+3,"a":1}`,
		`{"a":01}`, `{"a":1.}`, `{"a":1e}`, `{"a":-}`, `{"a":[1,]}`, `{"a":[1 2]}`, `{"a":1,}`,
		`{"a":"\u0041"}`, `{"a\"":1}`, `{"a":{"b":1}}`, `{"a":["x"]}`, `{"a":1}x`, `{"a":1} {}`,
		`{"a":"é"}`, `{"a":tru}`, `{"a" 1}`, `{1:1}`, `[1]`, `null`, `{"a":[1.5e-3, -0, 2E7]}`, `{"a":0,"b":10E2,"c":7e1,"d":120.5,"e":00,"f":120}`,
		"{\"a\":1,\n\"b\":\t2}\r", `{"a":[0, 1234567890123456789, 12345678901234567890]}`,
		`{"a":[1234567,12345678,0,7,9999999,123,45 ,6,\t7, 1.5,2e3,3E2,4.0,5 ]}`, `{"a":[120,1204,01,89,1,99]}`,
		`{"a":[120,1204,0123456,89,1,99]}`, `{"a":[120,1204,00000000,89,1,99]}`, `{"a":[120,1204,/,89,1,99]}`,
		`{"a":[120,1204,1e3,89,1,99]}`, `{"a":[120,1204,1.5,89,1,99]}`, `{"a":[120,1204,-1,89,1,99]}`,
		`{"a":[1 2,3,4,5,6,7]}`, `{"a":[12\t34,5,6,7,8,9]}`, `{"a":[12]34,5,6,7,8,9]}`,
		`{"a":[ 3 ,4,5 ], "b":[1,2], "a":[]}`, `{"a":[00]}`, "{\"a\":[1\n,\r2\t]}", `{"a":[18446744073709551615, 1]}`,
		`{"a":[7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21]}`, `{"a":[98, 99, 100, 101, 102, 103, 104, 105, 106]}`,
		`{"a":[12345, 12346, 12347,  12348, 12349, 12350, 12351, 12352]}`, `{"a":[5, 6, 07, 8, 9, 10, 11, 12, 13, 14, 15]}`,
		`{"a":[40, 41, 42, 4, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 5, 55]}`, `{"a":[1, 2, 3, 4, ]}`, `{"a":[1, 2, 3,` + "\t" + `4, 5, 6, 7, 8]}`,
		`{"a":[99998, 99999, 100000, 100001, 100002, 100003]}`, `{"a":[1, 2, 3, 4, 5, 6, 7]}`, `{"a":[10, 11, 12, 13.5, 14, 15, 16]}`,
		`{"a":1234567,"b":12345678,"c":9223372036854775807,"d":9223372036854775808,"e":18446744073709551615}`,
		`{"a":18446744073709551616,"b":99999999999999999999,"c":0,"d":7 ,"e":1234567e1,"f":1234567.0,"g":12345678}`,
		`{"a":1234567}`, `{"a":12345678`, `{"a":0123456, "b":1}`, `{"a":-1234567, "b":1}`,
		`{"a":[107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121]}`, `{"a":[198, 199, 200, 201]}`,
		`{"a":[1288, 1289, 1290, 1291, 1292]}`, `{"a":[1288, 1289, 1280, 1291, 1292]}`, `{"a":[1288, 1289, 12810, 1291]}`,
		`{"a":[1234567890123456789]}`, `{"a":[1, 12345678901234567890]}`, `{"a":[7, 0]}`, `{"a":[7, 01]}`, `{"a":[7, 2 ]}`,
		`{"a":[7, 2]`, `{"a":[7, 2]x}`, `{"a":[7, 1e3]}`, `{"a":[7, 3.5]}`, `{"a":[0]}`, `{"a":[7, 8], "b": [9]}`,
		`{"a":[8, 9, :, 11, 12]}`, `{"a":[18, 19, 1:, 21, 22]}`, `{"a":[98, 99, 9:, 101]}`, `{"a":[12348, 12349, 1234:, 12351]}`,
		`{"a":[07], "b": [1, 2]}`, `{"a":[5, 06], "b": [1]}`, `{"a":[5, 7], "b": [12, 13, 15], "c": 1}`, `{"a":[3, 4, 5, 9], "b": 1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkFlatObject)
}

// checkFlatObject is FuzzFlatObject's check of one line.
func checkFlatObject(t *testing.T, line []byte) {
	fields, ints, ok := flatObject(nil, nil, line, nil)
	var m map[string]json.RawMessage
	err := json.Unmarshal(line, &m)
	if !ok {
		return // declined: json.Unmarshal reads it, as it did before flatObject
	}
	require.NoError(t, err, "flatObject read %q, which json.Unmarshal refuses", line)
	got := map[string]string{}
	for _, f := range fields {
		got[string(f.key(line))] = string(f.raw(line))
	}
	want := map[string]string{}
	for k, v := range m {
		want[k] = string(v)
	}
	require.Equal(t, want, got, "%q", line)

	flat := &jsonRows{text: line, fields: fields, ints: ints, flat: true}
	slow := &jsonRows{obj: m}
	for _, col := range append(keysOf(want), "absent") {
		v, present := flat.get(col)
		w, wpresent := slow.get(col)
		assert.Equal(t, wpresent, present, "%q: column %s", line, col)
		assert.Equal(t, w, v, "%q: column %s", line, col)
		// A plain integer flatObject read is the column's text: its
		// digits, without sign or leading zero.
		if x, ok := plainIntOf(flat, col); ok {
			assert.Equal(t, strconv.FormatUint(x, 10), v, "%q: column %s", line, col)
			assert.LessOrEqual(t, len(v), 19, "%q: column %s", line, col)
		}
		// The integers flatObject read are the ids hashIDs reads
		// from the column's text.
		if got, ok := plainIntsOf(flat, col); ok {
			var p parser
			ids, _, err := p.hashIDs(v)
			require.NoError(t, err, "%q: column %s", line, col)
			assert.Equal(t, ids, append([]uint64{}, got...), "%q: column %s", line, col)
		}
	}
}

// TestFlatArrayCountingUp holds flatArray's guess of the next id (the
// last one plus one) to json.Unmarshal, as FuzzFlatObject does, on
// arrays of ids that mostly count up, across carries (9 to 10, 99999 to
// 100000) and the digit counts the guess reads, with the spoilers a
// guess must not read: another id, a leading zero, a fraction, white
// space, a missing element, the guess after a 9 (its last digit ':').
func TestFlatArrayCountingUp(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 2))
	spoilers := []string{"0", "00", "01", "1.5", "1e2", "-1", "", " ", "x", "18446744073709551616"}
	seps := []string{", ", ", ", ", ", ", ", ",", " ,", ",  ", ",\t", " , "}
	for range 3000 {
		var b strings.Builder
		b.WriteString(`{"hash_ids": [`)
		spoiled := false
		x := []uint64{0, 7, 95, 998, 9990, 99_995, 999_990, 1e7 - 3}[rng.IntN(8)] + uint64(rng.IntN(5))
		for k := range 5 + rng.IntN(40) {
			if k > 0 {
				if rng.IntN(12) == 0 {
					b.WriteString(seps[rng.IntN(len(seps))])
				} else {
					b.WriteString(", ")
				}
			}
			switch r := rng.IntN(30); {
			case r == 0:
				sp := spoilers[rng.IntN(len(spoilers))]
				b.WriteString(sp)
				spoiled = spoiled || sp != "0"
			case r == 1:
				x = uint64(rng.IntN(1000))
				fmt.Fprint(&b, x)
			case r == 2 && x%10 == 0 && x > 0:
				// The guess after an id ending in 9, its last digit
				// ':' (no digit): "1:" after 19, ":" after 9.
				if x > 10 {
					fmt.Fprint(&b, (x-1)/10)
				}
				b.WriteString(":")
				spoiled, x = true, x+1
			default:
				fmt.Fprint(&b, x)
				x++
			}
		}
		b.WriteString(`], "timestamp": 1}`)
		checkFlatObject(t, []byte(b.String()))
		checkRuns(t, []byte(b.String()))
		if !spoiled { // then flatObject reads the line, and the ids as integers
			fields, ints, ok := flatObject(nil, nil, []byte(b.String()), nil)
			require.True(t, ok, "%s", b.String())
			_, plain := plainIntsOf(&jsonRows{text: []byte(b.String()), fields: fields, ints: ints, flat: true}, "hash_ids")
			require.True(t, plain, "%s", b.String())
		}
	}
}

// checkRuns holds flatArray's count of the runs of consecutive ids of
// the list in line (from its first '['), when it gives one, to the
// runs its ids are, counted one id at a time (ascend.Each).
func checkRuns(t *testing.T, line []byte) {
	t.Helper()
	at := bytes.IndexByte(line, '[')
	if at < 0 {
		return
	}
	prior := []uint64{5, 6} // a row's earlier ids, which are no run of the list's
	end, ints, plain, runs := flatArray(line, at, prior)
	if end < 0 || !plain || runs == 0 {
		return
	}
	ids, want := ints[len(prior):], 0
	for u := 0; u < len(ids); u += ascend.Each(ids[u:]) {
		want++
	}
	require.Equal(t, want, runs, "%q: %v", line, ids)
}

// FuzzFlatArrayRuns holds flatArray's count of runs to the ids' runs
// (checkRuns).
func FuzzFlatArrayRuns(f *testing.F) {
	for _, s := range []string{"[0, 1, 2, 3]", "[7]", "[98, 99, 100, 101]", "[5, 6, 9, 10, 11]", "[1199, 1200, 1339, 1340, 1341]",
		"[1, 2,3]", "[4, 5, 6, 2]", "[18446744073709551615, 0]", "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 3, 4]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkRuns(t, line) })
}

// FuzzFlatObjectMemo holds flatObject with a key memo, after it read
// the lines of prev, to flatObject without one (its slow twin) on line:
// the same members, the same integers, the same answer.
func FuzzFlatObjectMemo(f *testing.F) {
	for _, s := range [][2]string{
		{`{"timestamp": 0, "input_length": 40160, "output_length": 6, "hash_ids": [0, 1, 2, 3]}`,
			`{"timestamp": 5, "input_length": 12, "output_length": 7, "hash_ids": [4, 5]}`},
		{`{"a": 1, "b": [1]}`, `{"a": 1, "b": [1], "c": 2}`}, {`{"a": 1, "b": [1]}`, `{"a": 1}`},
		{`{"a": 1, "b": [1]}`, `{"a":  1,  "b": 2}`}, {`{"a": 1, "b": [1]}`, `{"a" : 1, "b": 2}`},
		{`{"a": 1, "b": [1]}`, `{"a": 1, "b": }`}, {`{"a": 1, "b": [1]}`, `{"a": 1, "b"`},
		{`{"a": 1, "b": [1]}`, `{"a": 1 "b": 2}`}, {`{"a": 1, "b": [1]}`, `{"a": 1, "b": 1, "b": 2, "a": 3}`},
		{"{\"a\": 1}\n{\"a\": 1, \"b\": 2}", `{"a": 1, "b": 3}`}, {`{"ab": 1, "b": 2}`, `{"ab": 1, "ba": 2}`},
		{`{"a": 1, "b": 2}`, `{"a": 1, "b": 2}x`}, {`{"a": 1, "b": 2}`, `{"a": 1, "b": 2,}`}, {`{}`, `{}`},
		{` {"a":1}`, ` {"a":1} `}, {`{"a":1}`, `["a":1]`}, {`{"a":"x"}`, `{"a":"x`}, {`{"a":1}`, ``},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, prev, line []byte) {
		var memo keyMemo
		for _, p := range bytes.Split(prev, []byte("\n")) {
			sameWithMemo(t, &memo, p)
		}
		sameWithMemo(t, &memo, line)
		sameWithMemo(t, &memo, line)
	})
}

// FuzzJSONRowsGet reads the lines of data with jsonRows (flatObject with
// its key memo, the field offsets within the line, or json.Unmarshal
// where flatObject declines) and holds each column it answers to
// json.Unmarshal's reading of the line: every key of the line (in the
// line's order, then sorted), and of the line before, then all of them
// again in reverse, and one absent.
func FuzzJSONRowsGet(f *testing.F) {
	for _, s := range []string{
		"{\"timestamp\": 0, \"input_length\": 4, \"hash_ids\": [0, 1]}\n{\"timestamp\": 5, \"input_length\": 6, \"hash_ids\": [2]}",
		"{\"a\": 1, \"b\": 2}\n{\"a\": 1, \"b\": 2, \"a\": 3}\n{\"b\": 4, \"a\": 5}\n{\"a\": 6}",
		"{\"a\": 1, \"a\": 2}\n{\"a\": 3, \"b\": 4}\n{\"a\": 3, \"b\": 4, \"c\": 5}",
		"{\"ab\": 1, \"ba\": 2}\n{\"ba\": 3, \"ab\": 4}\n\n{\"ab\": \"x\", \"ba\": null}",
		"{\"a\": 1}\n{\"a\": {\"b\": 1}}\n{\"a\": 2, \"b\": 3}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j := newJSONRows(bytes.NewReader(data), "fuzz")
		var prev []string
		for {
			r, err := j.next()
			if err != nil {
				return // the end, or a line that is not an object
			}
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(bytes.TrimSpace(j.cur), &m))
			want := map[string]string{}
			for k, v := range m {
				want[k] = string(v)
			}
			var cols []string
			if j.flat { // the keys as the line gives them, twice if twice
				for _, f := range j.fields {
					cols = append(cols, string(f.key(j.text)))
				}
			}
			cols = append(append(cols, keysOf(want)...), prev...)
			for k := range len(cols) {
				cols = append(cols, cols[len(cols)-1-2*k])
			}
			slow := &jsonRows{obj: m}
			for _, col := range append(cols, "absent") {
				v, ok := r.get(col)
				w, wok := slow.get(col)
				require.Equal(t, wok, ok, "%q: column %s", data, col)
				require.Equal(t, w, v, "%q: column %s", data, col)
			}
			prev = keysOf(want)
		}
	})
}

// sameWithMemo reads line with memo and without, and fails the test
// unless both read the same.
func sameWithMemo(t *testing.T, memo *keyMemo, line []byte) {
	t.Helper()
	slow, slowInts, slowOK := flatObject(nil, nil, line, nil)
	fast, fastInts, fastOK := flatObject(nil, nil, line, memo)
	require.Equal(t, slowOK, fastOK, "%q", line)
	if !slowOK {
		return
	}
	require.Equal(t, slow, fast, "%q", line)
	require.Equal(t, slowInts, fastInts, "%q", line)
}

// leadingDigits is the count and value of flatArray's digit loop over 8
// bytes, for up to 7 digits: over every byte after 0 to 7 digits (those
// around the digits, and the digits with their high bit set, included),
// and random words biased to digits. digitCount is the count alone.
func TestLeadingDigitsIsTheLoop(t *testing.T) {
	loop := func(b []byte) (int, uint64) {
		n, x := 0, uint64(0)
		for ; n < len(b) && b[n]-'0' < 10; n++ {
			x = x*10 + uint64(b[n]-'0')
		}
		if n == 8 {
			return 0, 0
		}
		return n, x
	}
	check := func(b []byte) {
		t.Helper()
		n, x := leadingDigits(binary.LittleEndian.Uint64(b))
		wn, wx := loop(b)
		if n != wn || x != wx {
			t.Fatalf("%q: leadingDigits %d digits, %d; the loop %d, %d", b, n, x, wn, wx)
		}
		if c := digitCount(binary.LittleEndian.Uint64(b)); c != wn {
			t.Fatalf("%q: digitCount %d; the loop %d digits", b, c, wn)
		}
	}
	rng := rand.New(rand.NewPCG(41, 1))
	b := make([]byte, 8)
	for digits := 0; digits <= 8; digits++ {
		for c := range 256 {
			for range 20 {
				for k := range b {
					b[k] = byte(rng.IntN(256))
					if k < digits {
						b[k] = '0' + byte(rng.IntN(10))
					}
				}
				if digits < 8 {
					b[digits] = byte(c)
				}
				check(b)
			}
		}
	}
	for range 1_000_000 {
		for k := range b {
			if rng.IntN(4) == 0 {
				b[k] = byte(rng.IntN(256))
			} else {
				b[k] = '0' + byte(rng.IntN(10))
			}
		}
		check(b)
	}
}

func keysOf(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// The lines traces hold are read flat, not declined: a Mooncake line and
// (with ../shared) every line of the Mooncake trace.
func TestTraceLinesAreFlat(t *testing.T) {
	line := []byte(`{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48]}`)
	fields, _, ok := flatObject(nil, nil, line, nil)
	require.True(t, ok)
	require.Len(t, fields, 4)
	assert.Equal(t, "hash_ids", string(fields[3].key(line)))
	assert.Equal(t, "[46, 47, 48]", string(fields[3].raw(line)))

	file, err := os.Open(sharedTrace(t, mooncake))
	require.NoError(t, err)
	defer file.Close()
	s := bufio.NewScanner(file)
	s.Buffer(nil, maxLine)
	n := 0
	var memo keyMemo
	for s.Scan() {
		if strings.TrimSpace(s.Text()) == "" {
			continue
		}
		n++
		_, _, ok := flatObject(nil, nil, s.Bytes(), nil)
		require.True(t, ok, "line %d", n)
		sameWithMemo(t, &memo, s.Bytes())
	}
	require.NoError(t, s.Err())
	assert.Equal(t, 3993, n)
}

// TestStringStopIsTheLoop holds stringStop to plainString's byte loop:
// the first of 8 bytes that ends or spoils a plain string, for every
// byte at every place after plain ones and random bytes after it.
func TestStringStopIsTheLoop(t *testing.T) {
	loop := func(b []byte) int {
		for k, c := range b {
			if c == '"' || c == '\\' || c < 0x20 || c > 0x7e {
				return k
			}
		}
		return len(b)
	}
	rng := rand.New(rand.NewPCG(41, 2))
	b := make([]byte, 8)
	check := func() {
		t.Helper()
		if got, want := stringStop(binary.LittleEndian.Uint64(b)), loop(b); got != want {
			t.Fatalf("%q: stringStop %d, the loop %d", b, got, want)
		}
	}
	for at := 0; at <= 8; at++ {
		for c := range 256 {
			for range 20 {
				for k := range b {
					switch {
					case k < at:
						b[k] = 0x20 + byte(rng.IntN(0x5f))
					default:
						b[k] = byte(rng.IntN(256))
					}
				}
				if at < 8 {
					b[at] = byte(c)
				}
				check()
			}
		}
	}
	for range 1_000_000 {
		for k := range b {
			b[k] = byte(rng.IntN(256))
			if rng.IntN(3) > 0 {
				b[k] = 0x20 + byte(rng.IntN(0x5f))
			}
		}
		check()
	}
}

// FuzzParsePlainInts holds the parser, which takes the plain integers a
// flat JSON Lines row read already (plainRow, found by the row's hints;
// plainIDs), to its reading of the same rows through get alone (the row
// hidden behind an interface that is not a *jsonRows): the same
// requests, arrivals and errors, row by row, under Mooncake's
// configuration and with seconds, filters and every optional column
// mapped.
func FuzzParsePlainInts(f *testing.F) {
	for _, s := range []string{
		"{\"timestamp\": 0, \"input_length\": 40160, \"output_length\": 6, \"hash_ids\": [0, 1, 2, 3]}\n{\"timestamp\": 27482, \"input_length\": 6955, \"output_length\": 52, \"hash_ids\": [46, 47]}",
		"{\"timestamp\": 9223372036854775807, \"input_length\": 2147483647, \"output_length\": 2147483648}",
		"{\"timestamp\": 1, \"input_length\": 2147483647, \"output_length\": 2147483648}",
		"{\"timestamp\": 9223372036, \"input_length\": 2147483648, \"output_length\": 1}",
		"{\"timestamp\": 9223372037, \"input_length\": 1, \"output_length\": 1}",
		"{\"timestamp\": 9223372036854775, \"input_length\": 1, \"output_length\": 1}\n{\"timestamp\": 9223372036854776, \"input_length\": 1, \"output_length\": 1}",
		"{\"timestamp\": 18446744073709551615, \"input_length\": 99999999999999999999, \"output_length\": 0}",
		"{\"timestamp\": \"2024-01-02 03:04:05\", \"input_length\": 1, \"output_length\": 1}\n{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}",
		"{\"timestamp\": 1.5, \"input_length\": 1e3, \"output_length\": -1}\n{\"timestamp\": null, \"input_length\": 1}",
		"{\"timestamp\": 1, \"input_length\": 2, \"output_length\": 3, \"id\": 18446744073709551615, \"turn\": 2147483648, \"priority\": 7, \"class\": \"x\", \"conv\": 12, \"blocks\": 16, \"kind\": 1}",
		"{\"timestamp\": 1, \"input_length\": 2, \"output_length\": 3, \"timestamp\": 4, \"input_length\": [1], \"kind\": \"1\"}",
		// Lines whose keys change: the parser's hints must follow them.
		"{\"timestamp\": 1, \"input_length\": 2, \"output_length\": 3}\n{\"input_length\": 4, \"timestamp\": 5, \"output_length\": 6}\n{\"input_length\": 7, \"timestamp\": 8, \"output_length\": 9}",
		"{\"timestamp\": 1, \"input_length\": 2, \"output_length\": 3, \"timestamp\": 4}\n{\"timestamp\": 5, \"input_length\": 6, \"output_length\": 7}\n{\"timestamp\": 8, \"input_length\": 9, \"output_length\": 10, \"timestamp\": 11}",
		"{\"timestamp\": 1, \"input_length\": 2, \"output_length\": 3}\n{\"timestamp\": 4, \"x\": \"\\u0041\", \"input_length\": 5, \"output_length\": 6}\n{\"timestamp\": 7, \"output_length\": 8, \"input_length\": 9}\n{\"timestamp\": 10, \"output_length\": 11, \"input_length\": 12}",
		"{\"timestamp\": 1, \"input_length\": 2, \"output_length\": 3}\n{\"input_length\": 5, \"timestamp\": 4, \"outp\\u0075t_length\": 6}\n{\"input_length\": 7, \"timestamp\": 8, \"output_length\": 9}",
		"{\"timestamp\": 1, \"input_length\": 2, \"output_length\": 3}\n{\"timestamp\": 4, \"input_length\": 5, \"output_length\": 6, \"x\": \"\\u0041\"}\n{\"timestamp\": 7, \"input_length\": 8, \"output_length\": 9}\n{\"input_length\": 10, \"output_length\": 11, \"timestamp\": 12}",
		"{\"timestamp\": 1, \"input_length\": 2, \"output_length\": 3, \"hash_ids\": [1, 2]}\n{\"timestamp\": 4, \"input_length\": 5, \"output_length\": 6, \"hash_ids\": \"3 4\"}\n{\"timestamp\": 7, \"input_length\": 8, \"output_length\": 9, \"hash_ids\": [5]}",
	} {
		f.Add([]byte(s))
	}
	seedLines(f, mooncake, false)
	cfgs := []TraceConfig{Mooncake(0), Mooncake(0), Mooncake(0)}
	cfgs[1].Columns.ArrivalUnit = 0
	cfgs[2].Columns.ID, cfgs[2].Columns.Turn, cfgs[2].Columns.Priority = "id", "turn", "priority"
	cfgs[2].Columns.Class, cfgs[2].Columns.Conversation, cfgs[2].Columns.BlockTokensColumn = "class", "conv", "blocks"
	cfgs[2].Filters = []Filter{{Column: "kind", Values: []string{"", "1"}}}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, cfg := range cfgs {
			fast, slow := parser{name: "fuzz", cfg: cfg}, parser{name: "fuzz", cfg: cfg}
			j := newJSONRows(bytes.NewReader(data), "fuzz")
			for {
				r, err := j.next()
				if err != nil {
					break
				}
				var fr, sr Request
				fraw, fkeep, ferr := fast.parse(r, &fr)
				sraw, skeep, serr := slow.parse(hiddenRow{r}, &sr)
				require.Equal(t, serr, ferr, "%q", data)
				if serr != nil {
					break // the replay ends at the error
				}
				require.Equal(t, sraw, fraw, "%q", data)
				require.Equal(t, skeep, fkeep, "%q", data)
				require.Equal(t, sr, fr, "%q", data)
				require.Equal(t, slow.clock, fast.clock, "%q", data)
			}
		}
	})
}

// hiddenRow is a row that is not a *jsonRows: the parser reads it
// through get alone.
type hiddenRow struct{ row }

// carry is the id after one ending in 9, as plainRun's guess of it:
// for every id of 1 to 5 digits ending in 9, the guess carried over is
// the next id's bytes and its ", " where the digit before the 9 is not
// a 9 (and there is one), and refused otherwise.
func TestCarryIsTheNextID(t *testing.T) {
	word := func(s string) uint64 {
		var b [8]byte
		copy(b[:], s)
		return binary.LittleEndian.Uint64(b[:])
	}
	for x := uint64(9); x < 100_000; x += 10 {
		s := strconv.FormatUint(x, 10)
		n := len(s)
		mask := uint64(1)<<(8*uint(n+2)) - 1
		inc := uint64(1) << (8 * uint(n-1))
		next := (word(s+", ") + inc) & mask // plainRun's guess after x
		got, ok := carry(next, inc, uint(bits.TrailingZeros64(inc)))
		if want := x%100 != 99 && x >= 10; ok != want {
			t.Fatalf("%d: carry ok %v, want %v", x, ok, want)
		}
		if ok && got != word(strconv.FormatUint(x+1, 10)+", ") {
			t.Fatalf("%d: carry %#x, want the bytes of %d", x, got, x+1)
		}
	}
}

// plainIntOf and plainIntsOf are the parser's reading of column col of
// the flat row j (plainCols), the column found by name.
func plainIntOf(j *jsonRows, col string) (uint64, bool) {
	pc := plainColOf(j, col)
	return pc.int(0)
}

func plainIntsOf(j *jsonRows, col string) ([]uint64, bool) {
	pc := plainColOf(j, col)
	return pc.ids(0)
}

// plainColOf is j's plainCols with column col in slot 0.
func plainColOf(j *jsonRows, col string) plainCols {
	pc := plainCols{ints: j.ints}
	if f, ok := j.field(col, noSlot); ok && j.flat {
		pc.f[0] = f
	}
	return pc
}

// TestWordsAtIsTheCompare holds words24.at to the compare of text[i:]'s
// first bytes with the string it holds, on strings of every length it
// holds, at every place in texts that hold them, hold them spoilt at one
// byte, or end before them.
func TestWordsAtIsTheCompare(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 3))
	for n := 0; n <= 26; n++ {
		for range 300 {
			b := make([]byte, n)
			for k := range b {
				b[k] = byte('a' + rng.IntN(3))
			}
			p := wordsOf(b)
			if n < 8 || n > 24 {
				require.Zero(t, p.n, "%q", b)
				continue
			}
			text := make([]byte, rng.IntN(40))
			for k := range text {
				text[k] = byte('a' + rng.IntN(3))
			}
			at := rng.IntN(len(text) + 1)
			text = append(text[:at], append(append([]byte(nil), b...), text[at:]...)...)
			if rng.IntN(2) == 0 {
				text[at+rng.IntN(n)] ^= byte(1 << rng.IntN(8))
			}
			text = text[:rng.IntN(len(text)+1)]
			for i := 0; i <= len(text); i++ {
				want := len(text)-i >= n && string(text[i:i+n]) == string(b)
				require.Equal(t, want, p.at(text, i), "%q at %d of %q", b, i, text)
			}
		}
	}
}

// TestCountUpStaysInText: countUp reads the ids whose bytes lie in text
// alone, never the bytes past its length (its loop reads 8 bytes an id
// without a bounds check, up to a bound it computes). Each text is a
// prefix of a list that counts on past it, read once with that list's
// bytes after it (which would match a read past the end) and once with
// junk after it: the same ids and the same end, and the ids those the
// text holds.
func TestCountUpStaysInText(t *testing.T) {
	for _, start := range []uint64{0, 7, 95, 990, 12345, 99990} {
		var list []byte
		for x := start; x < start+40; x++ {
			list = fmt.Appendf(list, "%d, ", x)
		}
		n := len(fmt.Sprint(start))
		k := n + 2
		mask := uint64(1)<<(8*uint(k)&63) - 1
		inc := uint64(1) << (8 * uint(n-1) & 63)
		for l := k; l <= len(list); l++ {
			w := binary.LittleEndian.Uint64(append(slices.Clone(list[:k]), "        "...))
			i, got, _ := countUp(list[:l], k, []uint64{start}, start, k, mask, (w+inc)&mask, inc)
			junk := append(slices.Clone(list[:l]), "########"...)
			j, want, _ := countUp(junk[:l], k, []uint64{start}, start, k, mask, (w+inc)&mask, inc)
			require.Equal(t, want, got, "start %d, length %d", start, l)
			require.Equal(t, j, i, "start %d, length %d", start, l)
			for m, x := range got {
				require.Equal(t, start+uint64(m), x)
			}
		}
	}
}
