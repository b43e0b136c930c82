package clientgo

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// Key names an object the Stamper needs from the caller's cache: an owner,
// known by kind, or the object being written, known by resource.
type Key struct {
	Group, Version string
	Kind           string // set for an owner reference
	Resource       string // set for the written object, from the request
	Namespace      string // the written object's namespace; owners share it or are cluster-scoped
	Name           string
	UID            types.UID // set for an owner reference
}

// Lookup returns the object named by key as the caller's cache holds it. It
// must not call the apiserver: it runs on the write path.
type Lookup func(ctx context.Context, key Key) (metav1.Object, bool)

// Store is an informer store holding one kind of object.
type Store struct {
	Group    string // "" for the core group
	Kind     string // e.g. "ReplicaSet"
	Resource string // e.g. "replicasets"
	Store    cache.Store
}

// StoreLookup returns a Lookup over informer stores, for example
//
//	clientgo.StoreLookup(clientgo.Store{Group: "apps", Kind: "Deployment",
//		Resource: "deployments", Store: deployInformer.Informer().GetStore()})
//
// An owner is found by group and kind, the written object by group and
// resource. An object whose UID differs from the key's is not returned: it
// is a namesake that replaced the owner.
func StoreLookup(stores ...Store) Lookup {
	return func(_ context.Context, k Key) (metav1.Object, bool) {
		for _, s := range stores {
			if s.Group != k.Group || !(k.Kind != "" && s.Kind == k.Kind || k.Kind == "" && s.Resource == k.Resource) {
				continue
			}
			for _, key := range []string{k.Namespace + "/" + k.Name, k.Name} {
				if k.Namespace == "" && key != k.Name {
					continue
				}
				item, ok, err := s.Store.GetByKey(key)
				if err != nil || !ok {
					continue
				}
				obj, err := meta.Accessor(item)
				if err != nil || k.UID != "" && obj.GetUID() != k.UID {
					continue
				}
				return obj, true
			}
		}
		return nil, false
	}
}
