package reconstruct

import (
	"os"
	"slices"
	"strings"
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

// TestTablesDocumented: every rule, explanation and trigger the tables
// give has its row in docs/CAUSALITY.md (the first column of its
// section's table), and every row names one of them.
func TestTablesDocumented(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../docs/CAUSALITY.md")
	if err != nil {
		t.Fatal(err)
	}
	var rules, explains, triggers []string
	for _, r := range Rules {
		rules = append(rules, r.Name)
	}
	for _, x := range Explainers {
		for _, g := range x.Gives {
			explains = append(explains, string(g))
		}
	}
	explains = append(explains, string(cpid.ExplainUnexplained))
	for _, tr := range Triggers {
		triggers = append(triggers, string(tr))
	}
	for _, c := range []struct {
		section string
		names   []string
	}{{"## The rule table", rules}, {"## Explanations", explains}, {"## Triggers", triggers}} {
		rows := firstColumn(string(b), c.section)
		for _, n := range c.names {
			if !slices.Contains(rows, n) {
				t.Errorf("%s: no row for %q", c.section, n)
			}
		}
		for _, r := range rows {
			if !slices.Contains(c.names, r) {
				t.Errorf("%s: a row for %q, which the tables do not give", c.section, r)
			}
		}
	}
}

// firstColumn returns the backquoted names in the first column of the
// table rows (not headers) of a section of a Markdown page.
func firstColumn(page, section string) []string {
	_, rest, _ := strings.Cut(page, "\n"+section+"\n")
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	var out []string
	lines := strings.Split(rest, "\n")
	for i, line := range lines {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") ||
			i+1 < len(lines) && strings.HasPrefix(lines[i+1], "|---") { // a header
			continue
		}
		for _, f := range strings.Split(cells[1], ",") {
			out = append(out, strings.Trim(strings.TrimSpace(f), "`"))
		}
	}
	return out
}
