package clientgo

import (
	"context"
	"sync/atomic"

	"github.com/cpid-dev/cpid/instrument"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Stamper stamps writes with the merge of their causes. It is safe for
// concurrent use.
type Stamper struct {
	t      *instrument.Tracer
	lookup Lookup

	stamped, unchanged, skipped, kept atomic.Uint64
}

// New returns a Stamper merging with t and finding owners (and the objects
// of patches) with lookup, which may be nil.
func New(t *instrument.Tracer, lookup Lookup) *Stamper {
	return &Stamper{t: t, lookup: lookup}
}

// Stats counts the writes a Stamper has seen.
type Stats struct {
	Stamped   uint64 // writes whose trace context was written or changed
	Unchanged uint64 // writes that already carried the merged context, or had no cause with one
	Skipped   uint64 // creates, updates and patches passed through unstamped (see the package doc)
	Kept      uint64 // status updates whose body lacked the object's context and got it back (see Hidden)
}

// Stats returns the counters of s.
func (s *Stamper) Stats() Stats {
	return Stats{Stamped: s.stamped.Load(), Unchanged: s.unchanged.Load(), Skipped: s.skipped.Load(), Kept: s.kept.Load()}
}

// write is what the stamper knows of one write.
type write struct {
	ref instrument.ObjectRef
	// own are the contexts the object carries or is written with: those of
	// the body, and of the cached object.
	own    []instrument.Context
	owners []metav1.OwnerReference
}

// find looks up key, if there is a lookup.
func (s *Stamper) find(ctx context.Context, key Key) (metav1.Object, bool) {
	if s.lookup == nil {
		return nil, false
	}
	return s.lookup(ctx, key)
}

// plan merges the causes of w.
func (s *Stamper) plan(ctx context.Context, w write) (instrument.Context, instrument.Mergelog, bool) {
	var buf [8]instrument.Context
	in := append(buf[:0], w.own...)
	if c, ok := instrument.FromContext(ctx); ok {
		in = append(in, c)
	}
	for _, o := range w.owners {
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil {
			continue
		}
		key := Key{Group: gv.Group, Version: gv.Version, Kind: o.Kind, Namespace: w.ref.Namespace, Name: o.Name, UID: o.UID}
		if obj, ok := s.find(ctx, key); ok {
			in = append(in, s.t.Extract(obj))
		}
	}
	return s.t.Plan(w.ref, in...)
}

// same reports whether a and b are the same trace context.
func same(a, b instrument.Context) bool {
	if a.CPID != b.CPID || len(a.Ancestors) != len(b.Ancestors) {
		return false
	}
	for i := range a.Ancestors {
		if a.Ancestors[i] != b.Ancestors[i] {
			return false
		}
	}
	return true
}
