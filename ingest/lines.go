package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// errLineTooLong is the reason given for a line longer than Limits.MaxLine.
type errLineTooLong struct{ n, max int }

func (e errLineTooLong) Error() string {
	return fmt.Sprintf("line of %s is longer than the %s limit: skipped (raise --max-line)", size(e.n), size(e.max))
}

// lineReader splits a stream into lines without holding more than max bytes
// of one line in memory. A last line without a newline is returned at EOF
// (batch files need not end with a newline; the live tailer holds such a
// line back itself).
type lineReader struct {
	br   *bufio.Reader
	max  int
	buf  []byte
	line int
}

func newLineReader(r io.Reader, max int) *lineReader {
	br, ok := r.(*bufio.Reader)
	if !ok || br.Size() < 64<<10 {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	return &lineReader{br: br, max: max}
}

// next returns the next line without its "\n" (and "\r\n"), its 1-based
// number, and an error: errLineTooLong for a skipped line (the stream goes
// on), io.EOF at the end, or a read error. The slice is valid until the next
// call.
func (l *lineReader) next() ([]byte, int, error) {
	l.buf = l.buf[:0]
	total := 0
	for {
		chunk, err := l.br.ReadSlice('\n')
		total += len(chunk)
		if total <= l.max+1 { // +1: the newline itself
			if err == nil && len(l.buf) == 0 {
				// The common case: the whole line is in the reader's buffer.
				l.line++
				return trimEOL(chunk), l.line, nil
			}
			l.buf = append(l.buf, chunk...)
		}
		switch {
		case err == nil:
			l.line++
			if total > l.max+1 {
				return nil, l.line, errLineTooLong{total - 1, l.max}
			}
			return trimEOL(l.buf), l.line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if total == 0 {
				return nil, l.line, io.EOF
			}
			l.line++
			if total > l.max {
				return nil, l.line, errLineTooLong{total, l.max}
			}
			return trimEOL(l.buf), l.line, nil
		default:
			return nil, l.line, err
		}
	}
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

// size formats a byte count for people.
func size(n int) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
