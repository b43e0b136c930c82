package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cpid-dev/cpid"
)

// listPrefix and listSuffix wrap one item of a streamed EventList, so that
// it is decoded exactly as an item of the whole list is: the same nesting
// depth, the same checks, the same hash.
const (
	listPrefix = `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[`
	listSuffix = `]}`
)

// ReadEventList decodes the audit.k8s.io/v1 EventList read from r, as
// kube-apiserver's webhook backend posts it, one item at a time: the body is
// never held whole, only the item being decoded and what item keeps.
//
// Each item is decoded as DecodeAudit decodes an item of the whole list,
// with the redaction red (nil: DefaultRedaction), and handed to item with
// its index in the list; an item that is bad on its own (invalid JSON
// inside it, nested too deep, a field of the wrong type, not an object) is
// handed over with its error instead, and the items after it are still
// read.
//
// ReadEventList returns an error when the body is not an EventList at all:
// not one JSON object, a kind other than EventList, an apiVersion other
// than audit.k8s.io/v1, a top-level field given twice or of the wrong type,
// a truncated body, or an error of r (wrapped). The kind may come after the
// items, so the items handed over before such an error are to be
// discarded.
func ReadEventList(r io.Reader, red *Redaction, item func(i int, ev cpid.AuditEvent, err error)) error {
	s := &listStream{r: r, chunk: make([]byte, 64<<10)}
	return s.list(orDefault(red), item)
}

// listStream scans a JSON stream in chunks.
type listStream struct {
	r     io.Reader
	chunk []byte
	i, n  int   // the unread bytes are chunk[i:n]
	err   error // what r returned last, once not nil
}

// fill reads the next chunk; false means there is none (see end).
func (s *listStream) fill() bool {
	for s.i == s.n && s.err == nil {
		s.i, s.n = 0, 0
		s.n, s.err = s.r.Read(s.chunk)
	}
	return s.i < s.n
}

// end is the error of a stream that ended where more was expected.
func (s *listStream) end() error {
	if s.err == io.EOF {
		return errors.New("truncated JSON")
	}
	return fmt.Errorf("read: %w", s.err)
}

// next skips whitespace and returns the next byte, unread.
func (s *listStream) next() (byte, error) {
	for {
		for ; s.i < s.n; s.i++ {
			if c := s.chunk[s.i]; !jsonSpace(c) {
				return c, nil
			}
		}
		if !s.fill() {
			return 0, s.end()
		}
	}
}

func jsonSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// value appends to dst the bytes of the value that starts at the next
// byte, up to the ',' or closer that ends it at depth 0, and consumes that
// byte too. The value itself is not validated: the caller decodes it.
// Nesting is counted, not recursed into, so any depth is scanned.
func (s *listStream) value(dst []byte, closer byte) ([]byte, byte, error) {
	depth := 0
	str, esc := false, false
	for {
		if s.i == s.n && !s.fill() {
			return dst, 0, s.end()
		}
		b := s.chunk[s.i:s.n]
		for j, c := range b {
			switch {
			case str:
				switch {
				case esc:
					esc = false
				case c == '\\':
					esc = true
				case c == '"':
					str = false
				}
			case c == '"':
				str = true
			case c == '{' || c == '[':
				depth++
			case depth > 0:
				if c == '}' || c == ']' {
					depth--
				}
			case c == ',' || c == closer:
				s.i += j + 1
				return append(dst, b[:j]...), c, nil
			case c == '}' || c == ']':
				return dst, 0, fmt.Errorf("invalid JSON: unexpected %q", c)
			}
		}
		dst = append(dst, b...)
		s.i = s.n
	}
}

// list reads the EventList: its items are handed to item one by one, its
// other members are kept in head and decoded at the end, with each items
// array replaced by [].
func (s *listStream) list(red *Redaction, item func(int, cpid.AuditEvent, error)) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	if c != '{' {
		return errors.New("not a JSON object")
	}
	s.i++
	head := []byte{'{'}
	var buf []byte // the item being decoded, wrapped in a list of one
	k := 0         // index of the next item
	c, err = s.next()
	if err != nil {
		return err
	}
	if c == '}' {
		s.i++
	}
	for c != '}' {
		if c != '"' {
			return fmt.Errorf("invalid JSON: unexpected %q where a key was expected", c)
		}
		if len(head) > 1 {
			head = append(head, ',')
		}
		k0 := len(head)
		if head, c, err = s.value(head, ':'); err != nil {
			return err
		}
		if c != ':' {
			return errors.New("invalid JSON: a key without a value")
		}
		key := bytes.TrimRight(head[k0:], " \t\r\n")
		head = append(head, ':')
		if c, err = s.next(); err != nil {
			return err
		}
		if !isItems(key) || c != '[' {
			if head, c, err = s.value(head, '}'); err != nil {
				return err
			}
		} else {
			s.i++
			head = append(head, "[]"...)
			if buf, k, err = s.items(buf, k, red, item); err != nil {
				return err
			}
			if c, err = s.next(); err != nil {
				return err
			}
			if c != ',' && c != '}' {
				return fmt.Errorf("invalid JSON: unexpected %q after items", c)
			}
			s.i++
		}
		if c == ',' {
			if c, err = s.next(); err != nil {
				return err
			}
		}
	}
	if _, err := s.next(); err == nil {
		return errors.New("invalid JSON: data after the EventList")
	} else if s.err != io.EOF {
		return err
	}
	evs, err := decodeAudit(append(head, '}'), red)
	switch {
	case err != nil:
		return err
	case len(evs) > 0:
		return errors.New("kind Event: want an EventList")
	}
	return nil
}

// isItems reports whether the quoted key names an EventList's items, as
// encoding/json matches it: case-insensitively, escapes decoded.
func isItems(quoted []byte) bool {
	key := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(key, '\\') >= 0 {
		var k string
		if json.Unmarshal(quoted, &k) != nil {
			return false
		}
		key = []byte(k)
	}
	return bytes.EqualFold(key, []byte("items"))
}

// items reads the elements of an items array, its '[' consumed, up to its
// ']', handing each to item from index k on. It returns buf for reuse and
// the index after the last element.
func (s *listStream) items(buf []byte, k int, red *Redaction, item func(int, cpid.AuditEvent, error)) ([]byte, int, error) {
	c, err := s.next()
	if err != nil {
		return buf, k, err
	}
	if c == ']' {
		s.i++
		return buf, k, nil
	}
	for ; ; k++ {
		buf = append(buf[:0], listPrefix...)
		if buf, c, err = s.value(buf, ']'); err != nil {
			return buf, k, err
		}
		buf = append(bytes.TrimRight(buf, " \t\r\n"), listSuffix...)
		var ev cpid.AuditEvent
		if len(buf) == len(listPrefix)+len(listSuffix) {
			err = errors.New("invalid JSON: empty item")
		} else {
			// The events do not alias buf: decodeAudit copies what it keeps.
			var evs []cpid.AuditEvent
			if evs, err = decodeAudit(buf, red); err == nil {
				ev = evs[0]
			} else if u := errors.Unwrap(err); u != nil && strings.HasPrefix(err.Error(), "item 0: ") {
				err = u
			}
		}
		item(k, ev, err)
		if c == ']' {
			return buf, k + 1, nil
		}
	}
}
