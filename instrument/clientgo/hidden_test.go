package clientgo

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cpid-dev/cpid/instrument"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

func TestHidden(t *testing.T) {
	h := NewHidden()
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	rv := 0
	add := func(cpid string, extra map[string]string) {
		rv++
		a := map[string]string{}
		for k, v := range extra {
			a[k] = v
		}
		if cpid != "" {
			a[instrument.KeyCPID] = cpid
			a[instrument.KeyAncestors] = "anc"
		}
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "u1",
			ResourceVersion: fmt.Sprint(rv), Annotations: a}}
		obj, err := h.Transform(rs)
		if err != nil {
			t.Fatal(err)
		}
		store.Update(obj)
	}
	lookup := h.Lookup(StoreLookup(Store{Group: "apps", Kind: "ReplicaSet", Resource: "replicasets", Store: store}))
	get := func() (cached, looked map[string]string) {
		o, _, _ := store.GetByKey("default/web-1")
		l, ok := lookup(context.Background(), Key{Group: "apps", Kind: "ReplicaSet", Namespace: "default", Name: "web-1"})
		if !ok {
			t.Fatal("lookup found nothing")
		}
		return o.(*appsv1.ReplicaSet).Annotations, l.GetAnnotations()
	}
	add("c1", map[string]string{"keep": "me"})
	cached, looked := get()
	if _, ok := cached[instrument.KeyCPID]; ok || cached["keep"] != "me" {
		t.Errorf("the controller's cache still shows the context: %v", cached)
	}
	if looked[instrument.KeyCPID] != "c1" || looked[instrument.KeyAncestors] != "anc" || looked["keep"] != "me" {
		t.Errorf("the Stamper's lookup lost the context: %v", looked)
	}
	again, _, _ := store.GetByKey("default/web-1")
	h.Transform(again) // the informer hands the stripped object over again
	if _, looked = get(); looked[instrument.KeyCPID] != "c1" {
		t.Errorf("lookup after a second transform of the same revision: %v", looked)
	}
	add("c2", nil)
	if _, looked = get(); looked[instrument.KeyCPID] != "c2" {
		t.Errorf("lookup after update: %v", looked)
	}
	add("", nil) // a new revision without a context: it is gone
	if _, looked = get(); looked[instrument.KeyCPID] != "" {
		t.Errorf("lookup after removal: %v", looked)
	}
	if out, err := h.Transform("not an object"); err != nil || out != "not an object" {
		t.Errorf("non-object: %v %v", out, err)
	}
}

// TestHiddenUpdateMerges: a controller whose informers hide the context
// updates a ReplicaSet (the body has no context); the Stamper finds the
// ReplicaSet's own context and its Deployment's through Hidden.Lookup and
// merges them.
func TestHiddenUpdateMerges(t *testing.T) {
	n := 0
	tracer := instrument.New("deployment-controller", nil, instrument.WithIDs(func() instrument.ID { n++; return tid(fmt.Sprint("m", n)) }))
	h := NewHidden()
	dStore, rsStore := cache.NewStore(cache.MetaNamespaceKeyFunc), cache.NewStore(cache.MetaNamespaceKeyFunc)
	lookup := h.Lookup(StoreLookup(
		Store{Group: "apps", Kind: "Deployment", Resource: "deployments", Store: dStore},
		Store{Group: "apps", Kind: "ReplicaSet", Resource: "replicasets", Store: rsStore}))
	s := New(tracer, lookup)
	old, dep := tid("rs-old"), tid("dep-new")
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "d-uid",
		Annotations: map[string]string{instrument.KeyCPID: dep.String()}}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "rs-uid",
		Annotations:     map[string]string{instrument.KeyCPID: old.String(), "deployment.kubernetes.io/revision": "1"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: k8stypes.UID("d-uid")}}}}
	x, _ := h.Transform(d)
	dStore.Add(x)
	x, _ = h.Transform(rs)
	rsStore.Add(x)
	cached, _, _ := rsStore.GetByKey("default/web-1")
	body, _ := json.Marshal(cached) // what the controller sends: no context
	current := func() (metav1.Object, bool) {
		return lookup(context.Background(), Key{Group: "apps", Version: "v1", Resource: "replicasets", Namespace: "default", Name: "web-1"})
	}
	tgt := target{gv: schema.GroupVersion{Group: "apps", Version: "v1"}, resource: "replicasets", namespace: "default", name: "web-1"}
	out, m, commit := s.stampBody(context.Background(), body, bodyObject, tgt, current)
	var got appsv1.ReplicaSet
	json.Unmarshal(out, &got)
	c := tracer.ExtractAnnotations(got.Annotations)
	if !commit || len(m.Sources) != 2 || c.CPID == old || c.CPID == dep {
		t.Errorf("stamped %s (commit %v, sources %v): want a merge of %s and %s", c.CPID, commit, m.Sources, old, dep)
	}

	// A status update from the stripped cache gets the object's context
	// back, unchanged, with no mergelog.
	tgt.subresource = "status"
	out = s.keepBody(context.Background(), body, bodyObject, current)
	json.Unmarshal(out, &got)
	if c := tracer.ExtractAnnotations(got.Annotations); c.CPID != old {
		t.Errorf("status body carries %s, want the object's own %s", c.CPID, old)
	}
}
