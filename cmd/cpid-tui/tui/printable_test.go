package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileLog is an audit log whose every string the views show holds
// escape sequences: window title (OSC), colours and clear screen (CSI), a
// C1 CSI, in the username, the user agent, the object's name and the body
// the revisions view shows.
const hostileLog = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"6d0e3c1e-7a43-4f4a-9d55-1f0f3b7c1a01","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/configmaps","verb":"create","user":{"username":"\u001b]0;pwned\u0007alice\u001b[31m","groups":["system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"kubectl\u001b[32m/v1.35.0 \u001b[2J\u009b31m","objectRef":{"resource":"configmaps","namespace":"default","name":"cm\u001b[2Jx","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"responseObject":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm\u001b[2Jx","namespace":"default","resourceVersion":"7","annotations":{"note":"\u001b[35mmagenta\u001b]0;pwned\u0007"}},"data":{"k":"\u001b[36mcyan"}},"requestReceivedTimestamp":"2026-11-22T16:26:40.424506Z","stageTimestamp":"2026-11-22T16:26:40.428187Z"}
`

// TestHostileStrings: with colours off, no screen of a change whose
// strings hold escape sequences has any colour, title or clear-screen
// sequence: none came through from the data.
func TestHostileStrings(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(log, []byte(hostileLog), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "cpid.db")
	if err := fill(path, log); err != nil {
		t.Fatal(err)
	}
	m := newTestAt(t, path, 120, 30, Options{})
	bad := []string{"\x1b]", "\x07", "\x1b[2J", "\u009b", "\x1b[31m", "\x1b[32m", "\x1b[35m", "\x1b[36m", "\x1b[3", "\x1b[9", ";38;"}
	check := func(screen string) {
		t.Helper()
		raw := m.Render()
		for _, b := range bad {
			if strings.Contains(raw, b) {
				t.Errorf("%s screen holds %q:\n%q", screen, b, raw)
			}
		}
	}
	check("changes")
	if !strings.Contains(m.Render(), "alice") {
		t.Fatalf("the change is not listed:\n%s", m.Render())
	}
	openChange(t, m, 0)
	for _, k := range []string{"1", "2", "3", "4"} {
		press(t, m, k)
		check("change view " + k)
	}
}
