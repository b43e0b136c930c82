package reconstruct

import (
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestEngineTables: an engine works by the tables it is given (rules,
// explainers, ignored resources) instead of the package's.
func TestEngineTables(t *testing.T) {
	t.Parallel()
	base := int64(1e18)
	user := &Event{ID: 1, AuditID: "user", Verb: "create", Resource: "configmaps", Namespace: "default", Name: "web-config",
		ResourceVersion: "10", Username: "alice", UserAgent: "kubectl/v1.37", Code: 201, ReceivedNS: base, StageNS: base + 1e6}
	// A controller rolls its Deployment 20 s after the ConfigMap changed:
	// past its window, and no package rule links the two.
	roll := &Event{ID: 2, AuditID: "roll", Verb: "update", APIGroup: "apps", Resource: "deployments", Namespace: "default",
		Name: "web", ResourceVersion: "11", Username: "system:serviceaccount:default:reloader", Code: 200,
		ReceivedNS: base + 20e9, StageNS: base + 20e9 + 1e6}
	run := func(en *Engine) []cpid.Write {
		for _, e := range []Event{*user, *roll} {
			en.Process(&e)
		}
		return en.Drain().Writes
	}

	if ws := run(NewEngine()); len(ws) != 2 || ws[1].CauseEventID != 0 {
		t.Fatalf("the package's tables: %+v; want the roll without a cause", ws)
	}

	en := NewEngine()
	en.Rules = append([]Rule{{Name: "config", Exact: true, Causes: func(w *Event, o *Object, s *State) []cpid.ObjectKey {
		if o.Key.Resource != "deployments" {
			return nil
		}
		return []cpid.ObjectKey{{Resource: "configmaps", Namespace: o.Key.Namespace, Name: o.Key.Name + "-config"}}
	}}}, Rules...)
	en.Explainers = []Explainer{{Name: "reload", Gives: []cpid.Explain{"reload"}, Test: func(h *Hop) (Explanation, bool) {
		return Explanation{Explain: "reload", Detail: h.Rule + " " + h.Writer}, h.Rule == "config"
	}}}
	ws := run(en)
	if w := ws[1]; w.CauseEventID != 1 || w.Rule != "config" || w.ChangeID != "user" || w.Confidence != cpid.ConfidenceExact ||
		w.Explain != "reload" || w.ExplainDetail != "config reloader" {
		t.Errorf("the roll with the engine's rule and explainer: %+v", w)
	}

	en = NewEngine()
	en.Ignored = map[string]bool{"configmaps": true}
	if ws := run(en); len(ws) != 1 || ws[0].EventID != 2 {
		t.Errorf("configmaps ignored: %+v; want the roll alone", ws)
	}
}
