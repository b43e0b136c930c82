package clientgo

import (
	"context"

	"github.com/cpid-dev/cpid/instrument"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// target is the object a request writes, from its path.
type target struct {
	gv          schema.GroupVersion
	resource    string
	subresource string
	namespace   string
	name        string // "" for a create
}

// fields is what a write says about its object.
type fields struct {
	ref    instrument.ObjectRef
	own    instrument.Context // the trace context the write carries
	hasOwn bool
	owners []metav1.OwnerReference
}

// noCurrent is the current function of a create.
func noCurrent() (metav1.Object, bool) { return nil, false }

// merge decides the trace context of a write of kind to tgt. current returns
// the object as the caller's cache (or a fake's tracker) holds it; it is asked
// for every write to an existing object. The cached object's context is a
// cause even when the body carries one: controllers copy annotations between
// objects (the deployment controller copies a Deployment's annotations, CPID
// included, onto its ReplicaSets), so the body's context may be another
// object's, not the one this object had.
//
// It returns the context to write, the mergelog to commit once the write
// succeeds (if commit), and whether the write must change at all.
func (s *Stamper) merge(ctx context.Context, f fields, kind bodyKind, tgt target,
	current func() (metav1.Object, bool)) (c instrument.Context, m instrument.Mergelog, commit, change bool) {
	w := write{ref: f.ref, owners: f.owners}
	if w.ref.APIVersion == "" {
		w.ref.APIVersion = tgt.gv.String()
	}
	if w.ref.Resource == "" {
		w.ref.Resource = tgt.resource
	}
	if w.ref.Namespace == "" {
		w.ref.Namespace = tgt.namespace
	}
	if w.ref.Name == "" {
		w.ref.Name = tgt.name
	}

	// What the object carries after the write if it is not stamped, when
	// that is known: the write's context, or for a patch that leaves the
	// annotations alone, the cached object's.
	var carried instrument.Context
	known := kind == bodyObject
	if f.hasOwn {
		w.own = append(w.own, f.own)
		carried, known = f.own, true
	}
	if tgt.name != "" {
		if obj, ok := current(); ok {
			cur := s.t.Extract(obj)
			w.own = append(w.own, cur)
			if !known {
				carried, known = cur, true
			}
			if w.owners == nil {
				w.owners = obj.GetOwnerReferences()
			}
		}
	}

	c, m, commit = s.plan(ctx, w)
	if c.IsZero() || known && same(c, carried) {
		s.unchanged.Add(1)
		return c, instrument.Mergelog{}, false, false
	}
	return c, m, commit, true
}

// stampBody stamps the JSON body of a write to tgt and returns the body to
// send, which is body itself when nothing changes, and the mergelog to
// commit once the write succeeds, if commit.
func (s *Stamper) stampBody(ctx context.Context, body []byte, kind bodyKind, tgt target,
	current func() (metav1.Object, bool)) (out []byte, m instrument.Mergelog, commit bool) {
	d, err := parseBody(body, kind)
	if err != nil {
		s.skipped.Add(1)
		return body, instrument.Mergelog{}, false
	}
	f := d.fields(s.t)
	c, m, commit, change := s.merge(ctx, f, kind, tgt, current)
	if !change {
		return body, instrument.Mergelog{}, false
	}
	d.set(c, kind)
	if out, err = d.encode(); err != nil {
		s.skipped.Add(1)
		return body, instrument.Mergelog{}, false
	}
	s.stamped.Add(1)
	return out, m, commit
}

// stampObject stamps obj, a create's or update's object that the caller
// owns (a fake's copy), in place.
func (s *Stamper) stampObject(ctx context.Context, obj metav1.Object, tgt target,
	current func() (metav1.Object, bool)) (instrument.Mergelog, bool) {
	f := fields{ref: instrument.Ref(obj), owners: obj.GetOwnerReferences()}
	if _, ok := obj.GetAnnotations()[instrument.KeyCPID]; ok {
		f.own, f.hasOwn = s.t.Extract(obj), true
	}
	c, m, commit, change := s.merge(ctx, f, bodyObject, tgt, current)
	if !change {
		return instrument.Mergelog{}, false
	}
	instrument.Inject(obj, c)
	s.stamped.Add(1)
	return m, commit
}

// keepBody returns the body of a status write with the object's current
// trace context in it when the body carries none. Status writes do not
// change the context, but the apiserver stores the metadata they send for
// some resources (ReplicaSets), so a body read from a cache that hides the
// context (Hidden) would otherwise erase it.
func (s *Stamper) keepBody(ctx context.Context, body []byte, kind bodyKind, current func() (metav1.Object, bool)) []byte {
	d, err := parseBody(body, kind)
	if err != nil {
		return body
	}
	if f := d.fields(s.t); f.hasOwn {
		return body
	}
	obj, ok := current()
	if !ok {
		return body
	}
	c := s.t.Extract(obj)
	if c.IsZero() {
		return body
	}
	d.set(c, kind)
	out, err := d.encode()
	if err != nil {
		return body
	}
	s.kept.Add(1)
	return out
}
