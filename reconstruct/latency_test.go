package reconstruct

import (
	"strings"
	"testing"
	"time"

	"github.com/cpid-dev/cpid"
)

// TestLatencyParts: a slow write's apiserver explanation names where the
// apiserver spent the time, from the latency annotations it put on the
// audit event (these are the node-loss fixture's, on a request that waited
// 10 s for etcd).
func TestLatencyParts(t *testing.T) {
	ann := `{"apiserver.latency.k8s.io/authentication":"4.316µs","apiserver.latency.k8s.io/authorization":"5.846µs",` +
		`"apiserver.latency.k8s.io/etcd":"9.999559523s","apiserver.latency.k8s.io/response-write":"1.06µs",` +
		`"apiserver.latency.k8s.io/serialize-response-object":"2.480862ms","apiserver.latency.k8s.io/total":"10.002518771s",` +
		`"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}`
	e := &Event{Latency: []byte(ann)}
	if got, want := e.LatencyParts(), "etcd 10s, serialize-response-object 2ms"; got != want {
		t.Errorf("LatencyParts = %q, want %q", got, want)
	}
	if (&Event{}).LatencyParts() != "" || (&Event{Latency: []byte(`{"x":1}`)}).LatencyParts() != "" {
		t.Error("parts without annotations")
	}

	// A controller write that waited on the apiserver.
	en := NewEngine()
	o := &Object{Key: cpid.ObjectKey{Group: "apps", Resource: "replicasets", Namespace: "default", Name: "web"}}
	start := time.Date(2026, 11, 24, 5, 40, 54, 0, time.UTC).UnixNano()
	w := &Event{Verb: "update", Resource: "replicasets", ReceivedNS: start, StageNS: start + int64(10*time.Second), Latency: []byte(ann)}
	x := en.explain(w, o, "replicaset-controller", "owner", int64(11*time.Second), start-int64(time.Second))
	if x.Explain != cpid.ExplainAPIServer || !strings.Contains(x.Detail, "etcd 10s") {
		t.Errorf("explain = %s %q, want apiserver naming etcd", x.Explain, x.Detail)
	}
}
