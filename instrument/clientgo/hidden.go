package clientgo

import (
	"context"
	"sync"

	"github.com/cpid-dev/cpid/instrument"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Hidden hides the trace context from a controller while keeping it for the
// Stamper. Some controllers copy or compare annotations between objects: the
// deployment controller copies a Deployment's annotations onto its
// ReplicaSets and rewrites a ReplicaSet whose annotations differ, so a CPID
// it could see would be copied over the ReplicaSet's own and, once the
// Stamper merged them, found different again, write after write (forever
// with N=0, where every merge mints a new CPID). Give the controller's
// informers Hidden.Transform: the cached objects lose their trace context
// annotations, which Hidden keeps by UID; and give the Stamper Hidden.Lookup
// around a Lookup over the same informers, which puts them back. One
// informer serves both, so the Stamper never reads an older object than the
// controller did. The Stamper puts the context back into status writes too,
// which would otherwise carry the stripped annotations to the apiserver.
type Hidden struct {
	mu sync.RWMutex
	m  map[types.UID]hidden
}

// hidden is the context taken from one revision of an object.
type hidden struct {
	rv          string
	annotations map[string]string
}

// NewHidden returns an empty Hidden.
func NewHidden() *Hidden { return &Hidden{m: map[types.UID]hidden{}} }

// Transform is a client-go cache.TransformFunc (informers.WithTransform)
// that strips the trace context annotations from obj and remembers them.
// The contexts of deleted objects are kept (a few hundred bytes each).
func (h *Hidden) Transform(obj any) (any, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil
	}
	a := m.GetAnnotations()
	c, okC := a[instrument.KeyCPID]
	an, okA := a[instrument.KeyAncestors]
	h.mu.Lock()
	defer h.mu.Unlock()
	if !okC && !okA {
		// An object already stripped may come through again: only a new
		// revision without a context means the context is gone.
		if e, ok := h.m[m.GetUID()]; ok && e.rv != m.GetResourceVersion() {
			delete(h.m, m.GetUID())
		}
		return obj, nil
	}
	kept := map[string]string{}
	if okC {
		kept[instrument.KeyCPID] = c
	}
	if okA {
		kept[instrument.KeyAncestors] = an
	}
	h.m[m.GetUID()] = hidden{rv: m.GetResourceVersion(), annotations: kept}
	b := make(map[string]string, len(a))
	for k, v := range a {
		if k != instrument.KeyCPID && k != instrument.KeyAncestors {
			b[k] = v
		}
	}
	m.SetAnnotations(b)
	return obj, nil
}

// Lookup wraps a Lookup over informers that use Transform: the object it
// returns carries its trace context again (a copy of its metadata; the
// cached object is not modified).
func (h *Hidden) Lookup(l Lookup) Lookup {
	return func(ctx context.Context, k Key) (metav1.Object, bool) {
		obj, ok := l(ctx, k)
		if !ok {
			return nil, false
		}
		h.mu.RLock()
		kept := h.m[obj.GetUID()].annotations
		h.mu.RUnlock()
		om := &metav1.ObjectMeta{Name: obj.GetName(), Namespace: obj.GetNamespace(), UID: obj.GetUID(),
			ResourceVersion: obj.GetResourceVersion(), OwnerReferences: obj.GetOwnerReferences()}
		om.Annotations = make(map[string]string, len(obj.GetAnnotations())+len(kept))
		for k, v := range obj.GetAnnotations() {
			om.Annotations[k] = v
		}
		for k, v := range kept {
			om.Annotations[k] = v
		}
		return om, true
	}
}
