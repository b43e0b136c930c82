package controllerruntime

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/cpid-dev/cpid/instrument"
	"github.com/cpid-dev/cpid/instrument/clientgo"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// NewManager returns manager.New(cfg, opts) (ctrl.NewManager) with the
// writes of every client the manager makes stamped with CPIDs, merged by a
// Tracer named service (the writer's name in mergelogs) made with topts. The
// manager runs the Emitter of the mergelogs and flushes it when it stops.
// cfg is not modified.
func NewManager(service string, cfg *rest.Config, opts manager.Options, topts ...instrument.Option) (manager.Manager, error) {
	logger := opts.Logger
	if logger.GetSink() == nil {
		logger = logf.Log
	}
	emitter := instrument.NewLogrEmitter(logger.WithName("cpid"), 0)
	tracer := instrument.New(service, emitter, topts...)
	l := &lookup{}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(clientgo.New(tracer, l.find).Wrap)

	newCache := opts.NewCache
	if newCache == nil {
		newCache = cache.New
	}
	opts.NewCache = func(c *rest.Config, o cache.Options) (cache.Cache, error) {
		ca, err := newCache(c, o)
		if err != nil {
			return nil, err
		}
		w := &watched{Cache: ca, scheme: o.Scheme, mapper: o.Mapper, kinds: map[schema.GroupVersionKind]bool{}}
		l.w.Store(w)
		return w, nil
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(manager.RunnableFunc(emitter.Run)); err != nil {
		return nil, err
	}
	return mgr, nil
}

// watched is the manager's cache, which remembers the kinds it was asked to
// inform about (the controllers' watches), so that lookups read only those.
type watched struct {
	cache.Cache
	scheme *runtime.Scheme
	mapper meta.RESTMapper

	mu    sync.RWMutex
	kinds map[schema.GroupVersionKind]bool
}

func (w *watched) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := w.Cache.GetInformer(ctx, obj, opts...)
	if err == nil {
		if gvk, err := apiutil.GVKForObject(obj, w.scheme); err == nil {
			w.add(gvk)
		}
	}
	return i, err
}

func (w *watched) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := w.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err == nil {
		w.add(gvk)
	}
	return i, err
}

func (w *watched) add(gvk schema.GroupVersionKind) {
	w.mu.Lock()
	w.kinds[gvk] = true
	w.mu.Unlock()
}

func (w *watched) has(gvk schema.GroupVersionKind) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.kinds[gvk]
}

// lookup finds the objects the Stamper asks for in the manager's cache,
// once the manager has made it.
type lookup struct{ w atomic.Pointer[watched] }

func (l *lookup) find(ctx context.Context, k clientgo.Key) (metav1.Object, bool) {
	w := l.w.Load()
	if w == nil {
		return nil, false
	}
	return find(ctx, w, w.scheme, w.mapper, w.has, k)
}

// find reads the object k names from r, when it is of a kind the scheme
// knows and watched reports (an informer exists: reading another kind would
// start one, on the write path). Owners are named by kind, the written
// object by resource.
func find(ctx context.Context, r client.Reader, scheme *runtime.Scheme, mapper meta.RESTMapper,
	watched func(schema.GroupVersionKind) bool, k clientgo.Key) (metav1.Object, bool) {
	gvk := schema.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
	if k.Kind == "" {
		var err error
		if gvk, err = mapper.KindFor(schema.GroupVersionResource{Group: k.Group, Version: k.Version, Resource: k.Resource}); err != nil {
			return nil, false
		}
	}
	if !watched(gvk) {
		return nil, false
	}
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, false
	}
	ns := k.Namespace
	if m.Scope.Name() == meta.RESTScopeNameRoot {
		ns = ""
	}
	o, err := scheme.New(gvk)
	if err != nil {
		return nil, false
	}
	obj, ok := o.(client.Object)
	if !ok {
		return nil, false
	}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: k.Name}, obj); err != nil {
		return nil, false
	}
	if k.UID != "" && obj.GetUID() != k.UID {
		return nil, false // a namesake that replaced the owner
	}
	return obj, true
}
