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
// inside it, nested too deep, a field of the wrong type, not an object, an
// object with nothing of an event: no kind, apiVersion, auditID or
// timestamp, such as {}) is handed over with its error instead, and the
// items after it are still read.
//
// ReadEventList returns an error when the body is not an EventList at all:
// not one JSON object, a kind other than EventList, an apiVersion other
// than audit.k8s.io/v1, a top-level field given twice or of the wrong type,
// a truncated body, or an error of r (wrapped). The kind may come after the
// items, so the items handed over before such an error are to be
// discarded (StreamEventList says which items came after the kind).
func ReadEventList(r io.Reader, red *Redaction, item func(i int, ev cpid.AuditEvent, err error)) error {
	return StreamEventList(r, red, func(it *ListItem) error {
		item(it.Index, it.Event, it.Err)
		return nil
	})
}

// ListItem is one item of an EventList, as StreamEventList hands it over.
type ListItem struct {
	Index int
	Event cpid.AuditEvent
	Err   error // the item is bad on its own; Event is empty
	// Size is the item's bytes in the body.
	Size int
	// Listed is set when the list's kind (EventList) and apiVersion
	// (audit.k8s.io/v1) came before the item, as kube-apiserver writes
	// them: the item is one of an EventList unless the body turns out
	// broken further on (a field twice, a truncated body). Without it, the
	// kind may yet come after the items and say the body is no EventList.
	Listed bool
}

// StreamEventList is ReadEventList handing over each item with its size
// and whether the list's kind came before it, so that a caller may store
// items before the body ends (the webhook receiver does, in bounded
// batches). An error returned by item stops the read and is returned. The
// ListItem is reused for the next item: item keeps nothing of it but its
// Event.
func StreamEventList(r io.Reader, red *Redaction, item func(*ListItem) error) error {
	red = orDefault(red)
	var it ListItem
	var one []byte // the item, wrapped in a list of one
	s := &listStream{r: r, chunk: make([]byte, 64<<10)}
	s.onItem = func(k int, body []byte, listed bool) error {
		it = ListItem{Index: k, Size: len(body), Listed: listed}
		switch {
		case len(body) == 0:
			it.Err = errors.New("invalid JSON: empty item")
		case isEmptyObject(body):
			// What decoding it would say, without decoding it: a body
			// of a million {} is read at the speed of its bytes.
			it.Err = errEventless
		default:
			one = append(append(append(one[:0], listPrefix...), body...), listSuffix...)
			// The events do not alias one: decodeAudit copies what it keeps.
			var evs []cpid.AuditEvent
			if evs, it.Err = decodeAudit(one, red); it.Err == nil {
				it.Event = evs[0]
			} else {
				it.Err = itemError(it.Err)
			}
		}
		return item(&it)
	}
	return s.list(red)
}

// isEmptyObject reports whether b is {} (white space allowed inside).
func isEmptyObject(b []byte) bool {
	return len(b) >= 2 && b[0] == '{' && b[len(b)-1] == '}' && len(trimSpace(b[1:len(b)-1])) == 0
}

// itemError is the error of decoding a list of one item, without the
// "item 0: " that names its place in that list.
func itemError(err error) error {
	if u := errors.Unwrap(err); u != nil && strings.HasPrefix(err.Error(), "item 0: ") {
		return u
	}
	return err
}

// arrayElems calls fn with each element of rec, raw, when rec is one JSON
// array (its elements are not checked: fn decodes each), and reports
// whether it was.
func arrayElems(rec []byte, fn func(k int, elem []byte) error) (bool, error) {
	rec = trimSpace(rec)
	scan := func(onItem func(int, []byte, bool) error) error {
		s := &listStream{chunk: rec, n: len(rec), err: io.EOF, onItem: onItem}
		c, err := s.next()
		if err != nil || c != '[' {
			return errNotList
		}
		s.i++
		if _, _, err := s.items(nil, 0, false); err != nil {
			return err
		}
		if _, err := s.next(); err == nil {
			return errors.New("invalid JSON: data after the array")
		}
		return nil
	}
	if scan(nil) != nil {
		return false, nil // left to the decoder, whole
	}
	return true, scan(func(k int, elem []byte, _ bool) error { return fn(k, elem) })
}

// errNotList ends the scan of a record that is not an EventList.
var errNotList = errors.New("not an EventList")

// eventListItems calls fn with each item of rec, raw, when rec is one
// EventList whose envelope (everything but the items) decodes as
// DecodeAudit decodes it; it reports whether rec was one. The items are
// not decoded: fn is to decode each as an EventList of one, which gives
// what DecodeAudit gives for it within the whole list. So a huge list
// read from a file is decoded item by item, in bounded memory, and an item
// that is bad on its own is a bad item, not a bad list. A record that is
// not an EventList costs little: the scan ends at its kind (an audit
// Event's first member).
func eventListItems(rec []byte, fn func(k int, item []byte) error) (bool, error) {
	rec = trimSpace(rec)
	if len(rec) == 0 || rec[0] != '{' {
		return false, nil
	}
	scan := func(onItem func(int, []byte, bool) error) error {
		s := &listStream{chunk: rec, n: len(rec), err: io.EOF, quick: true, onItem: onItem}
		return s.list(DefaultRedaction)
	}
	// First the envelope, the items skipped: what DecodeAudit would
	// refuse is left to it, whole.
	if scan(nil) != nil {
		return false, nil
	}
	return true, scan(func(k int, item []byte, _ bool) error { return fn(k, item) })
}

// listStream scans a JSON stream in chunks.
type listStream struct {
	r     io.Reader
	chunk []byte
	i, n  int   // the unread bytes are chunk[i:n]
	err   error // what r returned last, once not nil
	// onItem is given each item's bytes (nil: the items are skipped) and
	// whether the list's kind and apiVersion came before it.
	onItem func(k int, item []byte, listed bool) error
	// quick ends the scan with errNotList at a kind other than EventList.
	quick bool
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
func (s *listStream) list(red *Redaction) error {
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
	var kindOK, versionOK, typeTwice bool
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
			v0 := len(head)
			if head, c, err = s.value(head, '}'); err != nil {
				return err
			}
			switch typeKey(key) {
			case "kind":
				typeTwice = typeTwice || kindOK
				kindOK = jsonStringIs(head[v0:], "EventList")
				if !kindOK && s.quick {
					return errNotList
				}
			case "apiversion":
				typeTwice = typeTwice || versionOK
				versionOK = jsonStringIs(head[v0:], auditAPIVersion)
			}
		} else {
			s.i++
			head = append(head, "[]"...)
			listed := kindOK && versionOK && !typeTwice
			if buf, k, err = s.items(buf, k, listed); err != nil {
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

// typeKey is the quoted key, unquoted and in lower case, when it may name
// kind or apiVersion as encoding/json matches them; "" otherwise.
func typeKey(quoted []byte) string {
	if len(quoted) > len(`"apiVersion"`)+8 {
		return "" // too long even with escapes
	}
	var k string
	if json.Unmarshal(quoted, &k) != nil {
		return ""
	}
	return strings.ToLower(k)
}

// jsonStringIs reports whether the JSON value v is the string want.
func jsonStringIs(v []byte, want string) bool {
	v = bytes.TrimSpace(v)
	if len(v) == len(want)+2 && string(v[1:len(v)-1]) == want && v[0] == '"' {
		return true
	}
	var got string
	return bytes.IndexByte(v, '\\') >= 0 && json.Unmarshal(v, &got) == nil && got == want
}

// items reads the elements of an items array, its '[' consumed, up to its
// ']', handing each to onItem from index k on (listed: the list's kind
// came first). It returns buf for reuse and the index after the last
// element.
func (s *listStream) items(buf []byte, k int, listed bool) ([]byte, int, error) {
	c, err := s.next()
	if err != nil {
		return buf, k, err
	}
	if c == ']' {
		s.i++
		return buf, k, nil
	}
	for ; ; k++ {
		if buf, c, err = s.value(buf[:0], ']'); err != nil {
			return buf, k, err
		}
		if s.onItem != nil {
			if err := s.onItem(k, trimSpace(buf), listed); err != nil {
				return buf, k, err
			}
		}
		if c == ']' {
			return buf, k + 1, nil
		}
	}
}
