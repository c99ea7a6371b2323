package report

import (
	"bufio"
	"io"
)

// lineWriter buffers whole lines to an io.Writer and keeps the first write
// error; after an error every later line is dropped.
type lineWriter struct {
	w   *bufio.Writer
	buf []byte // the line being built, reused from line to line
	err error
}

func newLineWriter(w io.Writer) lineWriter {
	return lineWriter{w: bufio.NewWriter(w), buf: make([]byte, 0, 512)}
}

// emit writes the line in buf (which ends with its newline).
func (l *lineWriter) emit() {
	if l.err != nil {
		return
	}
	_, l.err = l.w.Write(l.buf)
}

// Flush writes any buffered lines to the underlying writer and returns the
// first error met so far.
func (l *lineWriter) Flush() error {
	if l.err == nil {
		l.err = l.w.Flush()
	}
	return l.err
}

// Err returns the first write error, or nil. Lines written after it were
// dropped.
func (l *lineWriter) Err() error { return l.err }
