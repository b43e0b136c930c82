package instrument

import (
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Tracer mints and merges trace contexts for one service (a controller, or a
// tool such as kubectl) and emits the mergelogs and spans that result. It is
// safe for concurrent use.
type Tracer struct {
	service string
	n       int
	out     *Emitter
	newID   func() ID
	now     func() time.Time

	extracts, absent, badCPID, badAncestors, badTrace atomic.Uint64
	roots, minted, reused                             atomic.Uint64
}

// Option configures a Tracer.
type Option func(*Tracer)

// WithMaxAncestors sets N, the most ancestor CPIDs kept on an object
// (default DefaultMaxAncestors). It is clamped to [0, MaxAncestorsLimit].
// N=0 is the paper's primary method: no ancestors, and a merge whenever the
// CPIDs differ.
func WithMaxAncestors(n int) Option {
	return func(t *Tracer) { t.n = max(0, min(n, MaxAncestorsLimit)) }
}

// WithIDs replaces the generator of CPIDs and span IDs (default NewID), for
// deterministic tests and examples.
func WithIDs(gen func() ID) Option { return func(t *Tracer) { t.newID = gen } }

// WithClock replaces time.Now.
func WithClock(now func() time.Time) Option { return func(t *Tracer) { t.now = now } }

// New returns a Tracer for service that writes its records to out. A nil out
// discards them.
func New(service string, out *Emitter, opts ...Option) *Tracer {
	t := &Tracer{service: service, n: DefaultMaxAncestors, out: out, newID: NewID, now: time.Now}
	for _, o := range opts {
		o(t)
	}
	return t
}

// Service returns the service name records are written with.
func (t *Tracer) Service() string { return t.service }

// MaxAncestors returns N.
func (t *Tracer) MaxAncestors() int { return t.n }

// Stats counts what a Tracer has seen and done since it was created.
type Stats struct {
	Extracts     uint64 // calls of Tracer.Extract and Tracer.ExtractAnnotations
	Absent       uint64 // ... that found no trace context (nil map included)
	BadCPID      uint64 // ... whose KeyCPID was malformed, treated as absent
	BadAncestors uint64 // ... whose KeyAncestors was malformed or oversized, treated as absent
	BadTrace     uint64 // ... whose KeyTraceparent was not a W3C traceparent, treated as absent
	Roots        uint64 // root CPIDs minted by Root
	Minted       uint64 // CPIDs minted by merges (each with a mergelog, once committed)
	Reused       uint64 // merges that reused a CPID
}

// Stats returns the counters of t.
func (t *Tracer) Stats() Stats {
	return Stats{
		Extracts: t.extracts.Load(), Absent: t.absent.Load(),
		BadCPID: t.badCPID.Load(), BadAncestors: t.badAncestors.Load(), BadTrace: t.badTrace.Load(),
		Roots: t.roots.Load(), Minted: t.minted.Load(), Reused: t.reused.Load(),
	}
}

// Extract is the package's Extract, counting absent and malformed
// annotations in t's Stats instead of returning an error.
func (t *Tracer) Extract(obj metav1.Object) Context {
	if obj == nil {
		return t.ExtractAnnotations(nil)
	}
	return t.ExtractAnnotations(obj.GetAnnotations())
}

// ExtractAnnotations is Tracer.Extract over an annotation map.
func (t *Tracer) ExtractAnnotations(m map[string]string) Context {
	t.extracts.Add(1)
	c, err := ExtractAnnotations(m)
	if err != nil {
		switch e, _ := err.(*AnnotationError); {
		case e != nil && e.Key == KeyAncestors:
			t.badAncestors.Add(1)
		case e != nil && e.Key == KeyTraceparent:
			t.badTrace.Add(1)
		default:
			t.badCPID.Add(1)
		}
	}
	if c.IsZero() {
		t.absent.Add(1)
	}
	return c
}

// ObjectRef names the object a mergelog's CPID was written to. Writers fill
// what they know: a create has no UID yet, a patch may know the resource but
// not the kind.
type ObjectRef struct {
	APIVersion string
	Kind       string
	Resource   string
	Namespace  string
	Name       string
	UID        types.UID
}

// Ref returns the ObjectRef of obj. APIVersion and Kind are filled when obj
// carries its type meta (typed objects from a clientset often do not).
func Ref(obj metav1.Object) ObjectRef {
	r := ObjectRef{Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}
	if o, ok := obj.(interface{ GetObjectKind() schema.ObjectKind }); ok {
		r.APIVersion, r.Kind = o.GetObjectKind().GroupVersionKind().ToAPIVersionAndKind()
	}
	return r
}

// Mergelog is the record of a new CPID (the paper's Table 1): the CPIDs it
// merges, none for a root, with when, by whom and on which object.
type Mergelog struct {
	Time    time.Time
	CPID    ID
	Sources []ID
	Service string
	Object  ObjectRef
}

// Root mints a root CPID for a change that starts here, such as a user's
// apply, and emits its mergelog, which has no sources.
func (t *Tracer) Root(obj ObjectRef) Context {
	c := Context{CPID: t.newID()}
	t.roots.Add(1)
	t.out.emitMergelog(Mergelog{Time: t.now(), CPID: c.CPID, Sources: []ID{}, Service: t.service, Object: obj})
	return c
}

// Merge returns the trace context for a write of obj caused by ctxs, the
// contexts of everything observed for this write, the object's own current
// context included. It follows Algorithm 1: when one CPID descends from all
// the others it is reused and nothing is emitted; otherwise a new CPID is
// minted and the mergelog {roots} -> new is emitted. Contexts without a CPID
// are ignored; if none has one, Merge returns the zero Context.
//
// The result's ancestors are the closest first, at most N. Its Trace is the
// W3C trace context of the last context with a CPID that has one, in the
// order given: the object's own context first, then its causes, so that a
// cause's trace wins and what a traced client started stays in its trace,
// even when the client changed only the traceparent and not the CPID.
func (t *Tracer) Merge(obj ObjectRef, ctxs ...Context) Context {
	c, m, ok := t.Plan(obj, ctxs...)
	if ok {
		t.Commit(m)
	}
	return c
}

// Plan is Merge without the emission: it also returns the mergelog to emit,
// and whether there is one. A writer that can tell whether its write was
// stored calls Commit only when it was, so that a write rejected with a
// conflict leaves no mergelog behind.
func (t *Tracer) Plan(obj ObjectRef, ctxs ...Context) (Context, Mergelog, bool) {
	g := graphs.Get().(*graph)
	defer graphs.Put(g)
	g.build(t.n, ctxs)

	var only *node
	k, longest := 0, 0
	for i := range g.nodes {
		if n := &g.nodes[i]; !n.dead {
			only = n
			k++
			longest = max(longest, len(n.anc))
		}
	}
	switch k {
	case 0:
		return Context{}, Mergelog{}, false
	case 1:
		t.reused.Add(1)
		c := Context{CPID: only.id, Trace: traceOf(ctxs)}
		if m := min(len(only.anc), t.n); m > 0 {
			c.Ancestors = append(make([]ID, 0, m), only.anc[:m]...)
		}
		return c, Mergelog{}, false
	}

	// Several roots: mint. Sources and ancestors share one allocation; the
	// three-index slices keep an append to one from overwriting the other.
	buf := make([]ID, k+min(t.n, k*(longest+1)))
	sources := buf[:0:k]
	for i := range g.nodes {
		if n := &g.nodes[i]; !n.dead {
			sources = append(sources, n.id)
		}
	}
	anc := buf[k:k:len(buf)]
	// Closest first: the sources themselves, then the first ancestor of
	// each source, then the second, and so on.
	for _, s := range sources {
		if len(anc) == cap(anc) {
			break
		}
		anc = append(anc, s)
	}
	for d := 0; d < longest && len(anc) < cap(anc); d++ {
		for i := range g.nodes {
			n := &g.nodes[i]
			if n.dead || d >= len(n.anc) || index(anc, n.anc[d]) >= 0 {
				continue
			}
			anc = append(anc, n.anc[d])
			if len(anc) == cap(anc) {
				break
			}
		}
	}
	id := t.newID()
	t.minted.Add(1)
	m := Mergelog{Time: t.now(), CPID: id, Sources: sources, Service: t.service, Object: obj}
	if len(anc) == 0 {
		anc = nil
	}
	return Context{CPID: id, Ancestors: anc, Trace: traceOf(ctxs)}, m, true
}

// traceOf returns the Trace of the last of ctxs with a CPID that has one.
func traceOf(ctxs []Context) Traceparent {
	for i := len(ctxs) - 1; i >= 0; i-- {
		if c := &ctxs[i]; !c.Trace.IsZero() && !c.IsZero() {
			return c.Trace
		}
	}
	return Traceparent{}
}

// Commit emits a mergelog returned by Plan.
func (t *Tracer) Commit(m Mergelog) { t.out.emitMergelog(m) }

// MergeInto merges the trace context of obj with causes, the contexts of
// the other objects observed for this write, injects the result into obj and
// returns it. obj must be the caller's own copy (see Inject).
func (t *Tracer) MergeInto(obj metav1.Object, causes ...Context) Context {
	own := t.Extract(obj)
	var buf [8]Context
	all := append(append(buf[:0], own), causes...)
	c := t.Merge(Ref(obj), all...)
	if !c.IsZero() {
		Inject(obj, c)
	}
	return c
}
