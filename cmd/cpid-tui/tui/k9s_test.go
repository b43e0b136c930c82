package tui

import (
	"strings"
	"testing"
)

// TestResourceCommands: as in k9s, a command may start with a resource,
// by any of kubectl's names: :deploy web, :deployments/web, :no NAME open
// the object's history; a resource without a name says what it wants.
func TestResourceCommands(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	for _, c := range []struct {
		line, resource, name string
	}{
		{"deploy web", "deployments", "web"},
		{"deployments/web -n default", "deployments", "web"},
		{"Deployment.apps web", "deployments", "web"},
		{"no kwok-node-0", "nodes", "kwok-node-0"},
		{"nodes/kwok-node-0", "nodes", "kwok-node-0"},
		{"svc web", "services", "web"},
		{"po " + strings.TrimPrefix(podOf(t, m), "pod/"), "pods", strings.TrimPrefix(podOf(t, m), "pod/")},
	} {
		runCommand(t, m, c.line)
		h, ok := m.top().(*historyScreen)
		if !ok || !h.loaded || h.err != nil || h.ref.Resource != c.resource || h.ref.Name != c.name || len(h.rows) == 0 {
			t.Errorf(":%s opened %q, want the history of %s/%s:\n%s", c.line, m.top().crumb(), c.resource, c.name, plain(m))
		}
		runCommand(t, m, "changes")
	}
	for line, want := range map[string]string{
		"pods":        ":pods wants a name: :pods NAME",
		"deploy":      ":deploy wants a name",
		"deploy/":     ":deploy wants a name",
		"widgets web": "no writes of widgets/web",
		"frobnicate":  `unknown command "frobnicate"`,
	} {
		runCommand(t, m, line)
		if s := plain(m); !strings.Contains(s, want) || len(m.stack) != 1 {
			t.Errorf(":%s: want %q in the status line, the list unchanged:\n%s", line, want, s)
		}
	}
}

// TestComingFromK9s: the help says which keys differ from k9s's.
func TestComingFromK9s(t *testing.T) {
	m := newTest(t, 200, 50, Options{})
	press(t, m, "?")
	help := plain(m)
	for _, want := range []string{"Coming from k9s", "d is diff here (describe in k9s)", "l expands", "(logs in k9s", ":pods NAME"} {
		if !strings.Contains(help, want) {
			t.Errorf("the help does not say %q:\n%s", want, help)
		}
	}
}
