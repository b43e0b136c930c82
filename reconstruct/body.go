package reconstruct

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// decodeBody decodes the fields of body from an object's JSON: the result
// of json.Unmarshal into a body, nil when that fails. It validates the
// document (json.Valid), then walks only the members the engine reads,
// which is several times faster than decoding through reflection; on
// anything unusual (an escaped key, a value of an unexpected type) it
// leaves the whole document to encoding/json, so the result is always the
// same as encoding/json's.
func decodeBody(b []byte) *body {
	if !json.Valid(b) {
		return nil
	}
	var out body
	w := walker{b: b, ok: true}
	if w.walkBody(&out); w.ok {
		return &out
	}
	out = body{}
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return &out
}

// walker reads valid JSON; ok turns false when it meets something it
// leaves to encoding/json.
type walker struct {
	b  []byte
	i  int
	ok bool
}

func (w *walker) ws() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// peek returns the first byte of the next value, 0 at the end.
func (w *walker) peek() byte {
	w.ws()
	if w.i >= len(w.b) {
		w.ok = false
		return 0
	}
	return w.b[w.i]
}

// null consumes a null and reports whether there was one.
func (w *walker) null() bool {
	if w.peek() == 'n' {
		w.i += len("null")
		return true
	}
	return false
}

// rawString returns the contents of the string at w.i and moves past it.
func (w *walker) rawString() []byte {
	start := w.i + 1
	for i := start; i < len(w.b); {
		j := bytes.IndexByte(w.b[i:], '"')
		if j < 0 {
			break
		}
		i += j
		n := 0 // backslashes before the quote: an odd count escapes it
		for k := i - 1; k >= start && w.b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			w.i = i + 1
			return w.b[start:i]
		}
		i++
	}
	w.ok = false
	return nil
}

// skip moves past the value at w.i.
func (w *walker) skip() {
	switch w.peek() {
	case '"':
		w.rawString()
	case '{', '[':
		depth := 0
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case '"':
				if w.rawString(); !w.ok {
					return
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					w.i++
					return
				}
			}
			w.i++
		}
		w.ok = false
	default:
		for w.i < len(w.b) && strings.IndexByte(",}] \t\n\r", w.b[w.i]) < 0 {
			w.i++
		}
	}
}

// str decodes a string value into *dst; null leaves it as it is, as
// encoding/json does.
func (w *walker) str(dst *string) {
	if w.null() {
		return
	}
	if w.peek() != '"' {
		w.ok = false
		return
	}
	raw := w.rawString()
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		*dst = string(raw)
		return
	}
	// Escapes and invalid UTF-8: encoding/json's own rules.
	if json.Unmarshal(w.b[w.i-len(raw)-2:w.i], dst) != nil {
		w.ok = false
	}
}

// object calls member for each member of the object at w.i with its key;
// member consumes the value (or calls skip). A null is an empty object.
func (w *walker) object(member func(key []byte)) {
	if w.null() {
		return
	}
	if w.peek() != '{' {
		w.ok = false
		return
	}
	w.i++
	for w.ok {
		switch w.peek() {
		case '}':
			w.i++
			return
		case ',':
			w.i++
			continue
		case '"':
		default:
			w.ok = false
			return
		}
		key := w.rawString()
		if !w.ok || bytes.IndexByte(key, '\\') >= 0 {
			w.ok = false // encoding/json unescapes keys before matching
			return
		}
		if w.peek() != ':' {
			w.ok = false
			return
		}
		w.i++
		member(key)
	}
}

// array calls elem for each element of the array at w.i; elem consumes
// it. It reports false for null (encoding/json sets the slice to nil).
func (w *walker) array(elem func()) bool {
	if w.null() {
		return false
	}
	if w.peek() != '[' {
		w.ok = false
		return false
	}
	w.i++
	for w.ok {
		switch w.peek() {
		case ']':
			w.i++
			return true
		case ',':
			w.i++
		default:
			elem()
		}
	}
	return true
}

// is matches a key to a field name as encoding/json does: exactly, or
// without regard to case.
func is(key []byte, name string) bool { return bytes.EqualFold(key, []byte(name)) }

func (w *walker) walkBody(out *body) {
	if w.null() {
		return
	}
	w.object(func(k []byte) {
		switch {
		case is(k, "metadata"):
			w.object(func(k []byte) {
				if !is(k, "labels") {
					w.skip()
					return
				}
				if w.null() {
					out.Metadata.Labels = nil
					return
				}
				if out.Metadata.Labels == nil && w.peek() == '{' {
					out.Metadata.Labels = map[string]string{} // {} too
				}
				w.object(func(k []byte) {
					var v string
					if w.peek() != '"' {
						w.ok = false // a null or another type: encoding/json's rules
						return
					}
					w.str(&v)
					out.Metadata.Labels[string(k)] = v
				})
			})
		case is(k, "spec"):
			w.object(func(k []byte) {
				if is(k, "nodeName") {
					w.str(&out.Spec.NodeName)
				} else {
					w.skip()
				}
			})
		case is(k, "status"):
			w.object(func(k []byte) {
				if !is(k, "conditions") {
					w.skip()
					return
				}
				if out.Status.Conditions != nil {
					w.ok = false // a second array decodes into the first's elements
					return
				}
				if !w.array(func() {
					out.Status.Conditions = append(out.Status.Conditions, condition{})
					c := &out.Status.Conditions[len(out.Status.Conditions)-1]
					w.object(func(k []byte) {
						switch {
						case is(k, "type"):
							w.str(&c.Type)
						case is(k, "lastTransitionTime"):
							w.str(&c.LastTransitionTime)
						default:
							w.skip()
						}
					})
				}) {
					out.Status.Conditions = nil
				} else if out.Status.Conditions == nil {
					out.Status.Conditions = []condition{} // [] is empty, not nil
				}
			})
		case is(k, "endpoints"):
			if out.Endpoints != nil {
				w.ok = false
				return
			}
			if !w.array(func() {
				out.Endpoints = append(out.Endpoints, endpoint{})
				e := &out.Endpoints[len(out.Endpoints)-1]
				w.object(func(k []byte) {
					if is(k, "targetRef") {
						w.targetRef(&e.TargetRef)
					} else {
						w.skip()
					}
				})
			}) {
				out.Endpoints = nil
			} else if out.Endpoints == nil {
				out.Endpoints = []endpoint{}
			}
		case is(k, "subsets"):
			if out.Subsets != nil {
				w.ok = false
				return
			}
			if !w.array(func() {
				out.Subsets = append(out.Subsets, subset{})
				s := &out.Subsets[len(out.Subsets)-1]
				w.object(func(k []byte) {
					switch {
					case is(k, "addresses"):
						s.Addresses = w.addresses(s.Addresses)
					case is(k, "notReadyAddresses"):
						s.NotReadyAddresses = w.addresses(s.NotReadyAddresses)
					default:
						w.skip()
					}
				})
			}) {
				out.Subsets = nil
			} else if out.Subsets == nil {
				out.Subsets = []subset{}
			}
		default:
			w.skip()
		}
	})
	if w.ws(); w.i != len(w.b) {
		w.ok = false
	}
}

func (w *walker) addresses(as []address) []address {
	if as != nil {
		w.ok = false
		return as
	}
	if !w.array(func() {
		as = append(as, address{})
		a := &as[len(as)-1]
		w.object(func(k []byte) {
			if is(k, "TargetRef") {
				w.targetRef(&a.TargetRef)
			} else {
				w.skip()
			}
		})
	}) {
		return nil
	}
	if as == nil {
		as = []address{}
	}
	return as
}

// targetRef decodes into *t as encoding/json decodes into a pointer: null
// sets it to nil, an object fills the one there or a new one.
func (w *walker) targetRef(t **targetRef) {
	if w.null() {
		*t = nil
		return
	}
	if *t == nil {
		*t = &targetRef{}
	}
	r := *t
	w.object(func(k []byte) {
		switch {
		case is(k, "kind"):
			w.str(&r.Kind)
		case is(k, "namespace"):
			w.str(&r.Namespace)
		case is(k, "name"):
			w.str(&r.Name)
		default:
			w.skip()
		}
	})
}
