package jsonscan

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// The functions below walk JSON that Parse accepted and compacted.

// Index holds the offsets of the large containers of a buffer, by start, so
// that walking an object does not scan its large values again.
type Index []Span

// Skip is Skip, using the index when the value at i is in it.
func (x Index) Skip(b []byte, i int) int {
	if len(x) > 0 && (b[i] == '{' || b[i] == '[') {
		lo, hi := 0, len(x)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if x[m].S < i {
				lo = m + 1
			} else {
				hi = m
			}
		}
		if lo < len(x) && x[lo].S == i {
			return x[lo].E
		}
	}
	return Skip(b, i)
}

// Members is Members using the index.
func (x Index) Members(b []byte, i int) ObjIter {
	it := Members(b, i)
	it.x = x
	return it
}

// Skip returns the index after the value at b[i].
func Skip(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
			i++
		}
		return i
	}
}

// ObjIter iterates over the members of an object.
type ObjIter struct {
	b []byte
	i int
	x Index
}

// Members returns an iterator over the members of the object at b[i]; it
// yields nothing when the value is not an object.
func Members(b []byte, i int) ObjIter {
	if b[i] != '{' {
		return ObjIter{b: b, i: len(b)}
	}
	return ObjIter{b: b, i: i + 1}
}

// Next sets m to the next member and reports whether there was one.
func (it *ObjIter) Next(m *Member) bool {
	b, i := it.b, it.i
	if i >= len(b) || b[i] != '"' {
		return false
	}
	m.Start, m.KeyStart = i, i+1
	j := skipString(b, i)
	m.KeyEnd = j - 1
	m.KeyEscaped = bytes.IndexByte(b[m.KeyStart:m.KeyEnd], '\\') >= 0
	m.ValStart = j + 1
	m.ValEnd = it.x.Skip(b, m.ValStart)
	it.i = len(b)
	if m.ValEnd < len(b) && b[m.ValEnd] == ',' {
		it.i = m.ValEnd + 1
	}
	return true
}

// ArrIter iterates over the elements of an array.
type ArrIter struct {
	b []byte
	i int
	x Index
}

// Elems returns an iterator over the elements of the array at b[i]; it
// yields nothing when the value is not an array.
func Elems(b []byte, i int) ArrIter {
	if b[i] != '[' || b[i+1] == ']' {
		return ArrIter{b: b, i: len(b)}
	}
	return ArrIter{b: b, i: i + 1}
}

// Elems is Elems using the index.
func (x Index) Elems(b []byte, i int) ArrIter {
	it := Elems(b, i)
	it.x = x
	return it
}

// Next returns the offsets of the next element.
func (it *ArrIter) Next() (v Span, ok bool) {
	if it.i >= len(it.b) {
		return Span{}, false
	}
	v = Span{it.i, it.x.Skip(it.b, it.i)}
	it.i = len(it.b)
	if v.E < len(it.b) && it.b[v.E] == ',' {
		it.i = v.E + 1
	}
	return v, true
}

// Count returns the number of elements of the array at b[i].
func Count(b []byte, i int) int {
	n := 0
	for it := Elems(b, i); ; n++ {
		if _, ok := it.Next(); !ok {
			return n
		}
	}
}

// String returns the contents of the JSON string at b[v], unescaped, and
// whether it was a string. The result aliases b when there was no escape.
func String(b []byte, v Span) ([]byte, bool) {
	if v.S >= v.E || b[v.S] != '"' {
		return nil, false
	}
	raw := b[v.S+1 : v.E-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		return Unquote(raw), true
	}
	return raw, true
}

// Unquote decodes the escapes of a valid JSON string's contents the way
// encoding/json does, including its replacement of lone surrogates.
func Unquote(s []byte) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		i++
		switch s[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(s[i+1:])
			i += 5
			if utf16.IsSurrogate(r) {
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if d := utf16.DecodeRune(r, hex4(s[i+2:])); d != utf8.RuneError {
						out = utf8.AppendRune(out, d)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // '"', '\\', '/'
			out = append(out, s[i])
		}
		i++
	}
	return out
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// ParseInt parses a JSON number as encoding/json does for an integer of
// the given size: no fraction, no exponent, no overflow.
func ParseInt(b []byte, bits int) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	limit := uint64(1) << (bits - 1) // magnitude of the smallest value
	var n uint64
	for _, c := range b {
		if !isDigit(c) || n > limit/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
		if n > limit {
			return 0, false
		}
	}
	if !neg && n == limit {
		return 0, false
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}
