package clientgo_test

import (
	"context"
	"testing"

	"github.com/cpid-dev/cpid/instrument"
	"github.com/cpid-dev/cpid/instrument/clientgo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
)

func TestReactorPatches(t *testing.T) {
	tracer := instrument.New("test", nil, instrument.WithIDs(sequence("m")))
	stamper := clientgo.New(tracer, nil)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	instrument.Inject(cm, instrument.Context{CPID: id("prev")})
	cs := fake.NewClientset(cm)
	ctx := instrument.NewContext(context.Background(), instrument.Context{CPID: id("ctx")})
	cs.PrependReactor("*", "*", stamper.Reactor(cs.Tracker(), func() context.Context { return ctx }))
	cms := cs.CoreV1().ConfigMaps("ns")

	tests := []struct {
		name  string
		pt    types.PatchType
		patch string
		want  string
	}{
		{name: "merge patch merges the stored object's CPID", pt: types.MergePatchType,
			patch: `{"data":{"k":"1"}}`, want: "m1"},
		{name: "strategic patch reusing the CPID is untouched", pt: types.StrategicMergePatchType,
			patch: `{"data":{"k":"2"}}`, want: "m1"},
		{name: "JSON patch passes through", pt: types.JSONPatchType,
			patch: `[{"op":"add","path":"/data/k","value":"3"}]`, want: "m1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name != tests[0].name {
				// From now on the context is the one the object carries.
				got, _ := cms.Get(ctx, "c", metav1.GetOptions{})
				ctx = instrument.NewContext(context.Background(), tracer.Extract(got))
			}
			if _, err := cms.Patch(ctx, "c", tt.pt, []byte(tt.patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			got, _ := cms.Get(ctx, "c", metav1.GetOptions{})
			if c := name(got.Annotations[instrument.KeyCPID]); c != tt.want {
				t.Errorf("CPID %s, want %s", c, tt.want)
			}
			if got.Data["k"] == "" {
				t.Error("patch not applied")
			}
		})
	}
	if s := stamper.Stats(); s != (clientgo.Stats{Stamped: 1, Unchanged: 1, Skipped: 1}) {
		t.Errorf("Stats = %+v", s)
	}
}

func TestReactorDynamic(t *testing.T) {
	tracer := instrument.New("test", nil, instrument.WithIDs(sequence("m")))
	stamper := clientgo.New(tracer, nil)
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "WidgetList"})
	ctx := instrument.NewContext(context.Background(), instrument.Context{CPID: id("ctx")})
	dc.PrependReactor("*", "*", stamper.Reactor(dc.Tracker(), func() context.Context { return ctx }))

	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w", "namespace": "ns"}}}
	if _, err := dc.Resource(gvr).Namespace("ns").Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := dc.Resource(gvr).Namespace("ns").Get(ctx, "w", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := name(got.GetAnnotations()[instrument.KeyCPID]); c != "ctx" {
		t.Errorf("CPID %q, want ctx", c)
	}
	if _, ok := w.GetAnnotations()[instrument.KeyCPID]; ok {
		t.Error("the caller's object was changed")
	}
}
