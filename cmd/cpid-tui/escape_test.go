package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileAudit is an audit log whose username, user agent and object name
// hold terminal escape sequences: a window title (OSC), colours and
// clear-screen (CSI), a C1 CSI and a bell.
const hostileAudit = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"6d0e3c1e-7a43-4f4a-9d55-1f0f3b7c1a01","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/configmaps","verb":"create","user":{"username":"\u001b]0;pwned\u0007alice\u001b[31m","groups":["system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"kubectl/v1.35.0 \u001b[2J\u009b31m","objectRef":{"resource":"configmaps","namespace":"default","name":"cm\u001b[2Jx","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"2026-11-22T16:26:40.424506Z","stageTimestamp":"2026-11-22T16:26:40.428187Z"}
`

// TestQueryEscapes: no escape sequence from the logs reaches a terminal
// through a query table; CSV keeps the values with control characters
// escaped; JSON keeps them exactly.
func TestQueryEscapes(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "cpid.db")
	log := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(log, []byte(hostileAudit), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, a := range [][]string{{"ingest", "--db", db, log}, {"reconstruct", "--db", db}} {
		if code, out, errOut := runCmd(t, nil, a...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", a, code, out, errOut)
		}
	}
	query := func(format string) string {
		t.Helper()
		code, out, errOut := runCmd(t, nil, "query", "changes", "--db", db, "--output", format)
		if code != 0 {
			t.Fatalf("query --output %s: exit %d: %s", format, code, errOut)
		}
		return out
	}
	raw := func(s string) bool { return strings.ContainsAny(s, "\x1b\x07\u009b") }

	table := query("table")
	if raw(table) {
		t.Errorf("table holds control characters:\n%q", table)
	}
	if !strings.Contains(table, "alice") || !strings.Contains(table, "ConfigMap default/cmx") {
		t.Errorf("table lost the printable text:\n%s", table)
	}

	csv := query("csv")
	if raw(csv) {
		t.Errorf("CSV holds raw control characters:\n%q", csv)
	}
	if want := `\x1b]0;pwned\x07alice\x1b[31m`; !strings.Contains(csv, want) {
		t.Errorf("CSV lacks the escaped username %s:\n%s", want, csv)
	}

	var rows []struct{ User, Name string }
	if err := json.Unmarshal([]byte(query("json")), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].User != "\x1b]0;pwned\x07alice\x1b[31m" || rows[0].Name != "cm\x1b[2Jx" {
		t.Errorf("JSON rows %q: want the exact values", rows)
	}
}
