package clientgo_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cpid-dev/cpid/instrument"
	"github.com/cpid-dev/cpid/instrument/clientgo"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// A deployment controller, unchanged but for its client, creates and then
// updates a ReplicaSet; the stamper merges the CPIDs of the reconcile's
// context, the ReplicaSet's previous CPID and its owner Deployment's.
func ExampleStamper_Reactor() {
	out := instrument.NewEmitter(os.Stdout, 0)
	tracer := instrument.New("deployment-controller", out,
		instrument.WithIDs(sequence("m")), instrument.WithClock(clock()))

	// The controller's informer cache, holding the owner.
	deployments := cache.NewStore(cache.MetaNamespaceKeyFunc)
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "d-1"}}
	instrument.Inject(web, instrument.Context{CPID: id("gamma"), Ancestors: []instrument.ID{id("alpha")}})
	deployments.Add(web)
	stamper := clientgo.New(tracer, clientgo.StoreLookup(clientgo.Store{
		Group: "apps", Kind: "Deployment", Resource: "deployments", Store: deployments}))

	// The reconcile of web: its context carries web's trace context. A fake
	// clientset drops the context of each call, so the reaction is told.
	ctx := instrument.NewContext(context.Background(), tracer.Extract(web))
	cs := fake.NewClientset()
	cs.PrependReactor("*", "*", stamper.Reactor(cs.Tracker(), func() context.Context { return ctx }))
	rsc := cs.AppsV1().ReplicaSets("default")
	show := func(what string) {
		rs, _ := rsc.Get(ctx, "web-7d9", metav1.GetOptions{})
		fmt.Printf("%s: %s [%s]\n", what, name(rs.Annotations[instrument.KeyCPID]), names(rs.Annotations[instrument.KeyAncestors]))
	}

	// Create: context and owner agree on gamma, which is reused.
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-7d9",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d-1"}}}}
	rs, _ = rsc.Create(ctx, rs, metav1.CreateOptions{})
	show("created")

	// A user changes web (root delta); the next reconcile scales the
	// ReplicaSet, which still carries gamma. Neither descends from the
	// other: m1 is minted and its mergelog written.
	instrument.Inject(web, instrument.Context{CPID: id("delta")})
	deployments.Update(web)
	ctx = instrument.NewContext(context.Background(), instrument.Context{CPID: id("delta")})
	rs.Spec.Replicas = ptr(int32(3))
	rs, _ = rsc.Update(ctx, rs, metav1.UpdateOptions{})
	show("scaled")

	// A status write keeps the object's context.
	rs.Status.Replicas = 3
	rs, _ = rsc.UpdateStatus(ctx, rs, metav1.UpdateOptions{})
	show("status")

	// Errors come back unchanged, and a write that failed leaves no
	// mergelog behind though it needed a new CPID (m2).
	ctx = instrument.NewContext(context.Background(), instrument.Context{CPID: id("eps")})
	_, err := rsc.Create(ctx, rs, metav1.CreateOptions{})
	fmt.Println("already exists:", apierrors.IsAlreadyExists(err))
	cs.PrependReactor("patch", "replicasets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "web-7d9", fmt.Errorf("stale"))
	})
	_, err = rsc.Patch(ctx, "web-7d9", types.MergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{})
	fmt.Println("conflict:", apierrors.IsConflict(err))
	show("after errors")

	out.Flush()
	fmt.Printf("%+v\n", stamper.Stats())
	// Output:
	// created: gamma [alpha]
	// scaled: m1 [gamma,delta,alpha]
	// status: m1 [gamma,delta,alpha]
	// already exists: true
	// conflict: true
	// after errors: m1 [gamma,delta,alpha]
	// {"time":"2025-03-01T12:00:00.001Z","level":"INFO","msg":"cpid.mergelog","cpid.format":1,"cpid":"00000000-0000-4000-8000-000000006d31","sources":["00000000-0000-4000-8000-0067616d6d61","00000000-0000-4000-8000-0064656c7461"],"service":"deployment-controller","object":{"apiVersion":"apps/v1","kind":"ReplicaSet","resource":"replicasets","namespace":"default","name":"web-7d9","uid":""}}
	// {Stamped:3 Unchanged:0 Skipped:0 Kept:0}
}

// One line adopts the stamper for every client made from the config.
func ExampleStamper_Wrap() {
	tracer := instrument.New("my-controller", instrument.NewEmitter(os.Stderr, 0))
	stamper := clientgo.New(tracer, nil) // pass a Lookup over the informers' stores
	cfg := &rest.Config{Host: "https://127.0.0.1:6443"}
	cfg.Wrap(stamper.Wrap)
	client, err := kubernetes.NewForConfig(cfg)
	fmt.Println(client != nil, err)
	// Output: true <nil>
}

func ptr[T any](v T) *T { return &v }

// id, name and names make readable IDs: id("gamma") is
// 00000000-0000-4000-8000-0067616d6d61.
func id(s string) instrument.ID {
	var x instrument.ID
	copy(x[16-len(s):], s)
	x[6], x[8] = 0x40, 0x80
	return x
}

func name(s string) string {
	x, err := instrument.ParseID(s)
	if err != nil {
		return s
	}
	i := 9
	for i < 16 && x[i] == 0 {
		i++
	}
	return string(x[i:])
}

func names(s string) string {
	if s == "" {
		return ""
	}
	out := ""
	for i := 0; i < len(s); i += 37 {
		if i > 0 {
			out += ","
		}
		out += name(s[i : i+36])
	}
	return out
}

func sequence(prefix string) func() instrument.ID {
	n := 0
	return func() instrument.ID {
		n++
		return id(fmt.Sprint(prefix, n))
	}
}

func clock() func() time.Time {
	t := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Millisecond)
		return t
	}
}
