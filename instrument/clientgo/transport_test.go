package clientgo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/cpid-dev/cpid/instrument"
	"github.com/cpid-dev/cpid/instrument/clientgo"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// apiserver records the writes it receives and answers them with status,
// echoing the body (or a small object, for patches).
type apiserver struct {
	mu     sync.Mutex
	status int
	bodies [][]byte
	types  []string
}

func (a *apiserver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.bodies = append(a.bodies, body)
	a.types = append(a.types, r.Header.Get("Content-Type"))
	status := a.status
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusConflict {
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(apierrors.NewConflict(appsv1.Resource("replicasets"), "web", io.EOF).Status())
		return
	}
	w.WriteHeader(status)
	if r.Method == http.MethodPatch || !json.Valid(body) {
		body = []byte(`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web"}}`)
	}
	w.Write(body)
}

func (a *apiserver) last() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bodies[len(a.bodies)-1]
}

// fixture is a recording apiserver, a client going through a stamper and
// one going straight to the apiserver, to compare what they send.
type fixture struct {
	srv      *apiserver
	stamped  kubernetes.Interface
	plain    kubernetes.Interface
	stamper  *clientgo.Stamper
	emitter  *instrument.Emitter
	records  *bytes.Buffer
	replicas cache.Store
}

func newFixture(t *testing.T, contentType string) *fixture {
	f := &fixture{srv: &apiserver{status: http.StatusOK}, records: &bytes.Buffer{}}
	hs := httptest.NewServer(f.srv)
	t.Cleanup(hs.Close)
	f.emitter = instrument.NewEmitter(f.records, 0)
	tracer := instrument.New("rs-controller", f.emitter, instrument.WithIDs(sequence("m")), instrument.WithClock(clock()))
	deployments := cache.NewStore(cache.MetaNamespaceKeyFunc)
	f.replicas = cache.NewStore(cache.MetaNamespaceKeyFunc)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "d-1"}}
	instrument.Inject(d, instrument.Context{CPID: id("owner"), Trace: ownerTrace})
	deployments.Add(d)
	f.stamper = clientgo.New(tracer, clientgo.StoreLookup(
		clientgo.Store{Group: "apps", Kind: "Deployment", Resource: "deployments", Store: deployments},
		clientgo.Store{Group: "apps", Kind: "ReplicaSet", Resource: "replicasets", Store: f.replicas},
	))
	cfg := &rest.Config{Host: hs.URL, ContentConfig: rest.ContentConfig{ContentType: contentType}}
	var err error
	if f.plain, err = kubernetes.NewForConfig(rest.CopyConfig(cfg)); err != nil {
		t.Fatal(err)
	}
	cfg.Wrap(f.stamper.Wrap)
	if f.stamped, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

// sent decodes body, removing the trace-context annotations (and the
// annotations map if that empties it), and returns the context they held.
func sent(t *testing.T, body []byte) (map[string]any, string) {
	t.Helper()
	body = asJSON(t, body)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	meta, _ := m["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	c := ""
	if v, ok := ann[instrument.KeyCPID].(string); ok {
		c = name(v)
		if a, ok := ann[instrument.KeyAncestors]; ok {
			s, _ := a.(string)
			c += "[" + names(s) + "]"
		}
	}
	delete(ann, instrument.KeyCPID)
	delete(ann, instrument.KeyAncestors)
	delete(ann, instrument.KeyTraceparent)
	if ann != nil && len(ann) == 0 {
		delete(meta, "annotations")
	}
	if meta != nil && len(meta) == 0 {
		delete(m, "metadata")
	}
	return m, c
}

// replicaSet returns the ReplicaSet the tests write, with the trace context
// "cpid" or "cpid:ancestor".
func replicaSet(cpid string) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "rs-1", Labels: map[string]string{"app": "web"},
			Annotations:     map[string]string{"note": "<&>"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d-1"}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(3))},
	}
	if cpid, anc, _ := strings.Cut(cpid, ":"); cpid != "" {
		c := instrument.Context{CPID: id(cpid)}
		if anc != "" {
			c.Ancestors = []instrument.ID{id(anc)}
		}
		instrument.Inject(rs, c)
	}
	return rs
}

func TestTransport(t *testing.T) {
	ctxWith := func(cpid string) context.Context {
		if cpid == "" {
			return context.Background()
		}
		return instrument.NewContext(context.Background(), instrument.Context{CPID: id(cpid)})
	}
	tests := []struct {
		name   string
		ctx    string // CPID of the request's context
		cached string // CPID of the ReplicaSet in the cache, "" for none
		write  func(ctx context.Context, c kubernetes.Interface) error
		want   string // context the stamped body carries, "" for none; "=" for a byte-identical body
		logs   int    // mergelogs written
	}{
		{name: "create from owner", write: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.AppsV1().ReplicaSets("ns").Create(ctx, replicaSet(""), metav1.CreateOptions{})
			return err
		}, want: "owner"},
		{name: "create from owner and context", ctx: "ctx", write: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.AppsV1().ReplicaSets("ns").Create(ctx, replicaSet(""), metav1.CreateOptions{})
			return err
		}, want: "m1[ctx,owner]", logs: 1},
		{name: "update merges previous CPID", write: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.AppsV1().ReplicaSets("ns").Update(ctx, replicaSet("prev"), metav1.UpdateOptions{})
			return err
		}, want: "m1[prev,owner]", logs: 1},
		{name: "update without annotations finds the cached object", cached: "prev", write: func(ctx context.Context, c kubernetes.Interface) error {
			rs := replicaSet("")
			_, err := c.AppsV1().ReplicaSets("ns").Update(ctx, rs, metav1.UpdateOptions{})
			return err
		}, want: "m1[prev,owner]", logs: 1},
		{name: "update already stamped is untouched", ctx: "owner", write: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.AppsV1().ReplicaSets("ns").Update(ctx, replicaSet("owner"), metav1.UpdateOptions{})
			return err
		}, want: "="},
		{name: "status keeps the object's context", ctx: "ctx", write: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.AppsV1().ReplicaSets("ns").UpdateStatus(ctx, replicaSet("prev"), metav1.UpdateOptions{})
			return err
		}, want: "="},
		{name: "merge patch", ctx: "ctx", cached: "prev", write: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.AppsV1().ReplicaSets("ns").Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{})
			return err
		}, want: "m1[prev,ctx,owner]", logs: 1},
		{name: "strategic merge patch that changes nothing", ctx: "prev", cached: "prev:owner", write: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.AppsV1().ReplicaSets("ns").Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{})
			return err
		}, want: "="},
		{name: "strategic merge patch of an object not cached", ctx: "prev", write: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods("ns").Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{"spec":{"activeDeadlineSeconds":9007199254740993}}`), metav1.PatchOptions{})
			return err
		}, want: "prev[]"}, // "[]": a null removes stale ancestors
		{name: "JSON patch passes through", ctx: "ctx", write: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.AppsV1().ReplicaSets("ns").Patch(ctx, "web", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/replicas","value":4}]`), metav1.PatchOptions{})
			return err
		}, want: "="},
		{name: "server-side apply", ctx: "ctx", write: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.AppsV1().ReplicaSets("ns").Apply(ctx, appsv1ac.ReplicaSet("web", "ns").WithSpec(appsv1ac.ReplicaSetSpec().WithReplicas(2)),
				metav1.ApplyOptions{FieldManager: "test"})
			return err
		}, want: "ctx"},
		{name: "dry run passes through", ctx: "ctx", write: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.AppsV1().ReplicaSets("ns").Create(ctx, replicaSet(""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}, want: "="},
		{name: "binding passes through", ctx: "ctx", write: func(ctx context.Context, c kubernetes.Interface) error {
			return c.CoreV1().Pods("ns").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Name: "n"}}, metav1.CreateOptions{})
		}, want: "="},
		{name: "no cause has a CPID", write: func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
			return err
		}, want: "="},
	}
	// Built-in types go as protobuf by default, as JSON when asked.
	for _, enc := range []struct{ name, contentType string }{{"protobuf", ""}, {"json", "application/json"}} {
		for _, tt := range tests {
			t.Run(enc.name+"/"+tt.name, func(t *testing.T) {
				f := newFixture(t, enc.contentType)
				if tt.cached != "" {
					f.replicas.Add(replicaSet(tt.cached))
				}
				ctx := ctxWith(tt.ctx)
				if err := tt.write(ctx, f.plain); err != nil {
					t.Fatal(err)
				}
				plain := f.srv.last()
				if err := tt.write(ctx, f.stamped); err != nil {
					t.Fatal(err)
				}
				stamped := f.srv.last()
				f.emitter.Flush()
				if n := strings.Count(f.records.String(), `"msg":"cpid.mergelog"`); n != tt.logs {
					t.Errorf("%d mergelogs, want %d:\n%s", n, tt.logs, f.records)
				}
				if tt.want == "=" {
					if !bytes.Equal(plain, stamped) {
						t.Errorf("body changed:\n%q\n%q", plain, stamped)
					}
					return
				}
				want, _ := sent(t, plain)
				got, c := sent(t, stamped)
				if c != tt.want {
					t.Errorf("stamped %q, want %q\n%q", c, tt.want, stamped)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("body changed beyond the annotations:\n%q\n%q", plain, stamped)
				}
				if bytes.Contains(plain, []byte("9007199254740993")) && !bytes.Contains(stamped, []byte("9007199254740993")) {
					t.Errorf("a large number lost its precision:\n%s", stamped)
				}
			})
		}
	}
}

// ownerTrace is the W3C trace context of the Deployment the fixture's
// ReplicaSets belong to: a traced client wrote it (KEP-5915).
var ownerTrace, _ = instrument.ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")

// TestTransportTrace checks that the owner's traceparent goes on with its
// CPID into what its controller writes, in either encoding, and that a
// write that keeps the object's own context leaves its annotations alone.
func TestTransportTrace(t *testing.T) {
	for _, contentType := range []string{"", "application/json"} {
		f := newFixture(t, contentType)
		if _, err := f.stamped.AppsV1().ReplicaSets("ns").Create(context.Background(), replicaSet(""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := traceSent(t, f.srv.last()); got != ownerTrace.String() {
			t.Errorf("%q: create from a traced owner sent traceparent %q, want %q", contentType, got, ownerTrace)
		}
		ctx := instrument.NewContext(context.Background(), instrument.Context{CPID: id("ctx")})
		if _, err := f.stamped.AppsV1().ReplicaSets("ns").UpdateStatus(ctx, replicaSet("prev"), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := traceSent(t, f.srv.last()); got != "" {
			t.Errorf("%q: a status write gained traceparent %q", contentType, got)
		}
	}
}

// asJSON returns a body sent as JSON: itself, or a protobuf one decoded.
func asJSON(t *testing.T, body []byte) []byte {
	t.Helper()
	if !bytes.HasPrefix(body, []byte("k8s\x00")) {
		return body
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		t.Fatalf("protobuf body: %v", err)
	}
	if body, err = json.Marshal(obj); err != nil {
		t.Fatal(err)
	}
	return body
}

// traceSent returns the traceparent annotation of a body sent.
func traceSent(t *testing.T, body []byte) string {
	t.Helper()
	body = asJSON(t, body)
	var m struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	return m.Metadata.Annotations[instrument.KeyTraceparent]
}

// TestTransportErrors checks that a rejected write surfaces as it was and
// leaves no mergelog, and that a body that cannot be edited is left alone.
func TestTransportErrors(t *testing.T) {
	f := newFixture(t, "")
	f.srv.status = http.StatusConflict
	ctx := instrument.NewContext(context.Background(), instrument.Context{CPID: id("ctx")})
	_, err := f.stamped.AppsV1().ReplicaSets("ns").Update(ctx, replicaSet("prev"), metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		t.Errorf("error %v, want a conflict", err)
	}
	if _, c := sent(t, f.srv.last()); c != "m1[prev,ctx,owner]" {
		t.Errorf("sent %q", c)
	}
	f.emitter.Flush()
	if f.records.Len() != 0 {
		t.Errorf("records after a conflict:\n%s", f.records)
	}

	// A YAML apply patch cannot be edited: it passes through, counted.
	f = newFixture(t, "")
	yaml := []byte("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: web\n")
	err = f.stamped.AppsV1().RESTClient().Patch(types.ApplyYAMLPatchType).Namespace("ns").Resource("replicasets").Name("web").
		Param("fieldManager", "test").Body(yaml).Do(ctx).Error()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.srv.last(), yaml) {
		t.Errorf("YAML body changed: %q", f.srv.last())
	}
	if s := f.stamper.Stats(); s.Skipped != 1 || s.Stamped != 0 {
		t.Errorf("Stats = %+v, want one skipped write", s)
	}
}
