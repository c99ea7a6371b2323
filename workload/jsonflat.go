package workload

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

// field is one member of a flat object: its key and its value's raw
// bytes, both within the line. An array of plain integers (digits only,
// at most 19, without leading zero: every hash id list's) is also read
// into ints[lo:hi] of the reader's scratch; lo is -1 for any other value.
type field struct {
	key, raw []byte
	lo, hi   int
}

// flatObject appends to dst, and returns, the members of text, a JSON
// object whose keys and string values are printable ASCII without
// escapes and whose values are numbers, such strings, true, false,
// null or arrays of numbers, with ok; for any other text, ok is false
// (it may not be JSON at all; json.Unmarshal says). A key given twice
// is there twice, in order: json.Unmarshal keeps the last. The plain
// integers of its arrays are appended to ints (see field).
func flatObject(dst []field, ints []uint64, text []byte) (_ []field, _ []uint64, ok bool) {
	i := skipWS(text, 0)
	if i == len(text) || text[i] != '{' {
		return dst, ints, false
	}
	i = skipWS(text, i+1)
	if i < len(text) && text[i] == '}' {
		return dst, ints, skipWS(text, i+1) == len(text)
	}
	for {
		k0 := i
		if i = plainString(text, i); i < 0 {
			return dst, ints, false
		}
		key := text[k0+1 : i-1]
		if i = skipWS(text, i); i == len(text) || text[i] != ':' {
			return dst, ints, false
		}
		v0 := skipWS(text, i+1)
		f := field{key: key, lo: -1}
		if v0 < len(text) && text[v0] == '[' {
			lo, plain := len(ints), false
			if i, ints, plain = flatArray(text, v0, ints); plain {
				f.lo, f.hi = lo, len(ints)
			} else {
				ints = ints[:lo]
			}
		} else {
			i = flatValue(text, v0)
		}
		if i < 0 {
			return dst, ints, false
		}
		f.raw = text[v0:i]
		dst = append(dst, f)
		if i = skipWS(text, i); i == len(text) {
			return dst, ints, false
		}
		switch text[i] {
		case ',':
			i = skipWS(text, i+1)
		case '}':
			return dst, ints, skipWS(text, i+1) == len(text)
		default:
			return dst, ints, false
		}
	}
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
	for i++; i < len(text); i++ {
		switch c := text[i]; {
		case c == '"':
			return i + 1
		case c < 0x20 || c > 0x7e || c == '\\':
			return -1
		}
	}
	return -1
}

// flatValue is the index after the value at i (a number, a plain string,
// true, false or null; flatArray reads arrays), or -1.
func flatValue(text []byte, i int) int {
	if i >= len(text) {
		return -1
	}
	switch text[i] {
	case '"':
		return plainString(text, i)
	case 't':
		return literal(text, i, "true")
	case 'f':
		return literal(text, i, "false")
	case 'n':
		return literal(text, i, "null")
	}
	// The usual number, an integer without sign or leading zero, is read
	// here, as number reads it; number reads the rest from its start.
	j := i
	for i < len(text) && text[i]-'0' < 10 {
		i++
	}
	if wholeInt(text, j, i) {
		return i
	}
	return number(text, j)
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
func flatArray(text []byte, i int, ints []uint64) (end int, _ []uint64, plain bool) {
	plain = true
	i = skipWS(text, i+1)
	if i < len(text) && text[i] == ']' {
		return i + 1, ints, plain
	}
	for {
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
				return -1, ints, false
			}
			plain = false
		case i-j > 19: // x may have wrapped
			plain = false
		case plain:
			ints = append(ints, x)
		}
		if i = skipWS(text, i); i == len(text) {
			return -1, ints, false
		}
		switch text[i] {
		case ',':
			i = skipWS(text, i+1)
		case ']':
			return i + 1, ints, plain
		default:
			return -1, ints, false
		}
	}
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
