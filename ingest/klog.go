package ingest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest/jsonscan"
)

// klog's text format, the default of kube-controller-manager,
// kube-scheduler and every component built on k8s.io/klog/v2:
//
//	Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg key=value ...
//
// L is the severity (I, W, E, F), threadid is the process id, file is the
// caller's base name. A structured record (klog.InfoS, logr) quotes its
// message with strconv.Quote and follows it with key=value pairs whose
// values klog's serializer (k8s.io/klog/v2/internal/serialize) writes as
//
//   - a Go-quoted string: strings, Stringers, errors, ObjectRefs, and []byte
//     as %+q;
//   - a string holding a line break as a block: "key=<", then each line of
//     the value after a tab, then " >" on a line of its own;
//   - anything else as its JSON (numbers, booleans, null, structs, maps,
//     slices).
//
// An unstructured record (klog.Infof) is the formatted text as it is, which
// may span lines (a panic's stack). The reader joins the lines of a record
// before it is decoded (joiner, join.go).

// yearRef is what the year of a klog text line is inferred from, klog's
// header having none: a time at or after the line (the CRI wrapper's time
// of the same line, the file's modification time, the time of an envelope
// holding it, or the time of the ingest), or, when after is set, a time at
// or before it (the "Log file created at" header klog writes at the top of
// its own log files). The line's year is the one that puts it at most a
// day after (before) the reference. Zero means the time of the ingest.
type yearRef struct {
	ns    int64
	after bool
}

// klogSlack is how far a line may be past its upper reference (or before
// its lower one): clocks of two machines, time zones.
const klogSlack = 24 * time.Hour

// year returns the year of a date without one, month/day hh:mm:ss.
func (r yearRef) year(month, day, hour, min, sec int) int {
	ref := time.Now().UTC()
	if r.ns != 0 {
		ref = time.Unix(0, r.ns).UTC()
	}
	at := func(y int) (time.Time, bool) {
		t := time.Date(y, time.Month(month), day, hour, min, sec, 0, time.UTC)
		return t, t.Day() == day // Feb 29 of a year without one moves
	}
	y := ref.Year()
	step := -1
	if r.after {
		step = 1
	}
	// Four years at most: a Feb 29 finds its leap year.
	for range 5 {
		t, ok := at(y)
		switch {
		case !ok:
		case r.after && !t.Before(ref.Add(-klogSlack)), !r.after && !t.After(ref.Add(klogSlack)):
			return y
		}
		y += step
	}
	return ref.Year()
}

// klogHeader is the parsed header of a klog text line.
type klogHeader struct {
	sev                        byte
	month, day, hour, min, sec int
	usec                       int
	pid, caller, rest          []byte
}

var errKlogHeader = errors.New("klog text: malformed header")

// parseKlogHeader parses "Lmmdd hh:mm:ss.uuuuuu threadid file:line] ".
func parseKlogHeader(b []byte) (h klogHeader, err error) {
	if !isKlogHeader(b) {
		return h, errKlogHeader
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range b[i : i+n] {
			v = v*10 + int(c-'0')
		}
		return v
	}
	h.sev = b[0]
	h.month, h.day = num(1, 2), num(3, 2)
	h.hour, h.min, h.sec, h.usec = num(6, 2), num(9, 2), num(12, 2), num(15, 6)
	if h.month < 1 || h.month > 12 || h.day < 1 || h.day > 31 || h.hour > 23 || h.min > 59 || h.sec > 60 {
		return h, fmt.Errorf("klog text: invalid time %q", b[1:21])
	}
	i := 22
	for i < len(b) && b[i] == ' ' {
		i++
	}
	j := i
	for j < len(b) && isDigit(b[j]) {
		j++
	}
	if j == i || j == len(b) || b[j] != ' ' {
		return h, fmt.Errorf("%w: no thread id", errKlogHeader)
	}
	h.pid = b[i:j]
	i = j + 1
	k := i
	for k < len(b) && b[k] != ']' && b[k] != ' ' && b[k] != '\n' {
		k++
	}
	if k == i || k == len(b) || b[k] != ']' {
		return h, fmt.Errorf("%w: no file:line]", errKlogHeader)
	}
	h.caller = b[i:k]
	k++
	if k < len(b) {
		if b[k] != ' ' {
			return h, fmt.Errorf("%w: no space after ]", errKlogHeader)
		}
		k++
	}
	h.rest = b[k:]
	return h, nil
}

// kv is one key and its value as JSON.
type kv struct {
	key []byte
	val []byte // JSON
}

// decodeKlog decodes a klog text record (a header line and the lines that
// continue it, joined with '\n') into the LogRecord a klog JSON line of the
// same call gives: time, level (klog text has no verbosity: info, warn,
// error or fatal), message, component, CPID and Fields, a JSON object of
// "ts" (Unix milliseconds, as klog JSON writes it), "caller", "pid", "msg"
// and every key=value of the record in order. The component is the
// record's "logger" value, else component (the program the stream comes
// from), else the caller's file. Invalid UTF-8 is replaced by U+FFFD. The
// result does not alias rec.
func decodeKlog(rec []byte, ref yearRef, component string) (cpid.LogRecord, error) {
	var r cpid.LogRecord
	h, err := parseKlogHeader(rec)
	if err != nil {
		return r, err
	}
	y := ref.year(h.month, h.day, h.hour, h.min, h.sec)
	t := time.Date(y, time.Month(h.month), h.day, h.hour, h.min, h.sec, h.usec*1000, time.UTC)
	if t.Day() != h.day {
		return r, fmt.Errorf("klog text: invalid date %02d-%02d", h.month, h.day)
	}
	r.TimeNS = t.UnixNano()
	switch h.sev {
	case 'I':
		r.Level = "info"
	case 'W':
		r.Level = "warn"
	case 'E':
		r.Level = "error"
	case 'F':
		r.Level = "fatal"
	}

	msg, kvs, ok := klogStructured(h.rest)
	if !ok {
		msg, kvs = bytes.TrimRight(h.rest, " \t\r\n"), nil
	}

	b := make([]byte, 0, 64+len(rec)+len(rec)/8)
	b = append(b, `{"ts":`...)
	b = strconv.AppendInt(b, r.TimeNS/1e6, 10)
	us := r.TimeNS % 1e6 / 1e3 // klog's microseconds within the millisecond
	b = append(b, '.', byte('0'+us/100), byte('0'+us/10%10), byte('0'+us%10))
	b = append(b, `,"caller":`...)
	b = appendJSONString(b, h.caller)
	b = append(b, `,"pid":`...)
	if pid, err := strconv.ParseInt(string(h.pid), 10, 64); err == nil {
		b = strconv.AppendInt(b, pid, 10)
	} else {
		b = appendJSONString(b, h.pid)
	}
	b = append(b, `,"msg":`...)
	b = appendJSONString(b, msg)
	var logger, cpidv []byte
	for _, p := range kvs {
		b = append(b, ',')
		b = appendJSONString(b, p.key)
		b = append(b, ':')
		b = append(b, p.val...)
		switch string(p.key) {
		case "logger":
			logger = p.val
		case "cpid":
			cpidv = p.val
		}
	}
	b = append(b, '}')

	r.Msg = validUTF8(msg)
	if s, ok := jsonscan.String(logger, span{S: 0, E: len(logger)}); ok && len(s) > 0 {
		r.Component = string(s)
	}
	if s, ok := jsonscan.String(cpidv, span{S: 0, E: len(cpidv)}); ok {
		r.CPID = string(s)
	}
	if r.Component == "" {
		r.Component = component
	}
	if r.Component == "" {
		c := h.caller
		if i := bytes.LastIndexByte(c, ':'); i > 0 {
			c = c[:i]
		}
		r.Component = validUTF8(c)
	}
	r.Fields = b
	sum := sha256.Sum256(b)
	copy(r.Hash[:], sum[:])
	return r, nil
}

// klogStructured parses the message part of a structured record: a
// Go-quoted message and key=value pairs up to the end of the record. ok is
// false when it is not one (an unstructured record, whose text is its
// message).
func klogStructured(b []byte) (msg []byte, kvs []kv, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	n := quotedEnd(b)
	if n < 0 {
		return nil, nil, false
	}
	m, err := strconv.Unquote(string(b[:n]))
	if err != nil {
		return nil, nil, false
	}
	// Each pair follows one space; only white space may end the record.
	for i := n; len(trimSpace(b[i:])) > 0; {
		if b[i] != ' ' {
			return nil, nil, false
		}
		p, next, ok := klogPair(b, i+1)
		if !ok {
			return nil, nil, false
		}
		kvs = append(kvs, p)
		i = next
	}
	return []byte(m), kvs, true
}

// klogPair parses the key=value at b[i:] and returns the index after it.
func klogPair(b []byte, i int) (p kv, next int, ok bool) {
	k := i
	for k < len(b) && b[k] != '=' {
		if c := b[k]; c == ' ' || c == '"' || c == '\n' || c == '\t' {
			return p, 0, false
		}
		k++
	}
	if k == i || k == len(b) {
		return p, 0, false
	}
	p.key = b[i:k]
	v := k + 1
	if v == len(b) {
		return p, 0, false
	}
	switch c := b[v]; {
	case c == '"':
		n := quotedEnd(b[v:])
		if n < 0 {
			return p, 0, false
		}
		s, err := strconv.Unquote(string(b[v : v+n]))
		if err != nil {
			return p, 0, false
		}
		p.val = appendJSONString(nil, []byte(s))
		return p, v + n, true
	case c == '<' && v+1 < len(b) && b[v+1] == '\n':
		return klogBlock(b, v+2, p)
	case c == '{' || c == '[':
		n := jsonEnd(b[v:])
		if n < 0 {
			return p, 0, false
		}
		d := jsonscan.Get()
		defer d.Release()
		if d.Parse(b[v:v+n]) != nil {
			return p, 0, false
		}
		p.val = bytes.Clone(d.Buf)
		return p, v + n, true
	}
	e := v
	for e < len(b) && b[e] != ' ' && b[e] != '\n' {
		e++
	}
	tok := b[v:e]
	switch {
	case string(tok) == "true" || string(tok) == "false" || string(tok) == "null", isJSONNumber(tok):
		p.val = bytes.Clone(tok)
	default: // a formatter hook's text: keep it as a string
		p.val = appendJSONString(nil, tok)
	}
	return p, e, true
}

// klogBlock reads a multi-line string value starting at b[i], after
// "key=<\n": lines each after a tab, ended by a line " >". klog writes a
// value ending with a line break the same as one without; the value read
// has none.
func klogBlock(b []byte, i int, p kv) (kv, int, bool) {
	var s []byte
	first := true
	for {
		if bytes.HasPrefix(b[i:], []byte(" >")) {
			p.val = appendJSONString(nil, s)
			return p, i + 2, true
		}
		if i >= len(b) || b[i] != '\t' {
			return p, 0, false
		}
		e := bytes.IndexByte(b[i:], '\n')
		if e < 0 {
			return p, 0, false
		}
		if !first {
			s = append(s, '\n')
		}
		first = false
		s = append(s, b[i+1:i+e]...)
		i += e + 1
	}
}

// quotedEnd returns the length of the Go-quoted string at the start of b
// (quotes included), or -1. A quoted string never holds a line break.
func quotedEnd(b []byte) int {
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		case '\n':
			return -1
		}
	}
	return -1
}

// jsonEnd returns the length of the JSON object or array at the start of
// b, or -1: brackets matched outside strings, on one line.
func jsonEnd(b []byte) int {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		case '\n':
			return -1
		}
	}
	return -1
}

func isJSONNumber(b []byte) bool {
	if len(b) == 0 || !(isDigit(b[0]) || b[0] == '-') {
		return false
	}
	d := jsonscan.Get()
	defer d.Release()
	return d.Parse(b) == nil
}

// validUTF8 returns s with each invalid byte replaced by U+FFFD, as
// appendJSONString writes it.
func validUTF8(s []byte) string {
	if utf8.Valid(s) {
		return string(s)
	}
	out := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, s[i:i+n]...)
		}
		i += n
	}
	return string(out)
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD, as encoding/json writes it.
func appendJSONString(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return append(dst, '"')
}
