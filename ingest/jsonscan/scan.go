// Package jsonscan is cpid's one JSON reader, shared by ingest (audit
// events, log records, redaction) and reconstruct (the body fields its
// rules read). Parse validates a document in one pass with the grammar
// encoding/json accepts, requiring valid UTF-8 as well, compacts it when it
// has whitespace, and indexes its top-level members and its large
// containers. The walking functions then read the compact document without
// validating it again; they must only be given what Parse accepted.
//
// It is hand-written because ingest needs what none of the libraries
// measured on the real fixtures gives (docs/BENCHMARKS.notes.md): the
// validated compact bytes and the offsets of their members, to hash and
// redact an event in one pass. Of those libraries, goccy/go-json decodes
// bodies into Go types about twice as fast and as safely; sonic and
// encoding/json/v2 differ from encoding/json on hostile input.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"unicode/utf8"
)

// Errors of Parse. A caller branches on ErrUTF8: encoding/json accepts
// invalid UTF-8 (and replaces it), Parse does not.
var (
	ErrTruncated = errors.New("truncated JSON")
	ErrDepth     = errors.New("JSON nested deeper than 10000 levels")
	ErrUTF8      = errors.New("invalid UTF-8")
	errEmpty     = errors.New("empty input")
)

// maxDepth is encoding/json's nesting limit: deeper input is rejected there,
// so it is rejected here too.
const maxDepth = 10000

// Member is one key/value of a JSON object, as offsets into a compact
// buffer: the key without its quotes, and the value.
type Member struct {
	Start      int // the key's opening quote
	KeyStart   int
	KeyEnd     int
	KeyEscaped bool
	ValStart   int
	ValEnd     int
}

// Key returns the member's key, unescaped when needed.
func (m *Member) Key(b []byte) []byte {
	k := b[m.KeyStart:m.KeyEnd]
	if m.KeyEscaped {
		return Unquote(k)
	}
	return k
}

// Val returns the offsets of the member's value.
func (m *Member) Val() Span { return Span{m.ValStart, m.ValEnd} }

// Span is a value's offsets in a compact buffer; the zero Span is absent.
type Span struct{ S, E int }

// OK reports whether the span holds a value.
func (v Span) OK() bool { return v.E > 0 }

// Doc is one document validated as JSON: its compact form and, when it is
// an object, its top-level members.
type Doc struct {
	Buf     []byte   // compact JSON; aliases the input when that was compact
	Own     bool     // Buf is a private copy
	Members []Member // the top-level members, when Buf is an object
	Index   Index    // the large containers of Buf
	arr     [24]Member
}

// maxPooled bounds the index and members of a pooled Doc: 256 KiB.
const maxPooled = 1 << 14

var docs = sync.Pool{New: func() any { return new(Doc) }}

// Get returns an empty Doc from a pool; Release returns it.
func Get() *Doc { return docs.Get().(*Doc) }

// Release returns d to the pool; d must not be used after.
func (d *Doc) Release() {
	// Keep what a large Pod or Node body grows (up to 1,400 large
	// containers in the fixtures), not what a huge document does.
	if cap(d.Index) > maxPooled || cap(d.Members) > maxPooled {
		return
	}
	d.Buf, d.Own, d.Members, d.Index = nil, false, d.Members[:0], d.Index[:0]
	docs.Put(d)
}

// Object reports whether the document is an object.
func (d *Doc) Object() bool { return len(d.Buf) > 0 && d.Buf[0] == '{' }

// Parse validates b as exactly one JSON value, with whitespace around it
// allowed. Invalid UTF-8 in a string rejects it (ErrUTF8): the logs cpid
// reads are always valid UTF-8, so invalid bytes mean a corrupt line, and
// encoding/json would silently replace them. Buf aliases b when b is
// compact; b must not change while d is used.
func (d *Doc) Parse(b []byte) error {
	d.Buf, d.Own = nil, false
	d.Members = d.arr[:0]
	d.Index = d.Index[:0]
	s := scanner{b: b, top: &d.Members, big: &d.Index}
	start := s.ws(0)
	if start == len(b) {
		return errEmpty
	}
	s.space = false // leading and trailing space is trimmed, not compacted
	end := s.value(start, 0)
	if s.err != nil {
		return s.err
	}
	inner := s.space
	if j := s.ws(end); j != len(b) {
		s.unexpected(j)
		return s.err
	}
	s.space = inner
	d.Buf = b[start:end]
	if s.space {
		d.Buf = compact(d.Buf)
		d.Own = true
		d.Members = d.Members[:0]
		d.Index = d.Index[:0]
		s = scanner{b: d.Buf, top: &d.Members, big: &d.Index}
		s.value(0, 0)
	} else if start > 0 {
		// The offsets are b's: move them to Buf's.
		for i := range d.Members {
			m := &d.Members[i]
			m.Start, m.KeyStart, m.KeyEnd = m.Start-start, m.KeyStart-start, m.KeyEnd-start
			m.ValStart, m.ValEnd = m.ValStart-start, m.ValEnd-start
		}
		for i := range d.Index {
			d.Index[i].S -= start
			d.Index[i].E -= start
		}
	}
	slices.SortFunc(d.Index, func(a, b Span) int { return a.S - b.S })
	return nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanner validates JSON with the grammar encoding/json accepts, plus the
// requirement that strings are valid UTF-8. It records the members of the
// outermost object and whether any whitespace separates tokens.
type scanner struct {
	b     []byte
	top   *[]Member
	big   *Index
	space bool
	err   error
	esc   bool // the last string scanned had a backslash
}

func (s *scanner) fail(err error) int {
	if s.err == nil {
		s.err = err
	}
	return -1
}

func (s *scanner) unexpected(i int) int {
	if i >= len(s.b) {
		return s.fail(ErrTruncated)
	}
	c := s.b[i]
	if c < utf8.RuneSelf && c >= ' ' {
		return s.fail(fmt.Errorf("invalid JSON: unexpected %q at byte %d", c, i))
	}
	return s.fail(fmt.Errorf("invalid JSON: unexpected byte 0x%02x at byte %d", c, i))
}

func (s *scanner) ws(i int) int {
	b := s.b
	j := i
	for j < len(b) && b[j] <= ' ' && isSpace(b[j]) {
		j++
	}
	if j != i {
		s.space = true
	}
	return j
}

// value scans the value at i and returns the index after it, or -1.
func (s *scanner) value(i, depth int) int {
	b := s.b
	i = s.ws(i)
	if i >= len(b) {
		return s.fail(ErrTruncated)
	}
	switch c := b[i]; c {
	case '{':
		return s.object(i, depth+1)
	case '[':
		return s.array(i, depth+1)
	case '"':
		return s.str(i)
	case 't':
		return s.lit(i, "true")
	case 'f':
		return s.lit(i, "false")
	case 'n':
		return s.lit(i, "null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return s.num(i)
		}
		return s.unexpected(i)
	}
}

func (s *scanner) lit(i int, want string) int {
	b := s.b
	for k := 0; k < len(want); k++ {
		if i+k >= len(b) {
			return s.fail(ErrTruncated)
		}
		if b[i+k] != want[k] {
			return s.unexpected(i + k)
		}
	}
	return i + len(want)
}

func (s *scanner) num(i int) int {
	b := s.b
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return s.fail(ErrTruncated)
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return s.unexpected(i)
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) {
			return s.fail(ErrTruncated)
		}
		if !isDigit(b[i]) {
			return s.unexpected(i)
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) {
			return s.fail(ErrTruncated)
		}
		if !isDigit(b[i]) {
			return s.unexpected(i)
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	}
	return i
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special flags the bytes of w (little-endian) that end or escape a string
// or need a check: a quote, a backslash, a control byte or a non-ASCII byte.
// The lowest flag is exact; flags above it may be false.
func special(w uint64) uint64 {
	q := w ^ (lsb * '"')
	e := w ^ (lsb * '\\')
	return ((w-lsb*0x20)&^w | (q-lsb)&^q | (e-lsb)&^e | w) & msb
}

// str scans the string whose opening quote is at i.
func (s *scanner) str(i int) int {
	b := s.b
	s.esc = false
	i++
	for {
		for i+8 <= len(b) {
			if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(b) {
			return s.fail(ErrTruncated)
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1
		case c == '\\':
			s.esc = true
			i++
			if i >= len(b) {
				return s.fail(ErrTruncated)
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				for k := 1; k <= 4; k++ {
					if i+k >= len(b) {
						return s.fail(ErrTruncated)
					}
					if !isHex(b[i+k]) {
						return s.unexpected(i + k)
					}
				}
				i += 5
			default:
				return s.unexpected(i)
			}
		case c < ' ':
			return s.unexpected(i)
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return s.fail(fmt.Errorf("%w at byte %d", ErrUTF8, i))
			}
			i += n
		default:
			i++
		}
	}
}

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func (s *scanner) object(i, depth int) int {
	if depth > maxDepth {
		return s.fail(ErrDepth)
	}
	b := s.b
	start := i
	i = s.ws(i + 1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) {
			return s.fail(ErrTruncated)
		}
		if b[i] != '"' {
			return s.unexpected(i)
		}
		ks := i
		i = s.str(i)
		if i < 0 {
			return i
		}
		kesc := s.esc
		ke := i
		i = s.ws(i)
		if i >= len(b) {
			return s.fail(ErrTruncated)
		}
		if b[i] != ':' {
			return s.unexpected(i)
		}
		i = s.ws(i + 1)
		vs := i
		i = s.value(i, depth)
		if i < 0 {
			return i
		}
		if depth == 1 {
			*s.top = append(*s.top, Member{ks, ks + 1, ke - 1, kesc, vs, i})
		}
		i = s.ws(i)
		if i >= len(b) {
			return s.fail(ErrTruncated)
		}
		switch b[i] {
		case ',':
			i = s.ws(i + 1)
		case '}':
			return s.end(start, i+1)
		default:
			return s.unexpected(i)
		}
	}
}

func (s *scanner) array(i, depth int) int {
	if depth > maxDepth {
		return s.fail(ErrDepth)
	}
	b := s.b
	start := i
	i = s.ws(i + 1)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for {
		i = s.value(i, depth)
		if i < 0 {
			return i
		}
		i = s.ws(i)
		if i >= len(b) {
			return s.fail(ErrTruncated)
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			return s.end(start, i+1)
		default:
			return s.unexpected(i)
		}
	}
}

// bigValue is the size from which a container goes into the index.
const bigValue = 128

// end records the container b[start:end] in the index when it is large and
// returns end.
func (s *scanner) end(start, end int) int {
	if end-start >= bigValue && s.big != nil {
		*s.big = append(*s.big, Span{start, end})
	}
	return end
}

// compact returns valid JSON b without whitespace between tokens.
func compact(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if isSpace(c) {
			continue
		}
		if c != '"' {
			out = append(out, c)
			continue
		}
		j := skipString(b, i)
		out = append(out, b[i:j]...)
		i = j - 1
	}
	return out
}

// skipString returns the index after the string whose quote is at i.
func skipString(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		i += j
		n := 0
		for k := i - 1; b[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}
