package workload

import (
	"bytes"
	"encoding/binary"
	"math"
	"time"
)

// A TargetRate replay's first pass (timeFactor) needs each row's arrival
// alone: it counts the requests and finds the last instant. On a JSON
// Lines trace that maps no column but the arrival, the token counts and
// the hash ids (Mooncake's), the pass skims a line whose keys are the
// first line's, byte for byte, and whose numbers are plain integers in
// range: it reads the arrival and the token counts, and steps over the
// hash id list to its ']' without reading the ids, the most of a line's
// bytes (about 30 ids a Mooncake line). The replay then parses the file
// again from its start, whole, and the first pass keeps nothing, so a
// replay that stops early (the regimes' first 2,000 of Mooncake's 3,993
// lines) parses only the lines it replays.
//
// A skimmed line holds the keys and numbers the full parse would read
// (its members are the first line's, in order, with no string in a list
// that could hide one), so a trace the full parse accepts gives the same
// count, the same instants and the same replay, byte for byte. What the
// skim does not read is a hash id list's contents: a malformed list (an
// id that is not an unsigned integer) is reported by the replay, at its
// line, when the replay reaches it, not by NewTrace (a replay that stops
// before that line never reports it; vLLM's bench serve, which loads a
// whole dataset first, would refuse it). Any line the skim does not take
// is parsed whole, and its errors are NewTrace's as before; a skimming
// pass that ends in an error is read again whole (timeFactor), so the
// errors NewTrace returns are the full pass's. The slow twin is the full
// first pass (skimFirstPass off), which checkSkim (TestRereadIsTheFile,
// FuzzReread), TestSkimIsTheFullPass and FuzzSkimLine hold it to.

// skimFirstPass is false for the slow twin: the first pass parses every
// line whole (set by the tests alone).
var skimFirstPass = true

// skimmer reads a line's arrival by the first flat line's template
// (learn); it reads none until it has one.
type skimmer struct {
	p     *parser
	ready bool
	segs  [][]byte // the bytes before each member's value (keyMemo's)
	kinds []skimKind
	tail  []byte // the bytes after the last value
}

// skimKind says how a member's value is read.
type skimKind uint8

const (
	skimArrival skimKind = iota // the arrival: a plain integer, at most the unit's limit
	skimCount                   // a token count: a plain integer, at most MaxInt32
	skimList                    // the hash ids: a list, stepped over to its first ']'
)

// skims says whether the first pass of cfg may skim: JSON Lines, no
// filter, and no column mapped but the arrival, the token counts and
// the hash ids (plainRow's rows), whose values it reads.
func skims(cfg TraceConfig) bool {
	c := &cfg.Columns
	return skimFirstPass && cfg.Format == JSONL && !cfg.Sort && len(cfg.Filters) == 0 && c.ID == "" && c.Conversation == "" &&
		c.Turn == "" && c.Priority == "" && c.Class == "" && c.Failed == "" && c.BlockTokensColumn == ""
}

// learn takes the template of j's line, a flat line just read: each
// member's bytes before its value, and how its value is read. A line
// whose keys are not the mapped columns once each, as plain integers
// (the hash ids a list), leaves the skimmer without one, and every line
// is parsed whole.
func (s *skimmer) learn(j *jsonRows) {
	s.ready = false
	c := &s.p.cfg.Columns
	if len(j.memo.segs) != len(j.fields) {
		return
	}
	s.segs, s.kinds = s.segs[:0], s.kinds[:0]
	seen := map[string]bool{}
	for n := range j.fields {
		f := &j.fields[n]
		key := string(f.key(j.text))
		if seen[key] {
			return // a key given twice: json.Unmarshal keeps the last
		}
		seen[key] = true
		var kind skimKind
		switch key {
		case c.Arrival:
			kind = skimArrival
		case c.Input, c.Output:
			kind = skimCount
		case c.PrefixHashes:
			kind = skimList
		default:
			return // a column not mapped: left to the full parse
		}
		if (kind == skimList) != (f.lo >= 0) || kind != skimList && f.lo != scalarInt {
			return
		}
		s.segs = append(s.segs, append([]byte(nil), j.memo.segs[n].b...))
		s.kinds = append(s.kinds, kind)
	}
	if !seen[c.Arrival] || !seen[c.Input] || !seen[c.Output] {
		return
	}
	s.tail = append(s.tail[:0], j.text[j.fields[len(j.fields)-1].v1:]...)
	s.ready = true
}

// line returns the arrival of text, a line whose members are the
// template's (its bytes before each value, and after the last), each
// value a plain integer in its column's range or (the hash ids) a list
// without a string in it, with ok; false for any other line, which is
// then parsed whole.
func (s *skimmer) line(text []byte) (raw time.Duration, ok bool) {
	if !s.ready || s.p.clock == clockDate {
		return 0, false
	}
	i := 0
	for n, seg := range s.segs {
		if len(text)-i < len(seg) || string(text[i:i+len(seg)]) != string(seg) {
			return 0, false
		}
		i += len(seg)
		if s.kinds[n] == skimList {
			// To the list's first ']': with no '"' before it, no string
			// in the list holds a ']' or a key, so the members that
			// follow are the line's.
			if i >= len(text) || text[i] != '[' {
				return 0, false
			}
			e := bytes.IndexByte(text[i:], ']')
			if e < 0 || bytes.IndexByte(text[i:i+e], '"') >= 0 {
				return 0, false
			}
			i += e + 1
			continue
		}
		x, end, plain := skimInt(text, i)
		if !plain {
			return 0, false
		}
		i = end
		switch s.kinds[n] {
		case skimArrival:
			unit, limit := s.p.unit()
			if x > uint64(limit) {
				return 0, false
			}
			raw = time.Duration(x) * unit
		case skimCount:
			if x > math.MaxInt32 {
				return 0, false
			}
		}
	}
	if string(text[i:]) != string(s.tail) {
		return 0, false
	}
	return raw, true
}

// skimInt reads the plain integer at i (digits only, at most 19, without
// leading zero), as flatObject reads one: its value, the index after it,
// and plain; false for anything else.
func skimInt(text []byte, i int) (x uint64, end int, plain bool) {
	if i+8 <= len(text) {
		if n, y := leadingDigits(binary.LittleEndian.Uint64(text[i:])); n > 0 {
			return y, i + n, n == 1 || text[i] != '0'
		}
	}
	j := i
	for ; i < len(text) && text[i]-'0' < 10; i++ {
		x = x*10 + uint64(text[i]-'0')
	}
	n := i - j
	return x, i, n >= 1 && n <= 19 && (n == 1 || text[j] != '0')
}
