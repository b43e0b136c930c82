package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// MaxCRILine is the largest logical line CRI joins from partial lines.
const MaxCRILine = 64 << 20

// CRI removes the wrapper that the kubelet's container runtime puts around
// each line of a container log, "<RFC3339Nano> stdout|stderr F|P <payload>",
// and joins partial (P) lines with the lines that complete them, separately
// for stdout and stderr. Lines that are not CRI-wrapped pass through
// unchanged, so one reader handles both kinds of file.
//
// The zero value is ready to use. A CRI is not safe for concurrent use.
type CRI struct {
	// Max caps a joined line; 0 means MaxCRILine.
	Max int

	part    [2][]byte // pending partial payloads of stdout and stderr
	pending [2]bool
	over    [2]bool // the pending line grew past Max and is being dropped
}

var streams = [2]string{"stdout", "stderr"}

// Feed takes the next line of a file, without its newline. It returns ok
// with a complete logical line, or !ok when the line was a partial one kept
// for later or a dropped one. payload aliases line or an internal buffer and
// is valid until the next call to Feed.
//
// An error reports a logical line dropped because it grew past Max; the
// lines after it are unaffected.
func (c *CRI) Feed(line []byte) (payload []byte, ok bool, err error) {
	s, partial, payload, wrapped := splitCRI(line)
	if !wrapped {
		return line, true, nil
	}
	limit := c.Max
	if limit <= 0 {
		limit = MaxCRILine
	}
	if c.over[s] {
		// Drop the rest of a line that was already reported as too long.
		c.over[s] = partial
		c.pending[s] = partial
		return nil, false, nil
	}
	if len(c.part[s])+len(payload) > limit {
		n := len(c.part[s]) + len(payload)
		c.part[s] = nil
		c.over[s] = partial
		c.pending[s] = partial
		return nil, false, fmt.Errorf("CRI line on %s longer than %d bytes (%d so far): dropped", streams[s], limit, n)
	}
	if partial {
		c.part[s] = append(c.part[s], payload...)
		c.pending[s] = true
		return nil, false, nil
	}
	if !c.pending[s] {
		return payload, true, nil
	}
	joined := append(c.part[s], payload...)
	c.part[s] = joined[:0]
	c.pending[s] = false
	return joined, true, nil
}

// End reports a partial line still waiting for its end, on either stream,
// and forgets it: at the end of a stream it is an error.
func (c *CRI) End() error {
	var errs []error
	for s := range c.pending {
		if c.pending[s] {
			errs = append(errs, fmt.Errorf("CRI partial line on %s (%d bytes) never completed", streams[s], len(c.part[s])))
		}
		c.part[s] = nil
		c.pending[s] = false
		c.over[s] = false
	}
	return errors.Join(errs...)
}

// splitCRI parses the CRI wrapper of line. wrapped is false when line does
// not start with a timestamp and a stream name.
func splitCRI(line []byte) (stream int, partial bool, payload []byte, wrapped bool) {
	if len(line) < 20 || !isDigit(line[0]) {
		return 0, false, nil, false
	}
	i := bytes.IndexByte(line, ' ')
	if i < 0 {
		return 0, false, nil, false
	}
	rest := line[i+1:]
	switch {
	case bytes.HasPrefix(rest, []byte("stdout ")):
		stream = 0
	case bytes.HasPrefix(rest, []byte("stderr ")):
		stream = 1
	default:
		return 0, false, nil, false
	}
	if _, ok := parseTime(line[:i], false); !ok {
		if _, err := time.Parse(time.RFC3339Nano, string(line[:i])); err != nil {
			return 0, false, nil, false
		}
	}
	rest = rest[len("stdout "):]
	tag := rest
	if j := bytes.IndexByte(rest, ' '); j >= 0 {
		tag, payload = rest[:j], rest[j+1:]
	} else {
		payload = rest[len(rest):]
	}
	// Tags are ':'-separated; the first says whether the line is partial.
	if j := bytes.IndexByte(tag, ':'); j >= 0 {
		tag = tag[:j]
	}
	return stream, string(tag) == "P", payload, true
}

// parseTime parses an RFC 3339 time, "2006-01-02T15:04:05.999999999Z07:00"
// with 0 to 9 fraction digits, into Unix nanoseconds. When loose, it also
// accepts a space for the 'T', a comma before the fraction, more than 9
// fraction digits, a lower-case 'z' and zone offsets without a colon
// ("+0100", as zap's ISO 8601 encoder writes them).
func parseTime(b []byte, loose bool) (int64, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	if b[10] != 'T' && !(loose && (b[10] == ' ' || b[10] == 't')) {
		return 0, false
	}
	year, ok1 := digits(b[0:4])
	month, ok2 := digits(b[5:7])
	day, ok3 := digits(b[8:10])
	hour, ok4 := digits(b[11:13])
	min, ok5 := digits(b[14:16])
	sec, ok6 := digits(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 ||
		day > daysIn(month, year) || hour > 23 || min > 59 || sec > 59 {
		return 0, false
	}
	b = b[19:]
	nsec := 0
	if b[0] == '.' || loose && b[0] == ',' {
		n := 1
		for n < len(b) && isDigit(b[n]) {
			if n <= 9 {
				nsec = nsec*10 + int(b[n]-'0')
			}
			n++
		}
		if n == 1 || n > 10 && !loose {
			return 0, false
		}
		for k := n; k < 10; k++ {
			nsec *= 10
		}
		b = b[n:]
	}
	var off int
	switch {
	case len(b) == 1 && (b[0] == 'Z' || loose && b[0] == 'z'):
	case len(b) == 6 && (b[0] == '+' || b[0] == '-') && b[3] == ':',
		loose && len(b) == 5 && (b[0] == '+' || b[0] == '-'):
		hh, ok1 := digits(b[1:3])
		mm, ok2 := digits(b[len(b)-2:])
		if !ok1 || !ok2 || hh > 23 || mm > 59 {
			return 0, false
		}
		off = (hh*60 + mm) * 60
		if b[0] == '-' {
			off = -off
		}
	default:
		return 0, false
	}
	t := time.Date(year, time.Month(month), day, hour, min, sec, nsec, time.UTC)
	return unixNS(t.Add(-time.Duration(off) * time.Second)), true
}

// unixNS is t in Unix nanoseconds, with the zero time as 0.
func unixNS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
