package reconstruct

import (
	"testing"
	"time"

	"github.com/cpid-dev/cpid"
)

func TestWindows(t *testing.T) {
	for _, c := range []struct {
		name, rule, writer string
		hop                time.Duration
		want               cpid.Explain
		ok                 bool
	}{
		{"ordinary reaction", "owner", "replicaset-controller", 80 * time.Millisecond, cpid.ExplainInformer, true},
		{"slow controller", "owner", "replicaset-controller", 6 * time.Second, cpid.ExplainInformer, false},
		{"node agent", "owner", "kubelet node-1", 40 * time.Second, cpid.ExplainKubelet, true},
		{"kwok", "self", "kwok", 2 * time.Minute, cpid.ExplainKubelet, true},
		{"node controller at once", "node", "node-controller", 100 * time.Millisecond, cpid.ExplainInformer, true},
		{"node controller after the grace period", "self", "node-controller", 41 * time.Second, cpid.ExplainNodeGrace, true},
		{"eviction after tolerationSeconds", "self", "taint-eviction-controller", 300 * time.Second, cpid.ExplainToleration, true},
		{"eviction past any toleration", "self", "taint-eviction-controller", 10 * time.Minute, cpid.ExplainToleration, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, ok := within(Bands(DefaultWindows, c.rule, c.writer), c.hop)
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
	if _, ok := within(Bands(ws, "owner", "kwok"), 8*time.Minute); !ok {
		t.Error("kwok=10m does not hold an 8 minute hop")
	}
	if _, ok := within(Bands(ws, "owner", "replicaset-controller"), 3*time.Second); ok {
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
