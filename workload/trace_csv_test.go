package workload

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// csvRecords reads data as NewCSVRows does (newRowReader's reader), with plain
// lines (plainCSV) or without: each record's fields and line, and the
// error that ended it (a line each), and how many plain lines were read.
func csvRecords(t *testing.T, data []byte, plain bool) (string, int) {
	t.Helper()
	defer func(was bool) { plainCSV = was }(plainCSV)
	plainCSV = plain
	var b strings.Builder
	rows, err := NewCSVRows(bytes.NewReader(data), "f.csv", []string{"a"}, []string{"a", "b", "c", "d"})
	if err != nil {
		fmt.Fprintf(&b, "error %v\n", err)
		return b.String(), 0
	}
	c := rows.rows
	for {
		r, err := c.next()
		if err == io.EOF {
			b.WriteString("EOF\n")
			break
		}
		if err != nil {
			fmt.Fprintf(&b, "error %v\n", err)
			break
		}
		fmt.Fprintf(&b, "%d %q", r.line(), c.rec)
		for _, col := range []string{"a", "b", "c", "d", ""} {
			v, ok := r.get(col)
			fmt.Fprintf(&b, " %s=%q,%t", col, v, ok)
		}
		b.WriteByte('\n')
	}
	return b.String(), c.skips
}

// randomCSV is a CSV file with a header of one to four columns, its lines plain or not: quoted fields
// holding commas, quotes and line ends, "\r\n" or "\n" ends, a '\r'
// inside, empty lines, a line of another number of fields, a bare
// quote, spaces about a value, long lines past the reader's buffer, and
// the last line with or without its '\n'.
func randomCSV(rng *rand.Rand) []byte {
	var b bytes.Buffer
	cols := 1 + rng.IntN(4)
	head := []string{"a", " b", "c ", "d"}[:cols]
	if rng.IntN(10) == 0 {
		head[0] = `"a"`
	}
	end := "\n"
	if rng.IntN(2) == 0 {
		end = "\r\n"
	}
	if rng.IntN(20) == 0 {
		b.WriteString(end)
	}
	b.WriteString(strings.Join(head, ",") + end)
	lines := rng.IntN(400)
	for i := range lines {
		n := cols
		if rng.IntN(200) == 0 {
			n += rng.IntN(3) - 1
		}
		for f := range n {
			if f > 0 {
				b.WriteByte(',')
			}
			switch rng.IntN(40) {
			case 0:
				b.WriteString(`"x,` + end + `y"`)
			case 1:
				b.WriteString(`"q""z"`)
			case 2:
				b.WriteString(" 7 ")
			case 3:
				b.WriteString("x\ry")
			case 4:
				if rng.IntN(10) == 0 {
					b.WriteString(`x"y`)
				} else {
					b.WriteString("1")
				}
			case 5:
				b.WriteString(strings.Repeat("9", rng.IntN(6000)))
			case 6:
				b.WriteString("\u00a0" + "5")
			default:
				fmt.Fprint(&b, rng.IntN(100000))
			}
		}
		if i < lines-1 || rng.IntN(2) == 0 {
			b.WriteString(end)
		}
		if rng.IntN(50) == 0 {
			b.WriteString(end)
		}
	}
	return b.Bytes()
}

// TestPlainCSVLinesAreCSV holds plainLine to encoding/csv alone
// (plainCSV off) on random CSV files: every record's fields, values and
// line, and the error that ends the file. It requires plain lines read.
func TestPlainCSVLinesAreCSV(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	plain := 0
	for i := range 600 {
		data := randomCSV(rng)
		want, _ := csvRecords(t, data, false)
		got, n := csvRecords(t, data, true)
		require.Equal(t, want, got, "file %d:\n%s", i, data)
		plain += n
	}
	require.Greater(t, plain, 20_000, "plain lines read")
	t.Logf("%d plain lines read", plain)
}

// FuzzPlainCSV holds plainLine to encoding/csv alone on any input.
func FuzzPlainCSV(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 8 {
		f.Add(randomCSV(rng))
	}
	f.Add([]byte("a,b,c\r\n1,2,3\r\n\r\n4,5\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		want, _ := csvRecords(t, data, false)
		got, _ := csvRecords(t, data, true)
		require.Equal(t, want, got)
	})
}

// TestCSVColumnsByPosition holds csvRequired, which reads a CSV row's
// arrival and token counts by their positions, to its twin, which reads
// them by name (csvByPosition off): random Azure-like traces, their
// columns in any order beside another, their values plain, spaced,
// negative, not numbers, empty, date-times or numbers, a row short here
// and there, replayed plain, filtered and at a TargetRate: the same replay or the
// same error, byte for byte (rereadRun).
func TestCSVColumnsByPosition(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	values := []string{"1", "17", " 42 ", "-3", "x", "", "2023-11-16 18:15:46.5", "2.5", "99999999999"}
	taken := 0
	for range 400 {
		head := []string{"TIMESTAMP", "ContextTokens", "GeneratedTokens", "Other"}
		rng.Shuffle(len(head), func(i, j int) { head[i], head[j] = head[j], head[i] })
		if rng.IntN(8) == 0 {
			head = head[:3] // a required column may be missing
		}
		var b strings.Builder
		b.WriteString(strings.Join(head, ",") + "\n")
		dates := rng.IntN(2) == 0
		for r := range rng.IntN(30) {
			fields := make([]string, len(head))
			for i, h := range head {
				switch {
				case rng.IntN(12) == 0:
					fields[i] = values[rng.IntN(len(values))]
				case h == "TIMESTAMP" && dates:
					fields[i] = fmt.Sprintf("2023-11-16 18:%02d:%02d.%d", r/60, r%60, rng.IntN(1000))
				case h == "TIMESTAMP":
					fields[i] = fmt.Sprint(r)
				default:
					fields[i] = fmt.Sprint(rng.IntN(500))
				}
			}
			if rng.IntN(60) == 0 {
				fields = fields[:1+rng.IntN(len(fields))] // refused by csv.Reader, as any record of another length
			}
			b.WriteString(strings.Join(fields, ",") + "\n")
		}
		data := []byte(b.String())
		for _, cfg := range []TraceConfig{Azure(), {Format: CSV, Columns: Azure().Columns, Filters: []Filter{{Column: "Other", Values: []string{"1", "2", "3"}}}},
			{Format: CSV, Columns: Azure().Columns, Transform: Transform{TargetRate: 2}}} {
			csvByPosition = false
			want := rereadRun(data, cfg)
			csvByPosition = true
			got := rereadRun(data, cfg)
			require.Equal(t, want, got, "config %+v, data %q", cfg, data)
			if !strings.HasPrefix(got, "refused") {
				taken++
			}
		}
	}
	require.Greater(t, taken, 300, "replays not refused")
}

// TestCSVFieldsOutliveTheRow: a plain line's fields (cut from one
// string a buffer, plainLine) stay what they were after later lines are
// read, past many refills of the reader's buffer, as csv.Reader's own do:
// every field kept from every record, compared at the end.
func TestCSVFieldsOutliveTheRow(t *testing.T) {
	var data bytes.Buffer
	data.WriteString("a,b,c,d\n")
	for i := range 3000 {
		if i%700 == 3 {
			fmt.Fprintf(&data, "\"q%d\",%d,x,y\n", i, i) // a line csv.Reader reads
			continue
		}
		fmt.Fprintf(&data, "%d,class%d,%d,%s\n", i, i*7, i%13, strings.Repeat("z", i%37))
	}
	kept := func(plain, chunk bool) []string {
		defer func(p, c bool) { plainCSV, chunkCSV = p, c }(plainCSV, chunkCSV)
		plainCSV, chunkCSV = plain, chunk
		rows, err := NewCSVRows(bytes.NewReader(data.Bytes()), "f.csv", []string{"a"}, []string{"a", "b", "c", "d"})
		require.NoError(t, err)
		var all []string
		for {
			r, err := rows.rows.next()
			if err == io.EOF {
				return all
			}
			require.NoError(t, err)
			all = append(all, rows.rows.rec...)
			v, _ := r.get("b")
			all = append(all, v)
		}
	}
	want := kept(false, true)
	require.Len(t, want, 3000*5)
	require.Equal(t, want, kept(true, true), "fields cut from one string a buffer")
	require.Equal(t, want, kept(true, false), "a string a line")
}
