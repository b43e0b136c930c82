package instrument_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/cpid-dev/cpid/instrument"
	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The examples use readable IDs (id("alpha") is 00000000-0000-4000-8000-00616c706861),
// minted IDs m1, m2... from an injected generator and a clock that ticks a
// millisecond per reading. In production New needs neither option.
func newTracer(service string, out *instrument.Emitter, opts ...instrument.Option) *instrument.Tracer {
	return instrument.New(service, out, append([]instrument.Option{
		instrument.WithIDs(sequence("m")), instrument.WithClock(clock()),
	}, opts...)...)
}

func Example_extractInject() {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0"}}
	instrument.Inject(pod, instrument.Context{CPID: id("gamma"), Ancestors: []instrument.ID{id("alpha"), id("beta")}})
	fmt.Println(instrument.KeyCPID, "=", pod.Annotations[instrument.KeyCPID])
	fmt.Println(instrument.KeyAncestors, "=", pod.Annotations[instrument.KeyAncestors])

	tc, err := instrument.Extract(pod)
	fmt.Println(name(tc.CPID), names(tc.Ancestors), err)

	// The trace context travels through a reconcile in its context.Context.
	ctx := instrument.NewContext(context.Background(), tc)
	back, ok := instrument.FromContext(ctx)
	fmt.Println(name(back.CPID), ok)

	// Malformed annotations are treated as absent, never a panic.
	pod.Annotations[instrument.KeyCPID] = "not-a-uuid"
	tc, err = instrument.Extract(pod)
	fmt.Println(tc.IsZero(), err)
	// Output:
	// v1.cpid.dev/cpid = 00000000-0000-4000-8000-0067616d6d61
	// v1.cpid.dev/ancestors = 00000000-0000-4000-8000-00616c706861,00000000-0000-4000-8000-000062657461
	// gamma alpha,beta <nil>
	// gamma true
	// true annotation v1.cpid.dev/cpid (10 bytes): not a UUID in canonical form
}

func ExampleTracer_Root() {
	out := instrument.NewEmitter(os.Stdout, 0)
	kubectl := newTracer("kubectl", out)

	tc := kubectl.Root(instrument.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: "web"})
	fmt.Println("root:", tc.CPID)
	out.Flush()
	// Output:
	// root: 00000000-0000-4000-8000-000000006d31
	// {"time":"2025-03-01T12:00:00.001Z","level":"INFO","msg":"cpid.mergelog","cpid.format":1,"cpid":"00000000-0000-4000-8000-000000006d31","sources":[],"service":"kubectl","object":{"apiVersion":"apps/v1","kind":"Deployment","resource":"","namespace":"default","name":"web","uid":""}}
}

// The paper's Figure 8 and 9: the Deployment's CPID gamma already descends
// from alpha, the ReplicaSet's, so the deployment controller reuses gamma for
// the ReplicaSet instead of minting a CPID, and writes no mergelog.
func ExampleTracer_Merge_reuse() {
	out := instrument.NewEmitter(os.Stdout, 0)
	deployments := newTracer("deployment-controller", out)

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	instrument.Inject(d, instrument.Context{CPID: id("gamma"), Ancestors: []instrument.ID{id("alpha"), id("beta")}})
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-7d9"}}
	instrument.Inject(rs, instrument.Context{CPID: id("alpha")})

	tc := deployments.MergeInto(rs, deployments.Extract(d))
	fmt.Println(name(tc.CPID), names(tc.Ancestors))
	fmt.Println(deployments.Stats().Reused, "reused,", deployments.Stats().Minted, "minted")
	out.Flush()
	// Output:
	// gamma alpha,beta
	// 1 reused, 0 minted
}

// The paper's Figure 5, step 3: the endpoints controller writes Endpoints
// (changed by beta) from Pods (changed by alpha). Neither CPID descends from
// the other, so a CPID is minted and the mergelog {beta, alpha} -> m1 written.
func ExampleTracer_Merge_mint() {
	out := instrument.NewEmitter(os.Stdout, 0)
	endpoints := newTracer("endpoints-controller", out)

	pod := instrument.Context{CPID: id("alpha")}
	//lint:ignore SA1019 the paper's Figure 5 is about Endpoints, which the endpoints controller still writes
	ep := &corev1.Endpoints{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Endpoints"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "e-1"},
	}
	instrument.Inject(ep, instrument.Context{CPID: id("beta")})

	tc := endpoints.MergeInto(ep, pod)
	fmt.Println(name(tc.CPID), names(tc.Ancestors))
	out.Flush()
	// Output:
	// m1 beta,alpha
	// {"time":"2025-03-01T12:00:00.001Z","level":"INFO","msg":"cpid.mergelog","cpid.format":1,"cpid":"00000000-0000-4000-8000-000000006d31","sources":["00000000-0000-4000-8000-000062657461","00000000-0000-4000-8000-00616c706861"],"service":"endpoints-controller","object":{"apiVersion":"v1","kind":"Endpoints","resource":"","namespace":"default","name":"web","uid":"e-1"}}
}

// A reconcile's first span carries the CPID of the object it observed and no
// parent; spans started from its context are its children.
func ExampleTracer_StartSpan() {
	out := instrument.NewEmitter(os.Stdout, 0)
	rsc := newTracer("replicaset-controller", out)

	ctx := instrument.NewContext(context.Background(), instrument.Context{CPID: id("gamma")})
	ctx, sync := rsc.StartSpan(ctx, "syncReplicaSet", slog.String("replicaset", "default/web-7d9"))
	_, create := rsc.StartSpan(ctx, "createPods")
	create.SetAttributes(slog.Int("pods", 3))
	create.End()
	sync.End()
	out.Flush()
	// Output:
	// {"time":"2025-03-01T12:00:00.003Z","level":"INFO","msg":"cpid.span","cpid.format":1,"cpid":"00000000-0000-4000-8000-0067616d6d61","span_id":"00000000-0000-4000-8000-000000006d32","parent_id":"00000000-0000-4000-8000-000000006d31","service":"replicaset-controller","name":"createPods","start":"2025-03-01T12:00:00.002Z","end":"2025-03-01T12:00:00.003Z","attrs":{"pods":3}}
	// {"time":"2025-03-01T12:00:00.004Z","level":"INFO","msg":"cpid.span","cpid.format":1,"cpid":"00000000-0000-4000-8000-0067616d6d61","span_id":"00000000-0000-4000-8000-000000006d31","parent_id":"","service":"replicaset-controller","name":"syncReplicaSet","start":"2025-03-01T12:00:00.001Z","end":"2025-03-01T12:00:00.004Z","attrs":{"replicaset":"default/web-7d9"}}
}

// A controller runs the emitter beside its workers; when the context ends,
// Run writes what is still buffered and returns.
func ExampleEmitter_Run() {
	ctx, cancel := context.WithCancel(context.Background())
	out := instrument.NewEmitter(os.Stdout, 0)
	done := make(chan error)
	go func() { done <- out.Run(ctx) }()

	kubectl := newTracer("kubectl", out)
	kubectl.Root(instrument.ObjectRef{Kind: "ConfigMap", Name: "settings"})

	cancel() // shutdown
	fmt.Println("run:", <-done, "written:", out.Stats().Written)
	// Output:
	// {"time":"2025-03-01T12:00:00.001Z","level":"INFO","msg":"cpid.mergelog","cpid.format":1,"cpid":"00000000-0000-4000-8000-000000006d31","sources":[],"service":"kubectl","object":{"apiVersion":"","kind":"ConfigMap","resource":"","namespace":"","name":"settings","uid":""}}
	// run: <nil> written: 1
}

func ExampleNewLogHandler() {
	h := slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // for a stable output
			}
			return a
		},
	})
	log := slog.New(instrument.NewLogHandler(h)).With("controller", "replicaset")

	ctx := instrument.NewContext(context.Background(), instrument.Context{CPID: id("gamma")})
	log.InfoContext(ctx, "scaling up", "replicas", 3)
	log.WithGroup("pod").InfoContext(ctx, "created", "name", "web-7d9-x2")
	log.InfoContext(context.Background(), "no change in flight")
	// Output:
	// {"level":"INFO","msg":"scaling up","controller":"replicaset","replicas":3,"cpid":"00000000-0000-4000-8000-0067616d6d61"}
	// {"level":"INFO","msg":"created","controller":"replicaset","cpid":"00000000-0000-4000-8000-0067616d6d61","pod":{"name":"web-7d9-x2"}}
	// {"level":"INFO","msg":"no change in flight","controller":"replicaset"}
}

func ExampleLogr() {
	base := funcr.NewJSON(func(obj string) { fmt.Println(obj) }, funcr.Options{})

	ctx := instrument.NewContext(context.Background(), instrument.Context{CPID: id("gamma")})
	log := instrument.Logr(ctx, base)
	log.Info("scaling up", "replicas", 3)
	// Output:
	// {"logger":"","level":0,"msg":"scaling up","cpid":"00000000-0000-4000-8000-0067616d6d61","replicas":3}
}

// Records can go through the controller's own logr logger instead of a file.
func ExampleNewLogrEmitter() {
	base := funcr.NewJSON(func(obj string) { fmt.Println(obj) }, funcr.Options{})
	out := instrument.NewLogrEmitter(base, 0)
	kubectl := newTracer("kubectl", out)
	kubectl.Root(instrument.ObjectRef{Kind: "ConfigMap", Name: "settings"})
	out.Flush()
	// Output:
	// {"logger":"","level":0,"msg":"cpid.mergelog","cpid.format":1,"cpid":"00000000-0000-4000-8000-000000006d31","sources":[],"service":"kubectl","object":{"apiVersion":"","kind":"ConfigMap","resource":"","namespace":"","name":"settings","uid":""}}
}
