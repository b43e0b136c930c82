package reconstruct

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/cpid-dev/cpid/ingest/jsonscan"
)

// decodeBody decodes the fields of body from an object's JSON: the result
// of json.Unmarshal into a body, nil when that fails. The document is
// validated by the reader ingest uses (jsonscan), then only the members
// the engine reads are walked, which is several times faster than decoding
// through reflection. What the walk does not do itself it leaves to
// encoding/json, so the result is always encoding/json's: invalid UTF-8
// (encoding/json replaces it, jsonscan refuses it), a value of an
// unexpected type, a label given as null, an array given twice.
func decodeBody(b []byte) *body {
	d := jsonscan.Get()
	defer d.Release()
	if err := d.Parse(b); err != nil {
		if errors.Is(err, jsonscan.ErrUTF8) {
			return unmarshalBody(b)
		}
		return nil // not JSON: encoding/json refuses it too
	}
	var out body
	r := reader{b: d.Buf, x: d.Index, ok: true}
	switch d.Buf[0] {
	case 'n': // null leaves everything unset
	case '{':
		r.body(&out, d.Members)
	default:
		r.ok = false
	}
	if !r.ok {
		return unmarshalBody(b)
	}
	return &out
}

// unmarshalBody is decodeBody through encoding/json.
func unmarshalBody(b []byte) *body {
	var out body
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return &out
}

// reader reads the body fields out of a document jsonscan accepted; ok
// turns false when it meets something it leaves to encoding/json.
type reader struct {
	b  []byte
	x  jsonscan.Index
	ok bool
}

// is matches a key to a field name as encoding/json does: exactly, or
// without regard to case (the body's field names differ in more than case).
func is(key []byte, name string) bool { return bytes.EqualFold(key, []byte(name)) }

// str decodes a string value into *dst; null leaves it as it is, as
// encoding/json does.
func (r *reader) str(dst *string, v jsonscan.Span) {
	switch r.b[v.S] {
	case 'n':
	case '"':
		s, _ := jsonscan.String(r.b, v)
		*dst = string(s)
	default:
		r.ok = false
	}
}

// members returns an iterator over the object at v: nothing for null, as
// encoding/json leaves a struct alone for null, and nothing with ok false
// for another type.
func (r *reader) members(v jsonscan.Span) jsonscan.ObjIter {
	if c := r.b[v.S]; c != '{' && c != 'n' {
		r.ok = false
	}
	return r.x.Members(r.b, v.S)
}

// elems returns an iterator over the array at v and whether v is one (null
// is not: encoding/json sets the slice to nil). A slice decoded twice keeps
// the first array's elements under the second's, which is left to
// encoding/json: set is whether the slice was already decoded.
func (r *reader) elems(v jsonscan.Span, set bool) (jsonscan.ArrIter, bool) {
	switch c := r.b[v.S]; {
	case set:
		r.ok = false
	case c == 'n':
		return jsonscan.ArrIter{}, false
	case c != '[':
		r.ok = false
	}
	if !r.ok {
		return jsonscan.ArrIter{}, false
	}
	return r.x.Elems(r.b, v.S), true
}

func (r *reader) body(out *body, ms []jsonscan.Member) {
	for i := range ms {
		k, v := ms[i].Key(r.b), ms[i].Val()
		switch {
		case is(k, "metadata"):
			r.metadata(out, v)
		case is(k, "spec"):
			var m jsonscan.Member
			for it := r.members(v); it.Next(&m); {
				switch k := m.Key(r.b); {
				case is(k, "nodeName"):
					r.str(&out.Spec.NodeName, m.Val())
				case is(k, "affinity"):
					v := m.Val()
					out.Spec.Affinity = append(json.RawMessage(nil), r.b[v.S:v.E]...)
				case is(k, "tolerations"):
					v := m.Val()
					out.Spec.Tolerations = append(json.RawMessage(nil), r.b[v.S:v.E]...)
				}
			}
		case is(k, "status"):
			var m jsonscan.Member
			for it := r.members(v); it.Next(&m); {
				if is(m.Key(r.b), "conditions") {
					out.Status.Conditions = r.conditions(m.Val(), out.Status.Conditions)
				}
			}
		case is(k, "endpoints"):
			out.Endpoints = r.endpoints(v, out.Endpoints)
		case is(k, "subsets"):
			out.Subsets = r.subsets(v, out.Subsets)
		}
		if !r.ok {
			return
		}
	}
}

func (r *reader) metadata(out *body, v jsonscan.Span) {
	var m jsonscan.Member
	for it := r.members(v); it.Next(&m); {
		if !is(m.Key(r.b), "labels") {
			continue
		}
		lv := m.Val()
		switch r.b[lv.S] {
		case 'n':
			out.Metadata.Labels = nil
			continue
		case '{':
		default:
			r.ok = false
			return
		}
		if out.Metadata.Labels == nil {
			out.Metadata.Labels = map[string]string{} // {} too
		}
		var l jsonscan.Member
		for it := r.x.Members(r.b, lv.S); it.Next(&l); {
			if r.b[l.ValStart] != '"' {
				r.ok = false // a null or another type: encoding/json's rules
				return
			}
			s, _ := jsonscan.String(r.b, l.Val())
			out.Metadata.Labels[string(l.Key(r.b))] = string(s)
		}
	}
}

func (r *reader) conditions(v jsonscan.Span, cs []condition) []condition {
	it, ok := r.elems(v, cs != nil)
	if !ok {
		return nil
	}
	cs = []condition{} // [] is empty, not nil
	for e, more := it.Next(); more; e, more = it.Next() {
		cs = append(cs, condition{})
		c := &cs[len(cs)-1]
		var m jsonscan.Member
		for it := r.members(e); it.Next(&m); {
			switch k := m.Key(r.b); {
			case is(k, "type"):
				r.str(&c.Type, m.Val())
			case is(k, "lastTransitionTime"):
				r.str(&c.LastTransitionTime, m.Val())
			case is(k, "status"):
				r.str(&c.Status, m.Val())
			case is(k, "reason"):
				r.str(&c.Reason, m.Val())
			case is(k, "message"):
				r.str(&c.Message, m.Val())
			}
		}
	}
	return cs
}

func (r *reader) endpoints(v jsonscan.Span, es []endpoint) []endpoint {
	it, ok := r.elems(v, es != nil)
	if !ok {
		return nil
	}
	es = []endpoint{}
	for e, more := it.Next(); more; e, more = it.Next() {
		es = append(es, endpoint{})
		ep := &es[len(es)-1]
		var m jsonscan.Member
		for it := r.members(e); it.Next(&m); {
			if is(m.Key(r.b), "targetRef") {
				r.targetRef(&ep.TargetRef, m.Val())
			}
		}
	}
	return es
}

func (r *reader) subsets(v jsonscan.Span, ss []subset) []subset {
	it, ok := r.elems(v, ss != nil)
	if !ok {
		return nil
	}
	ss = []subset{}
	for e, more := it.Next(); more; e, more = it.Next() {
		ss = append(ss, subset{})
		s := &ss[len(ss)-1]
		var m jsonscan.Member
		for it := r.members(e); it.Next(&m); {
			switch k := m.Key(r.b); {
			case is(k, "addresses"):
				s.Addresses = r.addresses(m.Val(), s.Addresses)
			case is(k, "notReadyAddresses"):
				s.NotReadyAddresses = r.addresses(m.Val(), s.NotReadyAddresses)
			}
		}
	}
	return ss
}

func (r *reader) addresses(v jsonscan.Span, as []address) []address {
	it, ok := r.elems(v, as != nil)
	if !ok {
		return nil
	}
	as = []address{}
	for e, more := it.Next(); more; e, more = it.Next() {
		as = append(as, address{})
		a := &as[len(as)-1]
		var m jsonscan.Member
		for it := r.members(e); it.Next(&m); {
			if is(m.Key(r.b), "TargetRef") {
				r.targetRef(&a.TargetRef, m.Val())
			}
		}
	}
	return as
}

// targetRef decodes into *t as encoding/json decodes into a pointer: null
// sets it to nil, an object fills the one there or a new one.
func (r *reader) targetRef(t **targetRef, v jsonscan.Span) {
	switch r.b[v.S] {
	case 'n':
		*t = nil
		return
	case '{':
	default:
		r.ok = false
		return
	}
	if *t == nil {
		*t = &targetRef{}
	}
	tr := *t
	var m jsonscan.Member
	for it := r.x.Members(r.b, v.S); it.Next(&m); {
		switch k := m.Key(r.b); {
		case is(k, "kind"):
			r.str(&tr.Kind, m.Val())
		case is(k, "namespace"):
			r.str(&tr.Namespace, m.Val())
		case is(k, "name"):
			r.str(&tr.Name, m.Val())
		}
	}
}
