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
// bytes, both within the line.
type field struct {
	key, raw []byte
}

// flatObject appends to dst, and returns, the members of text, a JSON
// object whose keys and string values are printable ASCII without
// escapes and whose values are numbers, such strings, true, false,
// null or arrays of numbers, with ok; for any other text, ok is false
// (it may not be JSON at all; json.Unmarshal says). A key given twice
// is there twice, in order: json.Unmarshal keeps the last.
func flatObject(dst []field, text []byte) (_ []field, ok bool) {
	i := skipWS(text, 0)
	if i == len(text) || text[i] != '{' {
		return dst, false
	}
	i = skipWS(text, i+1)
	if i < len(text) && text[i] == '}' {
		return dst, skipWS(text, i+1) == len(text)
	}
	for {
		k0 := i
		if i = plainString(text, i); i < 0 {
			return dst, false
		}
		key := text[k0+1 : i-1]
		if i = skipWS(text, i); i == len(text) || text[i] != ':' {
			return dst, false
		}
		v0 := skipWS(text, i+1)
		if i = flatValue(text, v0); i < 0 {
			return dst, false
		}
		dst = append(dst, field{key: key, raw: text[v0:i]})
		if i = skipWS(text, i); i == len(text) {
			return dst, false
		}
		switch text[i] {
		case ',':
			i = skipWS(text, i+1)
		case '}':
			return dst, skipWS(text, i+1) == len(text)
		default:
			return dst, false
		}
	}
}

// skipWS is the index of the first byte at or after i that is not JSON
// whitespace.
func skipWS(text []byte, i int) int {
	for i < len(text) && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r') {
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
// true, false, null or an array of numbers), or -1.
func flatValue(text []byte, i int) int {
	if i >= len(text) {
		return -1
	}
	switch text[i] {
	case '"':
		return plainString(text, i)
	case '[':
		i = skipWS(text, i+1)
		if i < len(text) && text[i] == ']' {
			return i + 1
		}
		for {
			// The usual element, an integer without sign or leading
			// zero, is read here; number reads the rest from its start.
			j := i
			for i < len(text) && text[i]-'0' < 10 {
				i++
			}
			if i == j || text[j] == '0' && i-j > 1 || i < len(text) && (text[i] == '.' || text[i]|0x20 == 'e') {
				if i = number(text, j); i < 0 {
					return -1
				}
			}
			if i = skipWS(text, i); i == len(text) {
				return -1
			}
			switch text[i] {
			case ',':
				i = skipWS(text, i+1)
			case ']':
				return i + 1
			default:
				return -1
			}
		}
	case 't':
		return literal(text, i, "true")
	case 'f':
		return literal(text, i, "false")
	case 'n':
		return literal(text, i, "null")
	}
	return number(text, i)
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
