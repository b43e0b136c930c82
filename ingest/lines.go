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
//
// A line longer than the reader's buffer is held in parts, each at most
// partMax, then joined once into a slice of its exact size: the line costs
// about twice its size while it is read, and its size once read. (Growing
// one slice by append would copy it a dozen times, and leave it with a
// quarter more capacity than it needs.)
type lineReader struct {
	br      *bufio.Reader
	max     int
	parts   [][]byte
	scratch []byte // a part kept for the next lines, at most keepMax
	line    int
	read    int64 // bytes of the stream read, skipped lines too
}

const (
	partMin = 64 << 10
	partMax = 8 << 20
	keepMax = 1 << 20
)

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
	clear(l.parts)
	l.parts = l.parts[:0]
	total, held := 0, 0
	for {
		chunk, err := l.br.ReadSlice('\n')
		total += len(chunk)
		l.read += int64(len(chunk))
		if total <= l.max+1 { // +1: the newline itself
			if err == nil && held == 0 {
				// The common case: the whole line is in the reader's buffer.
				l.line++
				return trimEOL(chunk), l.line, nil
			}
			l.hold(chunk, held)
			held += len(chunk)
		} else if held > 0 {
			clear(l.parts) // too long: let it go now
			l.parts, held = l.parts[:0], 0
		}
		switch {
		case err == nil:
			l.line++
			if total > l.max+1 {
				return nil, l.line, errLineTooLong{total - 1, l.max}
			}
			return trimEOL(l.joined(held)), l.line, nil
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
			return trimEOL(l.joined(held)), l.line, nil
		default:
			return nil, l.line, err
		}
	}
}

// owned reports whether the line next returned is the caller's to keep:
// a line longer than keepMax is joined into a slice of its own that the
// reader never reuses (joined keeps only smaller ones as scratch), so a
// caller may keep it without a copy.
func (l *lineReader) owned(line []byte) bool { return cap(line) > keepMax }

// hold copies chunk after the held bytes of the line, into the last part
// or a new one as large as what is held (between partMin and partMax).
func (l *lineReader) hold(chunk []byte, held int) {
	for len(chunk) > 0 {
		if n := len(l.parts); n > 0 && cap(l.parts[n-1]) > len(l.parts[n-1]) {
			p := l.parts[n-1]
			k := copy(p[len(p):cap(p)], chunk)
			l.parts[n-1] = p[:len(p)+k]
			chunk = chunk[k:]
			held += k
			continue
		}
		size := min(max(held, partMin), partMax)
		var p []byte
		if len(l.parts) == 0 && cap(l.scratch) >= size {
			p = l.scratch[:0]
		} else {
			p = make([]byte, 0, size)
		}
		l.parts = append(l.parts, p)
	}
}

// joined returns the held line in one slice of n bytes.
func (l *lineReader) joined(n int) []byte {
	var b []byte
	if len(l.parts) == 1 {
		b = l.parts[0]
	} else {
		b = make([]byte, 0, n)
		for _, p := range l.parts {
			b = append(b, p...)
		}
	}
	if cap(b) <= keepMax && cap(b) > cap(l.scratch) {
		l.scratch = b
	}
	return b
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
