package workload

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/ascend"
)

// skimTraceGen writes random JSON Lines traces for the skimming first
// pass (skimmer, skimRun) whose first line, the skim's template, varies
// as TestRereadIsTheFile's and FuzzSkimLine's do not: the members in any
// order (the hash id list first, in the middle or last), compact or
// spaced, an extra column not mapped. The lines after it mostly keep
// the template's bytes, with values the skim takes or leaves to the full
// parse: arrivals that go back, leave a window or overflow, numbers not
// plain, lists that count up (plainRun's countUp) or are malformed,
// nested, hold a ']' in a string or are cut; a member after the last
// (a key again), bytes after the object or its end cut.
type skimTraceGen struct {
	rng      *rand.Rand
	mooncake bool // the members in Mooncake's order (readFour's), else shuffled
}

// skimStyle is how a line is written: its bytes around the members and
// their order, and whether an extra column ends it.
type skimStyle struct {
	open, colon, sep, close string
	order                   []string
	extra                   bool
}

// style draws a line's style.
func (g skimTraceGen) style() skimStyle {
	r := g.rng
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	keys := []string{"timestamp", "input_length", "output_length", "hash_ids"}
	if !g.mooncake {
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	}
	return skimStyle{
		open: pick("{", "{", "{ "), colon: pick(": ", ":", " : "), sep: pick(", ", ",", " , ", ",  "),
		close: pick("}", "}", " }"), order: keys, extra: r.IntN(8) == 0,
	}
}

// ids draws a hash id list, well formed or not.
func (g skimTraceGen) ids() string {
	r := g.rng
	switch r.IntN(16) {
	case 0:
		return "[]"
	case 1:
		return "[1, :, 3]"
	case 2:
		return "[[1], 2]"
	case 3:
		return `[1, "a]"]`
	case 4:
		return "[1, 2"
	case 5:
		return "[-1, 2]"
	case 6:
		return "[1.5]"
	case 7:
		return "[{}]"
	case 8:
		return "[ ]"
	case 9:
		return "[8, 9, :, 11]"
	case 10:
		return "[1,2,3]"
	}
	// A run counting up, maybe broken, in a trace's spacing.
	x := uint64(r.IntN(3000))
	if r.IntN(4) == 0 {
		x = uint64(r.IntN(100)*10 + 7)
	}
	var b strings.Builder
	b.WriteByte('[')
	for i := range 1 + r.IntN(30) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, x)
		x++
		if r.IntN(12) == 0 {
			x += uint64(r.IntN(5)) + 1
		}
	}
	b.WriteByte(']')
	return b.String()
}

// number draws a number, plain or not: the next arrival after *prev
// (moved to it), or a token count when prev is nil.
func (g skimTraceGen) number(prev *int64) string {
	r := g.rng
	switch r.IntN(24) {
	case 0:
		return "0" + fmt.Sprint(r.IntN(100))
	case 1:
		return "1.5e3"
	case 2:
		return "-3"
	case 3:
		return "9223372036854775807"
	case 4:
		return "99999999999999999999"
	case 5:
		return "4294967296"
	case 6:
		return "12.0"
	case 7:
		return `"7"`
	case 8:
		return "null"
	}
	if prev == nil {
		return fmt.Sprint(r.IntN(5000))
	}
	d := int64(r.IntN(2500))
	if r.IntN(10) == 0 {
		d = -d
	}
	*prev = max(*prev+d, 0)
	if r.IntN(30) == 0 {
		*prev += 1 << 40
	}
	return fmt.Sprint(*prev)
}

// line writes a line in st: plain, the template's values at *prev;
// else values drawn.
func (g skimTraceGen) line(st skimStyle, prev *int64, plain bool) string {
	var b strings.Builder
	b.WriteString(st.open)
	for i, k := range st.order {
		if i > 0 {
			b.WriteString(st.sep)
		}
		b.WriteString(`"` + k + `"` + st.colon)
		switch k {
		case "hash_ids":
			if plain {
				b.WriteString("[0, 1]")
			} else {
				b.WriteString(g.ids())
			}
		case "timestamp":
			if plain {
				fmt.Fprint(&b, *prev)
			} else {
				b.WriteString(g.number(prev))
			}
		default:
			if plain {
				b.WriteString("600")
			} else {
				b.WriteString(g.number(nil))
			}
		}
	}
	if st.extra {
		b.WriteString(st.sep + `"x"` + st.colon + "1")
	}
	b.WriteString(st.close)
	return b.String()
}

// trace draws a trace: a template line, then up to 11 more.
func (g skimTraceGen) trace() string {
	r := g.rng
	st := g.style()
	prev := int64(r.IntN(3000))
	lines := []string{g.line(st, &prev, true)}
	for range r.IntN(12) {
		switch r.IntN(14) {
		case 0:
			lines = append(lines, "")
		case 1:
			lines = append(lines, g.line(g.style(), &prev, r.IntN(2) == 0))
		case 2, 3, 4:
			lines = append(lines, g.line(st, &prev, false))
		default:
			prev += int64(r.IntN(2000))
			s := g.line(st, &prev, true)
			switch r.IntN(6) {
			case 0, 1, 2: // other lists, the template's numbers
				s = strings.Replace(s, "[0, 1]", g.ids(), 1)
			case 3: // a member after the template's last: a key again
				k := st.order[r.IntN(len(st.order))]
				s = strings.TrimSuffix(s, st.close) + st.sep + `"` + k + `"` + st.colon + fmt.Sprint(prev+500) + st.close
			case 4: // bytes after the object, or its end cut
				s = []string{s + "}", s + " x", strings.TrimSuffix(s, st.close)}[r.IntN(3)]
			}
			lines = append(lines, s)
		}
	}
	return strings.Join(lines, "\n")
}

// TestSkimOnVariedTemplates holds the skimming first pass to the full
// one (checkReread: checkSkim and checkSkimSpan) on random traces whose
// template is not Mooncake's line: members in any order and spacing.
func TestSkimOnVariedTemplates(t *testing.T) {
	g := skimTraceGen{rng: rand.New(rand.NewPCG(41, 11))}
	secs := Mooncake(0)
	secs.Columns.ArrivalUnit = time.Second
	keep := Mooncake(0)
	keep.KeepOrigin = true
	bases := []TraceConfig{Mooncake(0), secs, keep}
	n := 400
	if testing.Short() {
		n = 60
	}
	skimmed, inside := 0, 0 // lines the skim took; of them, with the list not last
	for i := range n {
		text := g.trace()
		data := []byte(text)
		for _, cfg := range rereadConfigs(bases[i%len(bases)]) {
			checkReread(t, data, cfg)
		}
		k := skimmedLines(data, bases[i%len(bases)])
		skimmed += k
		if !strings.HasSuffix(strings.TrimRight(text[:strings.IndexByte(text+"\n", '\n')], " }"), "]") {
			inside += k
		}
	}
	t.Logf("%d lines skimmed, %d with the hash id list before another member", skimmed, inside)
	require.Greater(t, inside, n/2)
}

// skimmedLines is how many lines of data a first pass in cfg skims.
func skimmedLines(data []byte, cfg TraceConfig) int {
	p := parser{name: "s", cfg: cfg}
	j := newJSONRows(bytes.NewReader(data), "s")
	j.skim = &skimmer{p: &p}
	n := 0
	for {
		r, err := j.next()
		if err != nil {
			return n
		}
		var req Request
		if _, _, err := p.parse(r, &req); err != nil {
			return n
		}
		if j.skimmed {
			n++
		}
	}
}

// checkChunkRead holds a replay's template's read of a line in the
// scanner's chunk (skimmer.read's inChunk, skimNext's way) to its read
// of the line scanText cuts (skimmer.line), at the start of each line
// of data after its first (the template): a line the chunk's way takes
// ends where the line does, before a '\n', has plain ends (scanText's
// fast way cuts it so), and is read alike, line by line: the same
// arrival, token counts and hash ids, and the runs, when either counts
// them, the ids' runs. A line it leaves goes
// scanText's way. With a template of four (skimmer.four), readFour reads
// each line as read does: it takes the lines read takes, to the same
// arrival, end, counts, ids and runs. It returns how many lines it took,
// and how many readFour took.
func checkChunkRead(t *testing.T, data []byte, cfg TraceConfig) (taken, fours int) {
	t.Helper()
	first := bytes.IndexByte(data, '\n')
	if first < 0 {
		return 0, 0
	}
	p := parser{name: "c", cfg: cfg}
	j := newJSONRows(bytes.NewReader(data[:first+1]), "c")
	j.skim = &skimmer{p: &p, ids: true}
	r, err := j.next()
	if err != nil {
		return 0, 0
	}
	var req Request
	if _, _, err := p.parse(r, &req); err != nil || !j.skim.ready {
		return 0, 0
	}
	s := j.skim
	for at := first + 1; at < len(data); {
		k := bytes.IndexByte(data[at:], '\n')
		if k < 0 {
			k = len(data) - at
		}
		line := data[at : at+k]
		raw, end, ok := s.read(data[at:], true)
		in, out, ids, runs := s.in, s.out, slices.Clone(s.ints), s.runs
		if s.four {
			raw4, end4, ok4 := s.readFour(data[at:])
			require.Equal(t, ok, ok4, "readFour takes the lines read takes: %q", data[at:])
			if ok {
				fours++
				require.Equal(t, []any{raw, end, in, out, runs}, []any{raw4, end4, s.in, s.out, s.runs}, "%q", data[at:])
				require.Equal(t, ids, slices.Clone(s.ints), "%q", data[at:])
			}
		}
		if ok {
			taken++
			require.Equal(t, k, end, "where the line ends: %q", data[at:])
			require.Less(t, at+end, len(data), "a '\\n' after the line: %q", line)
			require.True(t, plainEnds(line), "%q", line)
			lineRaw, lineOK := s.line(line)
			require.True(t, lineOK, "a line the chunk's way takes, not the line's: %q", line)
			require.Equal(t, lineRaw, raw, "%q", line)
			require.Equal(t, []any{s.in, s.out}, []any{in, out}, "%q", line)
			require.Equal(t, slices.Clone(s.ints), ids, "%q", line)
			// The runs, when counted (a line whose first id the
			// chunk's way reads from 8 bytes past the line's end may
			// count them where the line's leaves them to the scan):
			// the ids' runs, so that the request's promise is the same
			// (skimmer.request).
			for _, r := range []int{runs, s.runs} {
				if r != 0 {
					want := 0
					for u := 0; u < len(ids); u += ascend.Each(ids[u:]) {
						want++
					}
					require.Equal(t, want, r, "the runs of %q", line)
				}
			}
		}
		at += k + 1
	}
	return taken, fours
}

// chunkSpoilers are what TestChunkReadIsTheLine writes into a trace's
// lines: white space and line ends where a line read in the chunk must
// not run on into the next line, and ends scanText trims.
var chunkSpoilers = []struct{ from, to string }{
	{", ", ",\n"}, {", ", "\n, "}, {", ", ", \n"}, {"[", "[\n"}, {"[", "[ "}, {"]", "\n]"}, {"]", " ]"},
	{"}", "}\r"}, {"}", "} "}, {"{", " {"}, {"{", "\n{"}, {":", ":\n"}, {"\"", "\n\""},
}

// TestChunkReadIsTheLine holds a line read in the scanner's chunk to
// the line scanText cuts (checkChunkRead), and the replay that reads its
// lines so (chunkSkim) to its twin and to the slow replay (checkReread),
// on skimTraceGen's random traces with chunkSpoilers written into some
// of their lines (half of them in Mooncake's order, readFour's), and on
// the Mooncake trace, whose every line after the first the chunk's way
// takes, and readFour.
func TestChunkReadIsTheLine(t *testing.T) {
	g := skimTraceGen{rng: rand.New(rand.NewPCG(41, 59))}
	n := 400
	if testing.Short() {
		n = 60
	}
	taken, fours := 0, 0
	for i := range n {
		g.mooncake = i%2 == 1
		text := g.trace()
		for range g.rng.IntN(3) {
			sp := chunkSpoilers[g.rng.IntN(len(chunkSpoilers))]
			if k := strings.Count(text, sp.from); k > 0 {
				parts := strings.SplitAfterN(text, sp.from, 1+g.rng.IntN(k)+1)
				last := parts[len(parts)-2]
				parts[len(parts)-2] = strings.TrimSuffix(last, sp.from) + sp.to
				text = strings.Join(parts, "")
			}
		}
		if g.rng.IntN(2) == 0 {
			text += "\n"
		}
		data := []byte(text)
		n, four := checkChunkRead(t, data, Mooncake(0))
		taken, fours = taken+n, fours+four
		for _, cfg := range rereadConfigs(Mooncake(0)) {
			checkReread(t, data, cfg)
		}
		want := rereadRun(data, rereadConfigs(Mooncake(0))[0])
		defer func(on bool) { chunkSkim = on }(chunkSkim)
		chunkSkim = false
		require.Equal(t, want, rereadRun(data, rereadConfigs(Mooncake(0))[0]), "%q", data)
		chunkSkim = true
	}
	t.Logf("%d lines read in the chunk, %d of them by readFour", taken, fours)
	require.Greater(t, taken, n/2)
	require.Greater(t, fours, n/8)
	if data, ok := mooncakeData(t); ok {
		lines := bytes.Count(data, []byte("\n"))
		taken, fours := checkChunkRead(t, data, Mooncake(0))
		require.Equal(t, []int{lines - 1, lines - 1}, []int{taken, fours}, "the Mooncake lines read in the chunk, and by readFour")
	}
}

// FuzzChunkRead is checkChunkRead on any lines after a Mooncake line.
func FuzzChunkRead(f *testing.F) {
	head := `{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}` + "\n"
	for _, s := range skimLineSeeds {
		f.Add([]byte(s + "\n" + s + "\n"))
	}
	for _, sp := range chunkSpoilers {
		f.Add([]byte(strings.Replace(skimLineSeeds[9], sp.from, sp.to, 1) + "\n" + skimLineSeeds[0] + "\n"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkChunkRead(t, append([]byte(head), data...), Mooncake(0))
	})
}
