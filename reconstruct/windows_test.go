package reconstruct

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cpid-dev/cpid"
)

func TestWindows(t *testing.T) {
	for _, c := range []struct {
		name, rule, writer, resource string
		hop                          time.Duration
		want                         cpid.Explain
		ok                           bool
	}{
		{"ordinary reaction", "owner", "replicaset-controller", "pods", 80 * time.Millisecond, cpid.ExplainInformer, true},
		{"slow controller", "owner", "replicaset-controller", "pods", 6 * time.Second, cpid.ExplainInformer, false},
		{"node agent", "owner", "kubelet node-1", "pods", 40 * time.Second, cpid.ExplainKubelet, true},
		{"kwok", "self", "kwok", "pods", 2 * time.Minute, cpid.ExplainKubelet, true},
		{"node controller at once", "node", "node-controller", "pods", 100 * time.Millisecond, cpid.ExplainInformer, true},
		{"node controller after the grace period", "self", "node-controller", "nodes", 41 * time.Second, cpid.ExplainNodeGrace, true},
		{"node controller's eviction after tolerationSeconds", "node", "node-controller", "pods", 12 * time.Second, cpid.ExplainToleration, true},
		{"eviction after tolerationSeconds", "self", "taint-eviction-controller", "pods", 300 * time.Second, cpid.ExplainToleration, true},
		{"eviction past any toleration", "self", "taint-eviction-controller", "pods", 10 * time.Minute, cpid.ExplainToleration, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, ok := within(Bands(DefaultWindows, c.rule, c.writer, c.resource), c.hop)
			if w.Explain != c.want || ok != c.ok {
				t.Errorf("within = %s, %v; want %s, %v", w.Explain, ok, c.want, c.ok)
			}
		})
	}
}

func TestParseWindow(t *testing.T) {
	w, err := ParseWindow("owner/replicaset-controller=2s")
	if err != nil || w.Rule != "owner" || w.Writer != "replicaset-controller" || w.Max != 2*time.Second {
		t.Errorf("ParseWindow = %+v, %v", w, err)
	}
	if w, err := ParseWindow("*=3s"); err != nil || w.Writer != "" || w.Rule != "" || w.Max != 3*time.Second {
		t.Errorf("ParseWindow(*=3s) = %+v, %v", w, err)
	}
	k, err := ParseWindow("kwok=10m")
	if err != nil || k.Explain != cpid.ExplainKubelet {
		t.Errorf("ParseWindow(kwok=10m) = %+v, %v", k, err)
	}
	for _, bad := range []string{"", "kwok", "kwok=", "kwok=-1s", "=2s", "kwok=soon"} {
		if _, err := ParseWindow(bad); err == nil {
			t.Errorf("ParseWindow(%q) accepted", bad)
		}
	}
	// A given window goes before the defaults.
	ws := append([]Window{w, k}, DefaultWindows...)
	if _, ok := within(Bands(ws, "owner", "kwok", "pods"), 8*time.Minute); !ok {
		t.Error("kwok=10m does not hold an 8 minute hop")
	}
	if _, ok := within(Bands(ws, "owner", "replicaset-controller", "pods"), 3*time.Second); ok {
		t.Error("owner/replicaset-controller=2s holds a 3 s hop")
	}
}

// TestExplainRetry: a write that came long after its cause, with a failed
// write of the same writer to the object in between, is a retry.
func TestExplainRetry(t *testing.T) {
	en := NewEngine()
	base := int64(1e18)
	ev := func(id int64, user string, code int, atMS int64) *Event {
		return &Event{ID: id, AuditID: string(rune('a' + id)), Verb: "update", Resource: "deployments", Subresource: "status",
			Namespace: "default", Name: "web", ResourceVersion: "1" + string(rune('0'+id)), Code: code,
			Username: user, ReceivedNS: base + atMS*1e6, StageNS: base + atMS*1e6 + 1e6}
	}
	ctrl := "system:serviceaccount:kube-system:deployment-controller"
	en.Process(&Event{ID: 1, AuditID: "u", Verb: "create", Resource: "deployments", Namespace: "default", Name: "web",
		ResourceVersion: "10", Username: "alice", UserAgent: "kubectl/v1.37", Code: 201, ReceivedNS: base, StageNS: base + 1e6})
	en.Process(ev(2, ctrl, 409, 1000))
	en.Process(ev(3, ctrl, 200, 9000))
	d := en.Drain()
	last := d.Writes[len(d.Writes)-1]
	if last.Explain != cpid.ExplainRequeue || last.ChangeID != "u" {
		t.Errorf("the write after the 409: explain %q (%s), change %q; want requeue in change u", last.Explain, last.ExplainDetail, last.ChangeID)
	}
}

// TestEnvironmentRoots: a Node whose Ready condition changes starts a
// change of its own (trigger node), and the writes that follow it belong
// to it, not to the user's change that created the objects; a controller
// write long after its cause, with nothing explaining the wait, stays in
// its cause's change (changes end only on positive evidence).
func TestEnvironmentRoots(t *testing.T) {
	en := NewEngine()
	base := int64(1e18)
	at := func(ms int64) int64 { return base + ms*1e6 }
	node := func(id int64, user, ready string, ms int64) *Event {
		return &Event{ID: id, AuditID: fmt.Sprintf("n%d", id), Verb: "patch", Resource: "nodes", Subresource: "status", Name: "n1",
			ResourceVersion: fmt.Sprint(100 + id), Username: user, UserAgent: "x", Code: 200, ReceivedNS: at(ms), StageNS: at(ms) + 1e6,
			Object: []byte(`{"kind":"Node","status":{"conditions":[{"type":"Ready","status":"` + ready + `"}]}}`)}
	}
	pod := func(id int64, user, verb string, ms int64) *Event {
		return &Event{ID: id, AuditID: fmt.Sprintf("p%d", id), Verb: verb, Resource: "pods", Namespace: "default", Name: "web-1",
			ResourceVersion: fmt.Sprint(100 + id), Username: user, UserAgent: "x", Code: 200, ReceivedNS: at(ms), StageNS: at(ms) + 1e6,
			Object: []byte(`{"kind":"Pod","spec":{"nodeName":"n1"}}`)}
	}
	sa := func(name string) string { return "system:serviceaccount:kube-system:" + name }
	en.Process(&Event{ID: 1, AuditID: "user-node", Verb: "create", Resource: "nodes", Name: "n1", ResourceVersion: "100",
		Username: "admin", UserAgent: "kubectl/v1.37", Code: 201, ReceivedNS: at(0), StageNS: at(1)})
	en.Process(node(2, "system:node:n1", "True", 30))
	en.Process(&Event{ID: 3, AuditID: "user-pod", Verb: "create", Resource: "pods", Namespace: "default", Name: "web-1",
		ResourceVersion: "103", Username: "admin", UserAgent: "kubectl/v1.37", Code: 201, ReceivedNS: at(1000), StageNS: at(1001),
		Object: []byte(`{"kind":"Pod","spec":{"nodeName":"n1"}}`)})
	en.Process(pod(4, "system:node:n1", "patch", 1100))
	// 60 s later the node controller finds the node gone quiet.
	en.Process(node(5, sa("node-controller"), "Unknown", 61000))
	en.Process(pod(6, sa("node-controller"), "patch", 61050))
	// 5 minutes after that, a controller writes the pod, nothing explaining
	// the wait.
	en.Process(pod(7, sa("some-controller"), "patch", 400000))
	d := en.Drain()
	byID := map[int64]cpid.Write{}
	for _, w := range d.Writes {
		byID[w.EventID] = w
	}
	changes := map[string]cpid.Change{}
	for _, c := range d.Changes {
		changes[c.ID] = c
	}
	if c := changes["n5"]; c.Trigger != cpid.TriggerNode || c.Detail != "Node n1 Ready True -> Unknown" {
		t.Errorf("the node going Unknown: change %+v; want a node root", c)
	}
	if w := byID[6]; w.ChangeID != "n5" || w.Rule != "node" {
		t.Errorf("the node controller's pod write: change %q by %q; want the node change", w.ChangeID, w.Rule)
	}
	if w := byID[4]; w.ChangeID != "user-pod" || w.Explain != cpid.ExplainKubelet {
		t.Errorf("the kubelet's pod write: change %q, explain %q; want the user's change, kubelet", w.ChangeID, w.Explain)
	}
	// Changes end only on positive evidence: the late write stays in its
	// cause's change, its hop unexplained, and the run's warning counts it.
	if w := byID[7]; w.ChangeID != "n5" || w.Explain != cpid.ExplainUnexplained || w.HopNS < int64(300*time.Second) {
		t.Errorf("the late controller write: change %q, explain %q, hop %s; want the node's change, unexplained, its whole hop",
			w.ChangeID, w.Explain, time.Duration(w.HopNS))
	}
	if u := en.Unexplained; u.N != 1 || !strings.Contains(u.What, "some-controller patch pods") {
		t.Errorf("unexplained hops counted: %+v", u)
	}
	if len(changes) != 3 {
		t.Errorf("%d changes, want 3 (two users', the node's): %v", len(changes), changes)
	}
}
