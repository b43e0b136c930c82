package reconstruct

import "testing"

// TestSpecChanged: which writes of an owner may have changed its spec, the
// ones its controller creates and deletes dependents for.
func TestSpecChanged(t *testing.T) {
	rs := func(spec string) string {
		return `{"kind":"ReplicaSet","metadata":{"name":"web","annotations":{"poke":"1"}},"spec":` + spec + `}`
	}
	o := &Object{}
	for i, w := range []struct {
		verb, sub, req string
		want           bool
	}{
		{"create", "", rs(`{"replicas":3}`), true},
		{"patch", "", `{"metadata":{"annotations":{"poke":"2"}}}`, false},                          // kubectl annotate
		{"patch", "", `{"metadata":{"labels":{"tier":"web"},"resourceVersion":"9"}}`, false},       // kubectl label
		{"patch", "", `[{"op":"replace","path":"/metadata/annotations/poke","value":"3"}]`, false}, // JSON patch
		{"update", "", rs(`{"replicas":3}`), false},                                                // annotations copied
		{"update", "", rs(`{"replicas":30}`), true},                                                // scaled
		{"update", "status", `{"status":{"replicas":30}}`, true},                                   // not known: counts
		{"update", "", rs(`{"replicas":30}`), false},
		{"patch", "", `{"spec":{"replicas":5}}`, true},
		{"update", "", rs(`{"replicas":5}`), true}, // the patch left the spec unknown
		{"patch", "", `[{"op":"move","from":"/spec/replicas","path":"/metadata/annotations/x"}]`, true},
		{"patch", "", `{"metadata":{"ownerReferences":[]}}`, true},
		{"update", "", ``, true}, // no request body (Metadata level)
	} {
		e := &Event{Verb: w.verb, Subresource: w.sub, Request: []byte(w.req)}
		e.hashRequest()
		if got := o.specChanged(e); got != w.want {
			t.Errorf("write %d (%s %s %s): spec changed %v, want %v", i, w.verb, w.sub, w.req, got, w.want)
		}
	}
}
