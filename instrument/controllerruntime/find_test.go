package controllerruntime

import (
	"context"
	"testing"

	"github.com/cpid-dev/cpid/instrument/clientgo"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestFind: the Stamper's lookups read the objects of watched kinds only,
// owners by kind (a namesake with another UID is not the owner, a
// cluster-scoped owner is found whatever the namespace asked), written
// objects by resource through the RESTMapper.
func TestFind(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	apps, core := schema.GroupVersion{Group: "apps", Version: "v1"}, schema.GroupVersion{Version: "v1"}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{apps, core})
	mapper.Add(apps.WithKind("Deployment"), meta.RESTScopeNamespace)
	mapper.Add(apps.WithKind("ReplicaSet"), meta.RESTScopeNamespace)
	mapper.Add(core.WithKind("Node"), meta.RESTScopeRoot)
	mapper.Add(core.WithKind("Service"), meta.RESTScopeNamespace)
	r := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "d-1"}},
		&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", UID: "rs-1"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "n-1"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "s-1"}},
	).Build()
	watched := map[schema.GroupVersionKind]bool{apps.WithKind("Deployment"): true, apps.WithKind("ReplicaSet"): true,
		core.WithKind("Node"): true}
	for _, tc := range []struct {
		name string
		key  clientgo.Key
		uid  string // "" when not found
	}{
		{"owner", clientgo.Key{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "default", Name: "web", UID: "d-1"}, "d-1"},
		{"owner without uid", clientgo.Key{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "default", Name: "web"}, "d-1"},
		{"namesake", clientgo.Key{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "default", Name: "web", UID: "d-0"}, ""},
		{"cluster-scoped owner", clientgo.Key{Version: "v1", Kind: "Node", Namespace: "default", Name: "n1", UID: "n-1"}, "n-1"},
		{"written object", clientgo.Key{Group: "apps", Version: "v1", Resource: "replicasets", Namespace: "default", Name: "web-1"}, "rs-1"},
		{"kind not watched", clientgo.Key{Version: "v1", Resource: "services", Namespace: "default", Name: "web"}, ""},
		{"unknown resource", clientgo.Key{Group: "demo.cpid.dev", Version: "v1", Resource: "webapps", Namespace: "default", Name: "web"}, ""},
		{"missing object", clientgo.Key{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "other", Name: "web"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obj, ok := find(context.Background(), r, scheme, mapper, func(gvk schema.GroupVersionKind) bool { return watched[gvk] }, tc.key)
			switch {
			case tc.uid == "" && ok:
				t.Errorf("found %s/%s (%s), want nothing", obj.GetNamespace(), obj.GetName(), obj.GetUID())
			case tc.uid != "" && !ok:
				t.Errorf("not found, want %s", tc.uid)
			case ok && string(obj.GetUID()) != tc.uid:
				t.Errorf("found %s, want %s", obj.GetUID(), tc.uid)
			}
		})
	}
}
