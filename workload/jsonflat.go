package workload

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unsafe"
)

// A JSON Lines trace row is a flat object: the Mooncake trace's
// {"timestamp": 0, "input_length": 40160, "output_length": 6,
// "hash_ids": [0, 1, …]}. encoding/json reads one into a
// map[string]json.RawMessage at about 60,000 instructions a Mooncake
// line (it validates the line, then decodes it, byte by byte, through
// its state machine, and allocates a key and a value a field).
// flatObject reads the objects traces hold in one pass, into fields
// that point into the line, and declines anything else, which
// json.Unmarshal then reads as before: its results and its errors are
// the same either way (FuzzFlatObject holds flatObject to
// json.Unmarshal, field by field).

// field is one member of a flat object: where its key and its value's
// raw bytes are within the line, text[k0:k1] and text[v0:v1] (offsets,
// not slices: a field holds no pointer, so a line's fields are written
// without write barriers). An array of plain integers (digits only, at
// most 19, without leading zero: every hash id list's) is also read into
// ints[lo:hi] of the reader's scratch; a plain integer, the value itself,
// is read into x, lo being scalarInt; lo is -1 for any other value.
type field struct {
	k0, k1, v0, v1 int32
	lo, hi         int32
	x              uint64
}

// scalarInt is field.lo for a value that is a plain integer, field.x.
const scalarInt = -2

// key is f's key within text, the line it was read from.
func (f *field) key(text []byte) []byte { return text[f.k0:f.k1] }

// raw is f's value's bytes within text, the line it was read from.
func (f *field) raw(text []byte) []byte { return text[f.v0:f.v1] }

// flatObject appends to dst, and returns, the members of text, a JSON
// object whose keys and string values are printable ASCII without
// escapes and whose values are numbers, such strings, true, false,
// null or arrays of numbers, with ok; for any other text, ok is false
// (it may not be JSON at all; json.Unmarshal says). A key given twice
// is there twice, in order: json.Unmarshal keeps the last. The plain
// integers of its arrays are appended to ints (see field).
//
// memo, when not nil, holds the bytes before each value of the lines
// read with it (see keyMemo): a member whose bytes before its value are
// the last line's is read by one compare. flatObject(dst, ints, text,
// nil) is its slow twin, which FuzzFlatObjectMemo holds it to.
func flatObject(dst []field, ints []uint64, text []byte, memo *keyMemo) (_ []field, _ []uint64, ok bool) {
	i := 0       // the start of text, then the end of each value
	matched := 0 // members read by the memo
	if memo != nil {
		memo.same = false // until the line ends as the last one did
	}
	for n := 0; ; n++ {
		var k0, k1 int
		v0 := -1
		if memo != nil && n < len(memo.segs) {
			if s := &memo.segs[n]; len(text)-i >= len(s.b) && string(text[i:i+len(s.b)]) == string(s.b) {
				k0, k1, v0 = i+s.k0, i+s.k1, skipWS(text, i+len(s.b))
				matched++
			}
		}
		if v0 < 0 {
			// The member's separator: '{' before the first, ',' before
			// the others, or the object's end.
			s0 := i
			if i = skipWS(text, i); i == len(text) {
				return dst, ints, false
			}
			switch c := text[i]; {
			case n == 0 && c == '{':
				if i = skipWS(text, i+1); i < len(text) && text[i] == '}' {
					ok = skipWS(text, i+1) == len(text)
					memo.end(0, 0, ok)
					return dst, ints, ok
				}
			case n > 0 && c == ',':
				i = skipWS(text, i+1)
			case n > 0 && c == '}':
				ok = skipWS(text, i+1) == len(text)
				memo.end(n, matched, ok)
				return dst, ints, ok
			default:
				return dst, ints, false
			}
			k0 = i + 1
			if i = plainString(text, i); i < 0 {
				return dst, ints, false
			}
			k1 = i - 1
			if i = skipWS(text, i); i == len(text) || text[i] != ':' {
				return dst, ints, false
			}
			v0 = skipWS(text, i+1)
			if memo != nil {
				memo.set(n, text[s0:v0], k0-s0, k1-s0)
			}
		}
		lo, hi, x := -1, 0, uint64(0)
		// The usual scalar, a plain integer of 1 to 7 digits other than
		// 0, with 8 bytes from v0 on, read from one 8-byte load as
		// flatValue reads it (its n digits; 0 for any other value). It is
		// written here, not called (a function of its own is over the
		// inliner's budget): flatObject and that call took 899
		// instructions a Mooncake line, flatObject with it inline 830
		// (cachegrind, Regime/MooncakeReplay, 2026-12-05).
		n := 0
		if v0+8 <= len(text) && text[v0]-'1' < 9 {
			n, x = leadingDigits(binary.LittleEndian.Uint64(text[v0 : v0+8])) // 0 for 8 digits or more
			if c := text[v0+n]; c == '.' || c|0x20 == 'e' {
				n = 0 // a fraction or an exponent
			}
		}
		switch {
		case n > 0:
			i, lo = v0+n, scalarInt
		case v0 < len(text) && text[v0] == '[':
			start, plain := len(ints), false
			if i, ints, plain, _ = flatArray(text, v0, ints); plain {
				lo, hi = start, len(ints)
			} else {
				ints = ints[:start]
			}
		default:
			plain := false
			if i, x, plain = flatValue(text, v0); plain {
				lo = scalarInt
			}
		}
		if i < 0 {
			return dst, ints, false
		}
		dst = append(dst, field{int32(k0), int32(k1), int32(v0), int32(i), int32(lo), int32(hi), x})
	}
}

// keyMemo holds, for each member of the last line flatObject read with
// it, the bytes from the end of the value before (or the line's start)
// to the start of its own value: white space, '{' or ',', the key and
// ':'; and where the key is within them. A trace's lines give their
// keys in the same order, with the same spaces, so the next line's
// member most likely starts with the same bytes; bytes that are the
// same are read the same way, to the same key (the value may be
// preceded by more white space, which flatObject skips).
//
// same says whether the last line, read whole, had the keys of the line
// before it, the same bytes before every value: then a member's index
// is the last line's (jsonRows' hints).
type keyMemo struct {
	segs []keySeg
	same bool
}

// end records the end of a line of n members, matched of them read by
// the memo, ok when the line was read: the memo keeps the line's n
// members, not those of a longer line before.
func (m *keyMemo) end(n, matched int, ok bool) {
	if m == nil {
		return
	}
	m.same = ok && matched == n && n == len(m.segs)
	m.segs = m.segs[:n]
}

// keySeg is the bytes before one member's value, its key b[k0:k1].
type keySeg struct {
	b      []byte
	k0, k1 int
}

// set records seg, the bytes before member n's value, its key
// seg[k0:k1]; the members before n are recorded already.
func (m *keyMemo) set(n int, seg []byte, k0, k1 int) {
	if n == len(m.segs) {
		m.segs = append(m.segs, keySeg{})
	}
	s := &m.segs[n]
	s.b, s.k0, s.k1 = append(s.b[:0], seg...), k0, k1
}

// words24 holds a byte string of 8 to 24 bytes (the bytes before a
// trace's value: a separator, its key and ':') as three little-endian
// words: its bytes 0-7, 8-15 and its last 8 (overlapping the others
// when it is shorter than 24); n is its length, 0 for a string of any
// other length, which is not held. at compares them without a call to
// runtime.memequal (whose call spills its caller's registers): a
// replay's line by its template (skimmer.line, four compares) took
// Regime/MooncakeReplay 82 instructions a request less (13,176 then
// 13,094, the budgets' marginal count). TestWordsAtIsTheCompare holds it
// to the compare.
type words24 struct {
	w [3]uint64
	n int
}

// wordsOf is b as words24 (n 0 unless b has 8 to 24 bytes).
func wordsOf(b []byte) (p words24) {
	if n := len(b); n >= 8 && n <= 24 {
		le := binary.LittleEndian
		p = words24{[3]uint64{le.Uint64(b), le.Uint64(b[min(8, n-8):]), le.Uint64(b[n-8:])}, n}
	}
	return p
}

// at says whether text[i:] starts with p's bytes, p held (n > 0) and i
// at most len(text).
func (p *words24) at(text []byte, i int) bool {
	n := p.n
	if n < 8 || len(text)-i < n {
		return false
	}
	// Its words read through a pointer, with no bounds check (each lies
	// in text[i:i+n], n 8 to 24): Regime/MooncakeReplay, servesim's own
	// count, 11,410 then 11,348 instructions a request (skimmer.line's four
	// compares; SERVESIM_BUDGET_FUNCS).
	b, le := unsafe.Add(unsafe.Pointer(unsafe.SliceData(text)), i), binary.LittleEndian
	return le.Uint64((*[8]byte)(b)[:]) == p.w[0] && le.Uint64((*[8]byte)(unsafe.Add(b, n-8))[:]) == p.w[2] &&
		(n <= 16 || le.Uint64((*[8]byte)(unsafe.Add(b, 8))[:]) == p.w[1])
}

// skipWS is the index of the first byte at or after i that is not JSON
// whitespace.
func skipWS(text []byte, i int) int {
	// Every whitespace byte is <= ' ': any other byte ends the run at
	// its first comparison.
	for i < len(text) && text[i] <= ' ' && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r') {
		i++
	}
	return i
}

// plainString is the index after the string at i, a string of printable
// ASCII without escapes, or -1.
func plainString(text []byte, i int) int {
	if i >= len(text) || text[i] != '"' {
		return -1
	}
	// Eight bytes at a time (a key's usual length) while they last: the
	// first that ends the string or spoils it, as the loop below finds
	// it, which took 12 instructions a byte (TestStringStopIsTheLoop).
	for i++; i+8 <= len(text); i += 8 {
		if k := stringStop(binary.LittleEndian.Uint64(text[i:])); k < 8 {
			if text[i+k] == '"' {
				return i + k + 1
			}
			return -1
		}
	}
	for ; i < len(text); i++ {
		switch c := text[i]; {
		case c == '"':
			return i + 1
		case c < 0x20 || c > 0x7e || c == '\\':
			return -1
		}
	}
	return -1
}

// stringStop is the index of the first of w's 8 bytes (little-endian:
// its first byte lowest) that is '"', '\\', below 0x20 or above 0x7e,
// the bytes plainString stops at; 8 if none is. Each test sets the high
// bit of a byte it finds exactly where the first such byte is: a borrow
// or a carry that spoils a later byte's starts at a byte found.
func stringStop(w uint64) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	ctl := (w - 0x20*ones) &^ w // below 0x20 (of the bytes below 0x80)
	high := w | (w + ones)      // 0x7f and up
	q := w ^ '"'*ones
	q = (q - ones) &^ q // '"'
	b := w ^ '\\'*ones
	b = (b - ones) &^ b // '\\'
	return bits.TrailingZeros64((ctl|high|q|b)&highs) >> 3
}

// flatValue is the index after the value at i (a number, a plain string,
// true, false or null; flatArray reads arrays), or -1; for a plain
// integer (digits only, at most 19, without leading zero), its value x
// and plain.
func flatValue(text []byte, i int) (end int, x uint64, plain bool) {
	if i >= len(text) {
		return -1, 0, false
	}
	switch text[i] {
	case '"':
		return plainString(text, i), 0, false
	case 't':
		return literal(text, i, "true"), 0, false
	case 'f':
		return literal(text, i, "false"), 0, false
	case 'n':
		return literal(text, i, "null"), 0, false
	}
	// The usual number, an integer without sign or leading zero, is read
	// here, as number reads it; number reads the rest from its start.
	// Up to 7 digits are read from one 8-byte load (leadingDigits), as
	// the loop reads them.
	j := i
	if i+8 <= len(text) {
		n, y := leadingDigits(binary.LittleEndian.Uint64(text[i:])) // 0, 0 for none or 8 and more
		i, x = i+n, y
	}
	if i == j {
		for ; i < len(text) && text[i]-'0' < 10; i++ {
			x = x*10 + uint64(text[i]-'0')
		}
	}
	if wholeInt(text, j, i) {
		return i, x, i-j <= 19
	}
	return number(text, j), 0, false
}

// wholeInt says whether the digits text[j:i] are a whole JSON number
// that is an integer without sign: at least one digit, no leading zero,
// no fraction or exponent after them (number would end at i too).
func wholeInt(text []byte, j, i int) bool {
	return i > j && (text[j] != '0' || i-j == 1) && (i == len(text) || text[i] != '.' && text[i]|0x20 != 'e')
}

// flatArray is flatValue for the array of numbers at i (text[i] is '['):
// the index after it, or -1. It appends the array's elements to ints
// while they are plain integers (digits only, at most 19, without leading
// zero); plain says they all were, and then ints holds them all.
//
// runs, when not 0, is the number of runs of consecutive ids (each one
// more than the one before) the elements are: plainRun's count, and the
// last element's run, when they were read so, after the '[' at once (0
// otherwise, and for an empty array). A replay's template takes its
// promise of runs from it (skimmer.request); a line read in the
// scanner's chunk (skimmer.read's inChunk), its word that the list held
// no white space, which may be a '\n'.
func flatArray(text []byte, i int, ints []uint64) (end int, _ []uint64, plain bool, runs int) {
	plain = true
	open := i
	i = skipWS(text, i+1)
	if i < len(text) && text[i] == ']' {
		return i + 1, ints, plain, 0
	}
	start, first := len(ints), i == open+1 // first: no element read but plainRun's, from the '[' on
	for {
		if plain {
			var closed bool
			if i, ints, runs, closed = plainRun(text, i, ints); closed {
				// The last element and ']' read by plainRun (i past the
				// ']'), as below.
				if !first {
					runs = 0
				}
				return i, ints, true, runs
			}
			// The usual last element, digits and ']', fewer than 8
			// bytes before the line's end, which plainRun leaves: read
			// as the loop below reads it.
			j := i
			var x uint64
			for ; i < len(text) && text[i]-'0' < 10; i++ {
				x = x*10 + uint64(text[i]-'0')
			}
			if n := i - j; uint(n-1) < 19 && (n == 1 || text[j] != '0') && i < len(text) && text[i] == ']' {
				if !first {
					runs = 0 // elements read below: not counted
				} else if len(ints) == start || x != ints[len(ints)-1]+1 {
					runs++ // a run of its own
				}
				return i + 1, append(ints, x), true, runs
			}
			i, first = j, false
		}
		i = skipWS(text, i)
		// The usual element of a trace's ids, up to 7 digits and its
		// comma, read from 8 bytes at once (leadingDigits): as the loop
		// below reads it, which its digits took 12 instructions each.
		if i+8 <= len(text) {
			w := binary.LittleEndian.Uint64(text[i : i+8])
			if n, x := leadingDigits(w); n > 0 && byte(w>>(8*n&63)) == ',' && (n == 1 || byte(w) != '0') {
				if plain {
					ints = append(ints, x)
				}
				// The usual space after the comma, as skipWS reads it.
				if i += n + 1; i+1 < len(text) && text[i] == ' ' && text[i+1] > ' ' {
					i++
				} else {
					i = skipWS(text, i)
				}
				continue
			}
		}
		// The usual element, an integer without sign or leading zero,
		// is read here; number reads the rest from its start.
		j := i
		var x uint64
		for ; i < len(text); i++ {
			d := text[i] - '0'
			if d > 9 {
				break
			}
			x = x*10 + uint64(d)
		}
		if n := i - j; i < len(text) && text[i] == ',' && uint(n-1) < 19 && (n == 1 || text[j] != '0') {
			// The usual element and its comma, read as below reads them.
			if plain {
				ints = append(ints, x)
			}
			i = skipWS(text, i+1)
			continue
		}
		switch {
		case !wholeInt(text, j, i):
			if i = number(text, j); i < 0 {
				return -1, ints, false, 0
			}
			plain = false
		case i-j > 19: // x may have wrapped
			plain = false
		case plain:
			ints = append(ints, x)
		}
		if i = skipWS(text, i); i == len(text) {
			return -1, ints, false, 0
		}
		switch text[i] {
		case ',':
			i = skipWS(text, i+1)
		case ']':
			return i + 1, ints, plain, 0
		default:
			return -1, ints, false, 0
		}
	}
}

// plainRun reads, from text[i:], the elements of an array of a trace's
// ids, as Python's json.dumps writes them by default (", " between
// elements): up to 5 digits, a comma, a space and the next element's
// first byte, read from one 8-byte load an id, appended to ints. It
// returns where it stopped, at the first element not so written (or
// fewer than 8 bytes before the end), which flatArray's loop reads.
//
// A trace's ids mostly count up by one (a prompt's blocks are numbered
// in order): after an element x so read, the next is likely x+1, x's
// bytes with its last digit one higher, which next holds (with its ", ",
// the first bytes that mask keeps; inc adds 1 to that digit). An element
// whose bytes are next's is x+1 read as above, at a compare instead of
// leadingDigits; after a 9, next's digit is ':', which no element
// matches. The element after it may start with white space, which
// flatArray reads as more elements and the skipWS after it skips.
//
// The ids are written into ints' spare capacity, grown as append grows
// it, with no check of the capacity an id but the loop's own.
//
// runs is how many runs of consecutive ids it read: each element it
// reads is one more than the id before it, or begins a run (countUp's
// read on, one more each).
//
// closed says it read the list's last id too, and its ']' (i past it),
// in 8 bytes of text (the usual last id of a line read within the
// scanner's chunk, skimmer.read's inChunk): the id after a run it
// counted up, next's digits (countUp's guess) and then ']', or an id
// whose digits leadingDigits read, then ']' (a list of one id, or a
// run's first). Those ids were read by this loop, which stopped at the
// ']', and then by flatArray's, which plainRun handed their digits:
// Regime/MooncakeReplay, servesim's own count, 10,420 then 10,399
// instructions a request with the first (plainRun 196 and flatArray 92,
// then plainRun 187 and flatArray out of the top 40, countUp 464 then
// 470; SERVESIM_BUDGET_FUNCS); with the second, and readFour's call of
// plainRun, 10,266 then 10,194. With the first's test in countUp's
// loop, the loop reloaded its mask from the stack at every id (countUp
// 499).
func plainRun(text []byte, i int, ints []uint64) (_ int, _ []uint64, runs int, closed bool) {
	last := uint64(0) // the last id read, when runs > 0
	for i+8 <= len(text) {
		w := binary.LittleEndian.Uint64(text[i : i+8])
		n, x := leadingDigits(w)
		sep := w >> (8 * uint(n) & 63)
		if uint(n-1) >= 5 || uint16(sep) != ','|' '<<8 || byte(sep>>16) <= ' ' || (n > 1 && byte(w) == '0') {
			if n > 0 && byte(sep) == ']' && (n == 1 || byte(w) != '0') {
				// The list's last id, not counted up (a list of one, or
				// a run's first id): closed, as flatArray reads it.
				if runs == 0 || x != last+1 {
					runs++
				}
				return i + n + 1, append(ints, x), runs, true
			}
			return i, ints, runs, false
		}
		ints = append(ints, x)
		k := n + 2
		mask := uint64(1)<<(8*uint(k)&63) - 1
		inc := uint64(1) << (8 * uint(n-1) & 63)
		if runs == 0 || x != last+1 {
			runs++
		}
		var next uint64
		i, ints, next = countUp(text, i+k, ints, x, k, mask, (w+inc)&mask, inc)
		last = ints[len(ints)-1]
		// The list's last id, last+1 and its ']': next's digits (its
		// bytes but the last two, ", "; a guess whose last digit is
		// ':' matches none), then ']'.
		if i+8 <= len(text) {
			if w = binary.LittleEndian.Uint64(text[i : i+8]); (w^next)&(mask>>16) == 0 && byte(w>>(8*uint(n)&63)) == ']' {
				return i + n + 1, append(ints, last+1), runs, true
			}
		}
	}
	return i, ints, runs, false
}

// countUp reads, from text[i:], the elements that count up from prev,
// as plainRun reads them: while the 8 bytes at i are next's where mask
// keeps them, the element there is prev+1, k bytes with its ", " (next
// += inc is the one after it). After an id ending in 9, next's last
// digit is ':', which is no digit: next is carried over (carry) before
// it is compared, when the digit before that is not a 9, and the run
// ends otherwise (a ':' in the text is not read as a digit; guess, the
// next id's bytes as it left them, then holds that ':'). Between
// carries, the inner loop compares at most the ids up to the next one
// ending in 9, so that it reads no ':' guess and checks none. It
// appends the ids to ints and returns where it stopped, and guess, next
// there (plainRun's test of the list's last id).
func countUp(text []byte, i int, ints []uint64, prev uint64, k int, mask, next, inc uint64) (_ int, _ []uint64, guess uint64) {
	// Its capacity its length, so that an 8-byte read below i+8 <=
	// len(text) needs no compare with the capacity too; and the ids
	// written from prev counted up (where base+m+1 took two adds):
	// Regime/MooncakeReplay 12,717 then 12,602 instructions a request
	// (SERVESIM_BUDGET_FUNCS; the loop 21 then 17 instructions an id, one of the 21 an
	// alignment NOP).
	text = text[:len(text):len(text)]
	if i+8 > len(text) {
		return i, ints, next
	}
	// left, the ids whose 8 bytes are in text from i on, is worked out
	// once, and the last digit's byte too, not at each run of ids up to
	// one ending in 9 (a division by k and a bit scan each, about 25
	// instructions): Regime/MooncakeReplay, servesim's own count, 10,756
	// then 10,739 instructions a request (countUp 492 then 475;
	// SERVESIM_BUDGET_FUNCS).
	left := (len(text)-8-i)/k + 1
	s := uint(bits.TrailingZeros64(inc)) & 63 // the last digit's byte
	p := unsafe.Pointer(unsafe.SliceData(text))
	for {
		if byte(next>>s) == ':' {
			c, ok := carry(next, inc, s)
			if !ok {
				return i, ints, next
			}
			next = c
		}
		if len(ints) == cap(ints) {
			ints = slices.Grow(ints, 1)
		}
		out, m := ints[:cap(ints)], len(ints)
		end := min(len(out), m+int(':'-byte(next>>s)), m+left) // the ids up to one ending in 9, whose 8 bytes are in text
		left -= end - m
		// The loop reads each id's 8 bytes at i through a pointer, with
		// no compare of i with len(text) (end bounds it: the last id
		// read is at most at len(text)-8) and no bounds check: 11
		// instructions an id, for 17 with text[i:i+8] and the compare.
		// Regime/MooncakeReplay, servesim's own count, 11,506 then
		// 11,410 instructions a request (countUp 588 then 492;
		// SERVESIM_BUDGET_FUNCS). TestCountUpStaysInText holds it to
		// text's bytes.
		for ; m < end; m++ {
			if binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(p, i))[:])&mask != next {
				return i, out[:m], next
			}
			prev++
			out[m] = prev
			i += k
			next += inc
		}
		ints = out[:m]
		if left == 0 {
			return i, ints, next
		}
	}
}

// carry is next, a guess whose last digit (the byte inc adds 1 to, at
// bit s) is ':', the digit after a 9, with that digit '0' and the one
// before it one higher, when that one is a digit below 9: the id after
// one ending in 9 (not 99). ok is false for any other next whose last
// digit is ':'. It takes its caller's s and check of the ':', where it
// worked them out again: Regime/MooncakeReplay, servesim's own count,
// 10,601 then 10,582 instructions a request (countUp 475 then 456;
// SERVESIM_BUDGET_FUNCS). TestCarryIsTheNextID holds it to the ids.
func carry(next, inc uint64, s uint) (_ uint64, ok bool) {
	if s < 8 || byte(next>>((s-8)&63)) >= '9' {
		return next, false
	}
	return next - 10*inc + inc>>8, true
}

// leadingDigits reads the decimal digits that w's bytes begin with (w
// holds 8 bytes of text, little-endian: its first byte lowest): it
// returns how many there are, when 1 to 7, and their value; else 0 and 0
// (8 digits or more are left to flatArray's loop). It is the loop's
// count and value without a branch a digit (TestLeadingDigitsIsTheLoop).
func leadingDigits(w uint64) (n int, x uint64) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// Byte k of y is byte k of w less '0' as long as the bytes before it
	// are digits (none of them borrows): a digit's is 0 to 9, and the
	// first other byte's has its high bit set in y or in y + 0x76 (no
	// carry comes into it either). What the later bytes hold is not read.
	y := w - '0'*ones
	n = bits.TrailingZeros64((y|(y+0x76*ones))&highs) >> 3
	if n == 0 || n == 8 {
		return 0, 0
	}
	// The n digits moved to the top bytes, the first highest of them
	// (zeros before them), are combined in pairs, fours and eights.
	y <<= (64 - 8*uint(n)) & 63 // masked: no check for a shift past 63
	y = (y*10 + y>>8) & 0x00ff00ff00ff00ff
	y = (y*100 + y>>16) & 0x0000ffff0000ffff
	y = (y*10000 + y>>32) & 0xffffffff
	return n, y
}

// digitCount is leadingDigits' n alone, without their value.
func digitCount(w uint64) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	y := w - '0'*ones
	if n := bits.TrailingZeros64((y|(y+0x76*ones))&highs) >> 3; n < 8 {
		return n
	}
	return 0
}

// literal is the index after word at i, or -1.
func literal(text []byte, i int, word string) int {
	if len(text)-i < len(word) || string(text[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// number is the index after the JSON number at i, or -1: an optional
// minus, 0 or digits not starting with 0, then an optional fraction and
// an optional exponent (RFC 8259, section 6).
func number(text []byte, i int) int {
	if i < len(text) && text[i] == '-' {
		i++
	}
	switch {
	case i < len(text) && text[i] == '0':
		i++
	case i < len(text) && '1' <= text[i] && text[i] <= '9':
		i = digits(text, i)
	default:
		return -1
	}
	if i < len(text) && text[i] == '.' {
		if j := digits(text, i+1); j > i+1 {
			i = j
		} else {
			return -1
		}
	}
	if i < len(text) && (text[i] == 'e' || text[i] == 'E') {
		i++
		if i < len(text) && (text[i] == '+' || text[i] == '-') {
			i++
		}
		if j := digits(text, i); j > i {
			i = j
		} else {
			return -1
		}
	}
	return i
}

// digits is the index after the run of decimal digits at i.
func digits(text []byte, i int) int {
	for i < len(text) && '0' <= text[i] && text[i] <= '9' {
		i++
	}
	return i
}
