package blis

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file parses the block-style subset of YAML that a BLIS TraceV2
// header is written in (BLIS marshals a struct with gopkg.in/yaml.v3):
// nested mappings by indentation, sequences of "- " items (mappings or
// scalars), plain, 'single-' and "double-quoted" scalars, comments, a
// leading "---", and the empty collections {} and []. Anything else a YAML
// file may hold (flow collections, block scalars, anchors, aliases, tags,
// multi-line plain scalars, several documents) is refused with its line,
// never guessed at: a header is a few lines, and a dependency on a full
// YAML parser would outweigh them. The tests compare it with yaml.v3.

// yamlKind is a node's kind.
type yamlKind int

const (
	yamlScalar yamlKind = iota
	yamlMap
	yamlSeq
)

// yamlNode is a parsed node. A scalar keeps its text and whether it was
// quoted (a quoted "3" is a string, a plain 3 a number; a plain null, ~
// or nothing is null).
type yamlNode struct {
	kind   yamlKind
	line   int
	text   string
	quoted bool
	keys   []string    // a mapping's keys, in order
	vals   []*yamlNode // its values, parallel to keys
	items  []*yamlNode // a sequence's items
}

// isNull says whether a scalar is YAML's null.
func (n *yamlNode) isNull() bool {
	if n.kind != yamlScalar || n.quoted {
		return false
	}
	switch n.text {
	case "", "~", "null", "Null", "NULL":
		return true
	}
	return false
}

// yamlError is a problem at a line of the header.
type yamlError struct {
	line   int
	reason string
}

func (e *yamlError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.reason) }

func yamlFail(line int, format string, args ...any) error {
	return &yamlError{line, fmt.Sprintf(format, args...)}
}

// yamlLine is a line with content: its number, indentation and text.
type yamlLine struct {
	n      int
	indent int
	text   string
}

// parseYAML parses a header into its top-level node (an empty mapping for
// an empty document).
func parseYAML(src string) (*yamlNode, error) {
	lines, err := yamlLines(src)
	if err != nil {
		return nil, err
	}
	if len(lines) == 0 {
		return &yamlNode{kind: yamlMap, line: 1}, nil
	}
	p := &yamlParser{lines: lines}
	if lines[0].indent != 0 {
		return nil, yamlFail(lines[0].n, "the document must start at column 1")
	}
	n, err := p.block(0)
	if err != nil {
		return nil, err
	}
	if p.i < len(p.lines) {
		return nil, yamlFail(p.lines[p.i].n, "%q belongs to no block above it", p.lines[p.i].text)
	}
	return n, nil
}

// yamlLines splits src into lines with content, dropping blank and
// comment lines and a leading "---"; it refuses tabs in indentation and a
// second document.
func yamlLines(src string) ([]yamlLine, error) {
	if !utf8.ValidString(src) {
		return nil, yamlFail(1, "the header is not UTF-8 text")
	}
	src = strings.TrimPrefix(src, "\ufeff") // a byte order mark
	var out []yamlLine
	marked := false // the leading "---" was read
	for i, raw := range strings.Split(src, "\n") {
		n := i + 1
		raw = strings.TrimRight(raw, "\r")
		text := strings.TrimLeft(raw, " ")
		indent := len(raw) - len(text)
		if strings.HasPrefix(text, "\t") {
			return nil, yamlFail(n, "a tab in indentation (YAML indents with spaces)")
		}
		if i := strings.IndexFunc(text, unprintable); i >= 0 {
			return nil, yamlFail(n, "a control character or line separator (%U), which this reader does not take", []rune(text[i:])[0])
		}
		if t := trimBlank(text); t == "" || t[0] == '#' {
			continue
		}
		switch {
		case indent == 0 && isMarker(text, "---") && len(out) == 0 && !marked:
			marked = true
			if rest := trimBlank(text[3:]); rest != "" && rest[0] != '#' {
				return nil, yamlFail(n, "content after the document marker ---")
			}
			continue
		case indent == 0 && (isMarker(text, "---") || isMarker(text, "...")):
			return nil, yamlFail(n, "a document marker after the first line: only one document is read")
		case indent == 0 && text[0] == '%':
			return nil, yamlFail(n, "YAML directives are not supported")
		}
		out = append(out, yamlLine{n, indent, text})
	}
	return out, nil
}

// yamlParser walks the lines.
type yamlParser struct {
	lines []yamlLine
	i     int
	depth int
}

// maxYAMLDepth bounds nesting: a BLIS header nests four deep.
const maxYAMLDepth = 32

// block parses the mapping or sequence starting at the current line, whose
// indentation is indent.
func (p *yamlParser) block(indent int) (*yamlNode, error) {
	if p.depth++; p.depth > maxYAMLDepth {
		return nil, yamlFail(p.lines[p.i].n, "nested more than %d deep", maxYAMLDepth)
	}
	defer func() { p.depth-- }()
	if isItem(p.lines[p.i].text) {
		return p.sequence(indent)
	}
	return p.mapping(indent)
}

// isItem says whether a line's text starts a sequence item.
func isItem(text string) bool { return text == "-" || strings.HasPrefix(text, "- ") }

func (p *yamlParser) mapping(indent int) (*yamlNode, error) {
	m := &yamlNode{kind: yamlMap, line: p.lines[p.i].n}
	seen := map[string]bool{}
	for p.i < len(p.lines) && p.lines[p.i].indent == indent && !isItem(p.lines[p.i].text) {
		l := p.lines[p.i]
		key, rest, ok, err := splitKey(l.text, l.n)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, yamlFail(l.n, "%q is not a \"key: value\" line", l.text)
		}
		if seen[key] {
			return nil, yamlFail(l.n, "key %q repeats an earlier key of the same mapping", key)
		}
		seen[key] = true
		p.i++
		v, err := p.value(rest, l, indent)
		if err != nil {
			return nil, err
		}
		m.keys, m.vals = append(m.keys, key), append(m.vals, v)
	}
	return m, p.dedent(indent)
}

// dedent refuses a line indented deeper than the block that just ended.
func (p *yamlParser) dedent(indent int) error {
	if p.i < len(p.lines) && p.lines[p.i].indent > indent {
		return yamlFail(p.lines[p.i].n, "%q belongs to no block above it", p.lines[p.i].text)
	}
	return nil
}

// value parses what follows "key:" on line l (rest), or the block below it.
func (p *yamlParser) value(rest string, l yamlLine, indent int) (*yamlNode, error) {
	if rest != "" {
		return scalarValue(rest, l.n)
	}
	if p.i < len(p.lines) {
		next := p.lines[p.i]
		if next.indent > indent || next.indent == indent && isItem(next.text) {
			return p.block(next.indent)
		}
	}
	return &yamlNode{kind: yamlScalar, line: l.n}, nil // null
}

func (p *yamlParser) sequence(indent int) (*yamlNode, error) {
	s := &yamlNode{kind: yamlSeq, line: p.lines[p.i].n}
	for p.i < len(p.lines) && p.lines[p.i].indent == indent && isItem(p.lines[p.i].text) {
		l := p.lines[p.i]
		content := strings.TrimLeft(l.text[1:], " \t")
		if trimBlank(content) == "" || content[0] == '#' { // the item is the block below, or null
			p.i++
			item := &yamlNode{kind: yamlScalar, line: l.n}
			if p.i < len(p.lines) && p.lines[p.i].indent > indent {
				var err error
				if item, err = p.block(p.lines[p.i].indent); err != nil {
					return nil, err
				}
			}
			s.items = append(s.items, item)
			continue
		}
		if _, _, isKey, err := splitKey(content, l.n); err != nil {
			return nil, err
		} else if isKey || isItem(content) {
			// "- key: v" or "- - v": the item is a block whose first
			// line starts where its content does.
			col := indent + len(l.text) - len(content)
			p.lines[p.i] = yamlLine{l.n, col, content}
			item, err := p.block(col)
			if err != nil {
				return nil, err
			}
			s.items = append(s.items, item)
			continue
		}
		p.i++
		item, err := scalarValue(stripComment(content), l.n)
		if err != nil {
			return nil, err
		}
		s.items = append(s.items, item)
	}
	return s, p.dedent(indent)
}

// maxKey is YAML's limit on an implicit key's length.
const maxKey = 1024

// splitKey splits "key: rest" (rest without its comment); ok is false
// when the text is not a mapping entry.
func splitKey(text string, line int) (key, rest string, ok bool, err error) {
	if text[0] == '"' || text[0] == '\'' {
		k, after, err := quoted(text, line)
		if err != nil {
			return "", "", false, err
		}
		after = strings.TrimLeft(after, " ")
		if after == ":" || strings.HasPrefix(after, ": ") {
			if len(text)-len(after) > maxKey {
				return "", "", false, yamlFail(line, "a key longer than %d characters", maxKey)
			}
			return k, stripComment(after[1:]), true, nil
		}
		return "", "", false, nil
	}
	for i := 0; i < len(text); i++ {
		switch {
		case text[i] == '#' && i > 0 && (text[i-1] == ' ' || text[i-1] == '\t'):
			return "", "", false, nil
		case text[i] == ':' && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\t'):
			k := trimBlank(text[:i])
			if i > maxKey {
				return "", "", false, yamlFail(line, "a key longer than %d characters", maxKey)
			}
			if k == "" || k == "<<" || strings.ContainsAny(k[:1], "?[]{}&*!|>%@`,") {
				return "", "", false, yamlFail(line, "key %q is not a plain key this reader takes", k)
			}
			return k, stripComment(text[i+1:]), true, nil
		}
	}
	return "", "", false, nil
}

// stripComment drops a comment from a plain value and trims it; quoted
// values keep their text and lose only a comment after the quote.
func stripComment(s string) string {
	s = trimBlank(s)
	if s == "" || s[0] == '"' || s[0] == '\'' {
		return s
	}
	if s[0] == '#' {
		return ""
	}
	for i := 1; i < len(s); i++ {
		if s[i] == '#' && (s[i-1] == ' ' || s[i-1] == '\t') {
			s = s[:i]
			break
		}
	}
	return trimBlank(s)
}

// scalarValue parses a value written on its key's (or dash's) line.
func scalarValue(s string, line int) (*yamlNode, error) {
	switch {
	case s == "":
		return &yamlNode{kind: yamlScalar, line: line}, nil
	case s[0] == '"' || s[0] == '\'':
		text, after, err := quoted(s, line)
		if err != nil {
			return nil, err
		}
		if rest := trimBlank(after); rest != "" && rest[0] != '#' {
			return nil, yamlFail(line, "text after a quoted value: %q", rest)
		}
		return &yamlNode{kind: yamlScalar, line: line, text: text, quoted: true}, nil
	case s == "{}":
		return &yamlNode{kind: yamlMap, line: line}, nil
	case s == "[]":
		return &yamlNode{kind: yamlSeq, line: line}, nil
	case strings.ContainsAny(s[:1], "{["):
		return nil, yamlFail(line, "flow collections ({...}, [...]) are not supported: write the block form")
	case strings.ContainsAny(s[:1], "|>"):
		return nil, yamlFail(line, "block scalars (| and >) are not supported")
	case strings.ContainsAny(s[:1], "&*!"):
		return nil, yamlFail(line, "anchors, aliases and tags (&, *, !) are not supported")
	case strings.ContainsAny(s[:1], "%@`?,]}") || isItem(s):
		return nil, yamlFail(line, "%q cannot start a plain value", s)
	case strings.Contains(s, ": ") || strings.Contains(s, ":\t") || strings.HasSuffix(s, ":"):
		return nil, yamlFail(line, "%q holds \": \" or ends in \":\": quote it", s)
	}
	return &yamlNode{kind: yamlScalar, line: line, text: s}, nil
}

// quoted reads a quoted scalar at the start of s and returns its value and
// what follows the closing quote.
func quoted(s string, line int) (string, string, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q && q == '\'' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
			i++
		case c == q:
			return b.String(), s[i+1:], nil
		case c == '\\' && q == '"':
			n, err := unescape(&b, s[i+1:], line)
			if err != nil {
				return "", "", err
			}
			i += n
		default:
			b.WriteByte(c)
		}
	}
	return "", "", yamlFail(line, "a quoted value without its closing %c (values spanning lines are not supported)", q)
}

// yamlEscapes are the one-character escapes of a double-quoted scalar.
var yamlEscapes = map[byte]string{
	'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", '\t': "\t", 'n': "\n", 'v': "\v", 'f': "\f",
	'r': "\r", 'e': "\x1b", ' ': " ", '"': "\"", '/': "/", '\\': "\\", 'N': "\u0085", '_': "\u00a0",
	'L': "\u2028", 'P': "\u2029",
}

// unescape writes the escape at the start of s (after its backslash) and
// returns how many bytes it took.
func unescape(b *strings.Builder, s string, line int) (int, error) {
	if s == "" {
		return 0, yamlFail(line, "a backslash ends the line")
	}
	if e, ok := yamlEscapes[s[0]]; ok {
		b.WriteString(e)
		return 1, nil
	}
	width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[0]]
	if width == 0 || len(s) < 1+width {
		return 0, yamlFail(line, "unknown escape \\%c", s[0])
	}
	r, err := strconv.ParseUint(s[1:1+width], 16, 32)
	if err != nil || !utf8.ValidRune(rune(r)) {
		return 0, yamlFail(line, "bad escape \\%s", s[:1+width])
	}
	b.WriteRune(rune(r))
	return 1 + width, nil
}

// unprintable says whether this reader refuses r in a header: what YAML
// 1.2 does not print (c-printable), and the line breaks other than \n and
// \r\n that YAML 1.1 readers such as yaml.v3 break lines at (U+0085,
// U+2028, U+2029).
func unprintable(r rune) bool {
	switch {
	case r == '\t':
		return false
	case r == 0x85 || r == 0x2028 || r == 0x2029:
		return true
	case r < 0x20 || r >= 0x7f && r < 0xa0:
		return true
	}
	return r >= 0xd800 && r < 0xe000 || r == 0xfffe || r == 0xffff
}

// trimBlank trims YAML's white space (spaces and tabs), not Unicode's.
func trimBlank(s string) string { return strings.Trim(s, " \t") }

// isMarker says whether a line is the document marker m ("---" or "..."),
// alone or followed by white space.
func isMarker(text, m string) bool {
	rest, ok := strings.CutPrefix(text, m)
	return ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t')
}
