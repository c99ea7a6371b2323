package workload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// scanAll is every line jsonRows.scan reads of data (or, with texts,
// every text scanText reads, trimmed and not empty, and the empty lines
// it passed), served by a reader of the given kind, with a scanner whose
// buffer starts at 16 bytes (or max) and grows to max, then its error: by chunks
// of lines (scanLineChunks) or by bufio.ScanLines, a line a call
// (scanChunks off).
func scanAll(data []byte, kind uint8, max int, chunks, texts bool) string {
	var r io.Reader = bytes.NewReader(data)
	switch kind % 4 {
	case 1:
		r = iotest.OneByteReader(r)
	case 2:
		r = iotest.HalfReader(r)
	case 3: // an error with the last bytes, after a part of the input
		r = io.MultiReader(iotest.HalfReader(bytes.NewReader(data[:len(data)/2])),
			iotest.TimeoutReader(bytes.NewReader(data[len(data)/2:])))
	}
	s := bufio.NewScanner(r)
	start := 16
	if kind&4 != 0 {
		start = max // many lines a chunk
	}
	s.Buffer(make([]byte, 0, start), max)
	if chunks {
		s.Split(scanLineChunks)
	}
	j := &jsonRows{s: s, chunks: chunks}
	var b strings.Builder
	for {
		if texts {
			text := j.scanText()
			if text == nil {
				break
			}
			fmt.Fprintf(&b, "%d %q\n", j.ln, text)
			continue
		}
		line, ok := j.scan()
		if !ok {
			break
		}
		fmt.Fprintf(&b, "%q\n", line)
	}
	err := s.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		err = bufio.ErrTooLong
	}
	fmt.Fprintln(&b, err)
	return b.String()
}

// FuzzScanChunks holds jsonRows.scan's lines, cut from chunks of whole
// lines, to bufio.ScanLines', its twin: the same lines, then the same
// error (a line past the buffer's bound, or the reader's), on inputs
// with empty lines, '\r's, white space, a last line without its '\n',
// and readers that return a byte at a time, half of what they are
// asked, or an error; and scanText's texts (its usual line cut from the
// chunk at once) to its loop's over ScanLines.
func FuzzScanChunks(f *testing.F) {
	for _, s := range []string{
		"{\"a\": 1}\n{\"a\": 2}\n",
		"\n\n\r\n\r\r\nx\r",
		" {\"a\": 1} \n\t\n{}\r\n{\"b\": 2}\n",
		"{\"a\": 1}\n{\"b\": 2}\r\n{\"c\": 3} \n{\"d\": 4}\n\n{\"e\": 5}",
		"a\nbb\nccc\ndddd\neeeee\nffffffffffffffffffffffffffffffffffff\ng",
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234\nx",
		"",
	} {
		f.Add([]byte(s), uint8(0), uint8(48))
		f.Add([]byte(s), uint8(1), uint8(16))
		f.Add([]byte(s), uint8(3), uint8(200))
		f.Add([]byte(s), uint8(4), uint8(200))
	}
	f.Fuzz(func(t *testing.T, data []byte, kind, max uint8) {
		m := 16 + int(max)
		require.Equal(t, scanAll(data, kind, m, false, false), scanAll(data, kind, m, true, false), "%q", data)
		require.Equal(t, scanAll(data, kind, m, false, true), scanAll(data, kind, m, true, true), "texts: %q", data)
	})
}

// lastNewline is bytes.LastIndexByte's, on inputs around its windows.
func TestLastNewlineIsLastIndexByte(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, 513, 1023, 1024, 1025, 5000} {
		for _, at := range []int{-1, 0, 1, n / 3, n - 513, n - 512, n - 511, n - 2, n - 1} {
			data := bytes.Repeat([]byte{'x'}, n)
			if at >= 0 && at < n {
				data[at] = '\n'
				if at > 7 {
					data[at-7] = '\n'
				}
			}
			require.Equal(t, bytes.LastIndexByte(data, '\n'), lastNewline(data), "%d bytes, at %d", n, at)
		}
	}
}

// A replay reads the same rows, requests and errors with the scanner's
// lines cut from chunks as with bufio.ScanLines (scanChunks off): the
// Mooncake trace and lines with '\r's, white space and empty lines
// around them, in every configuration checkReread replays.
func TestScanChunksReplay(t *testing.T) {
	head := `{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}`
	inputs := [][]byte{
		[]byte(head + "\r\n" + `{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [1, 2]}` + "\r\n"),
		[]byte("\n" + head + "\n\n \t\n" + `{"timestamp": 2500, "input_length": 40, "output_length": 4, "hash_ids": [7]} ` + "\n\r\n" + head),
		[]byte(head + "\n" + `{"timestamp": 3000, "input_length": 40, "output_length": 4, "hash_ids": [7, x]}` + "\n" + head + "\n"),
	}
	if data, ok := mooncakeData(t); ok {
		inputs = append(inputs, data)
	}
	defer func(on bool) { scanChunks = on }(scanChunks)
	for _, data := range inputs {
		for _, cfg := range rereadConfigs(Mooncake(0)) {
			scanChunks = false
			want := rereadRun(data, cfg)
			scanChunks = true
			require.Equal(t, want, rereadRun(data, cfg), "config %+v, data %.200q", cfg, data)
		}
	}
}
