package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
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

// everyControl is every code point below U+00A0 in order: C0, the
// printable ASCII between, DEL and C1.
func everyControl() string {
	var b strings.Builder
	for r := rune(0); r < 0xa0; r++ {
		b.WriteRune(r)
	}
	return b.String()
}

// TestOutputEscapes: a username, user agent, object name and body that
// hold every code point below U+00A0 go through every output format of
// query changes, query timeline, history and sql, every export format and
// report: each exits 0 and writes no raw control character (C0 but the
// format's own newline, and tab and newline inside a CSV cell, DEL, C1),
// and json, yaml and the exports decode back to the exact strings.
func TestOutputEscapes(t *testing.T) {
	every := everyControl()
	// The object name lacks the slash alone: history takes TYPE/NAME, a
	// name without '/'.
	user, agent, name := "user"+every, "agent"+every, "cm"+strings.ReplaceAll(every, "/", "")
	event := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
		"auditID": "6d0e3c1e-7a43-4f4a-9d55-1f0f3b7c1a02", "stage": "ResponseComplete",
		"requestURI": "/api/v1/namespaces/default/configmaps", "verb": "create",
		"user":      map[string]any{"username": user, "groups": []string{"system:authenticated"}},
		"sourceIPs": []string{"127.0.0.1"}, "userAgent": agent,
		"objectRef":      map[string]any{"resource": "configmaps", "namespace": "default", "name": name, "apiVersion": "v1"},
		"responseStatus": map[string]any{"metadata": map[string]any{}, "code": 201},
		"requestObject": map[string]any{"kind": "ConfigMap", "apiVersion": "v1",
			"metadata": map[string]any{"name": name, "namespace": "default"}, "data": map[string]string{"k": every}},
		"responseObject": map[string]any{"kind": "ConfigMap", "apiVersion": "v1",
			"metadata": map[string]any{"name": name, "namespace": "default", "uid": "0b3c1e2a-1111-4f4a-9d55-1f0f3b7c1a02", "resourceVersion": "1"},
			"data":     map[string]string{"k": every}},
		"requestReceivedTimestamp": "2026-11-22T16:26:40.424506Z", "stageTimestamp": "2026-11-22T16:26:40.428187Z",
	}
	line, err := json.Marshal(event) // C0 as \u0000..., DEL and C1 raw
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "cpid.db")
	log := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(log, append(line, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, a := range [][]string{{"ingest", "--db", db, log}, {"reconstruct", "--db", db}} {
		if code, out, errOut := runCmd(t, nil, a...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", a, code, out, errOut)
		}
	}
	code, out, errOut := runCmd(t, nil, "query", "changes", "--db", db, "--output", "csv", "--no-headers")
	if code != 0 {
		t.Fatalf("query changes: exit %d: %s", code, errOut)
	}
	id, _, _ := strings.Cut(out, ",")

	// raw reports the first raw control character of out: C0 other than
	// newline (and tab, in CSV), DEL, C1, or a byte that is not UTF-8.
	raw := func(out string, tab bool) string {
		for i, r := range out {
			switch {
			case r == utf8.RuneError:
				return fmt.Sprintf("a byte that is not UTF-8 at %d", i)
			case r == '\n', r == '\t' && tab:
			case r < 0x20, r >= 0x7f && r < 0xa0:
				return fmt.Sprintf("raw %U at %d", r, i)
			}
		}
		return ""
	}
	// holds says whether v (decoded JSON or YAML) has a string holding s,
	// or a string of JSON (a body) that does.
	var holds func(v any, s string) bool
	holds = func(v any, s string) bool {
		switch v := v.(type) {
		case string:
			var body any
			return strings.Contains(v, s) || json.Unmarshal([]byte(v), &body) == nil && holds(body, s)
		case []any:
			return slices.ContainsFunc(v, func(e any) bool { return holds(e, s) })
		case map[string]any:
			for _, e := range v {
				if holds(e, s) {
					return true
				}
			}
		}
		return false
	}
	// decoded checks that the strings want are in the decoded output.
	decoded := func(t *testing.T, v any, want ...string) {
		t.Helper()
		for _, s := range want {
			if !holds(v, s) {
				t.Errorf("the decoded output lacks %q", s)
			}
		}
	}

	sql := "select username, user_agent, name from audit_events"
	cmds := []struct {
		name    string
		args    []string
		formats []string
		want    []string // in json and yaml
	}{
		{"query changes", []string{"query", "changes"}, listFormats, []string{user, name}},
		{"query timeline", []string{"query", "timeline", id}, dataFormats, []string{name}},
		{"history", []string{"history", "configmap", name, "-n", "default", "--diff"}, dataFormats, []string{user, agent}},
		{"sql", []string{"sql", sql}, dataFormats, []string{user, agent, name}},
		{"sql bodies", []string{"sql", "select request_object, response_object from audit_bodies"}, dataFormats, []string{every}},
	}
	for _, c := range cmds {
		for _, f := range c.formats {
			t.Run(c.name+" "+f, func(t *testing.T) {
				args := append(slices.Clone(c.args), "--db", db, "--output", f)
				code, out, errOut := runCmd(t, nil, args...)
				if code != 0 {
					t.Fatalf("%q: exit %d: %s", args, code, errOut)
				}
				if r := raw(out, f == "csv"); r != "" {
					t.Errorf("%q: %s:\n%q", args, r, out)
				}
				var v any
				var err error
				switch f {
				case "json":
					err = json.Unmarshal([]byte(out), &v)
				case "yaml":
					err = yaml.Unmarshal([]byte(out), &v)
				default:
					return
				}
				if err != nil {
					t.Fatalf("%q: %v", args, err)
				}
				decoded(t, v, c.want...)
			})
		}
	}

	for _, f := range []string{"otlp", "jaeger", "perfetto"} {
		t.Run("export "+f, func(t *testing.T) {
			code, out, errOut := runCmd(t, nil, "export", "--all", "--db", db, "--format", f)
			if code != 0 {
				t.Fatalf("export --format %s: exit %d: %s", f, code, errOut)
			}
			if r := raw(out, false); r != "" {
				t.Errorf("export --format %s: %s:\n%q", f, r, out)
			}
			var all []any
			for l := range strings.Lines(out) {
				var v any
				if err := json.Unmarshal([]byte(l), &v); err != nil {
					t.Fatalf("export --format %s: %v", f, err)
				}
				all = append(all, v)
			}
			decoded(t, all, user, name)
		})
	}
	for _, f := range []string{"md", "html"} {
		t.Run("report "+f, func(t *testing.T) {
			code, out, errOut := runCmd(t, nil, "report", id, "--db", db, "--format", f)
			if code != 0 {
				t.Fatalf("report --format %s: exit %d: %s", f, code, errOut)
			}
			if r := raw(out, false); r != "" {
				t.Errorf("report --format %s: %s:\n%q", f, r, out)
			}
		})
	}
}
