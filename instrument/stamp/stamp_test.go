package stamp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/instrument"
)

const manifests = `apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  namespace: shop
  annotations:
    tracing.k8s.io/traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
---
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata:
    generateName: web-
`

// TestStampManifests: every object of a YAML stream (a List's items too)
// gets a fresh root CPID, written back as YAML with the empty document
// dropped; a stale traceparent goes, and each root is a mergelog.
func TestStampManifests(t *testing.T) {
	t.Parallel()
	m, bad := Parse([]byte(manifests))
	if len(bad) > 0 || m.JSON {
		t.Fatalf("Parse: %v, JSON %v", bad, m.JSON)
	}
	objs := m.Objects()
	if len(objs) != 2 {
		t.Fatalf("%d objects, want the ConfigMap and the List's Pod", len(objs))
	}
	var log bytes.Buffer
	em := instrument.NewEmitter(&log, 8)
	tr := instrument.New("test", em)
	var got []Stamped
	for _, o := range objs {
		got = append(got, Stamp(tr, o, Options{}))
	}
	if err := em.Flush(); err != nil {
		t.Fatal(err)
	}
	if got[0].Kind != "ConfigMap" || got[0].Where != "shop/a" || got[1].Kind != "Pod" || got[1].Where != "web-*" || got[0].CPID == got[1].CPID {
		t.Errorf("stamped %+v", got)
	}
	if n := strings.Count(log.String(), "\n"); n != 2 {
		t.Errorf("%d mergelog lines, want 2 roots:\n%s", n, log.String())
	}
	out, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Count(s, "---\n") != 1 || !strings.Contains(s, instrument.KeyCPID+": "+got[0].CPID) ||
		!strings.Contains(s, instrument.KeyCPID+": "+got[1].CPID) || strings.Contains(s, instrument.KeyTraceparent) {
		t.Errorf("marshalled:\n%s", s)
	}
}

// TestStampMergeAndTrace: with Merge an object's previous CPID becomes an
// ancestor of its new one; a traceparent given is written; JSON stays JSON.
func TestStampMergeAndTrace(t *testing.T) {
	t.Parallel()
	tr := instrument.New("test", nil)
	prev := tr.Root(instrument.ObjectRef{Kind: "ConfigMap", Name: "a"})
	id, _ := prev.Format()
	m, bad := Parse([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","annotations":{"` + instrument.KeyCPID + `":"` + id + `"}},"data":{"n":1.50}}`))
	if len(bad) > 0 || !m.JSON {
		t.Fatalf("Parse: %v, JSON %v", bad, m.JSON)
	}
	tp, err := instrument.ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if err != nil {
		t.Fatal(err)
	}
	s := Stamp(tr, m.Objects()[0], Options{Merge: true, Traceparent: tp})
	out, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Metadata struct{ Annotations map[string]string }
		Data     map[string]json.RawMessage
	}
	if err := json.Unmarshal(out, &obj); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	a := obj.Metadata.Annotations
	if s.CPID == id || a[instrument.KeyCPID] != s.CPID || !strings.Contains(a[instrument.KeyAncestors], id) || a[instrument.KeyTraceparent] != tp.String() {
		t.Errorf("merged: %+v, annotations %v (previous %s)", s, a, id)
	}
	if string(obj.Data["n"]) != "1.50" {
		t.Errorf("a number is not kept as written: %s", obj.Data["n"])
	}
}

// TestParseBad: each bad document is named by its number and its line in
// the file, and the good ones are still read.
func TestParseBad(t *testing.T) {
	t.Parallel()
	_, bad := Parse([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\nkind: Pod\nmetadata:\n  name: b\n---\n- a list\n"))
	if len(bad) != 2 || !strings.Contains(bad[0].Error(), "document 2 (line 6): no apiVersion") ||
		!strings.Contains(bad[1].Error(), "document 3 (line 10): a list, not an object") {
		t.Errorf("bad documents: %v", bad)
	}
}
