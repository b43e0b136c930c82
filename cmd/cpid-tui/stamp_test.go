package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/instrument"
	"sigs.k8s.io/yaml"
)

// runStampCmd runs cpid-tui with args and stdin, and returns the exit code,
// standard output and standard error.
func runStampCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb}, args)
	return code, out.String(), errb.String()
}

const stampYAML = `# an app
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  annotations:
    v1.cpid.dev/cpid: 3f0f8a4e-3f60-4b7e-9f0e-3d0b8a8e1a11
    v1.cpid.dev/ancestors: 5b1c1f5e-0b7e-4d7a-9c55-6a1d1f3d9e22
spec:
  replicas: 3
  template:
    spec:
      terminationGracePeriodSeconds: 9007199254740993
---
# nothing here
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  ports:
  - port: 80
`

func TestStampYAML(t *testing.T) {
	log := filepath.Join(t.TempDir(), "cpid.log")
	code, stdout, stderr := runStampCmd(t, stampYAML, "stamp", "-f", "-", "--log", log, "--service", "ops")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}

	// Standard error: one CPID per object.
	var cpids []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		cpid, what, _ := strings.Cut(l, "\t")
		if _, err := instrument.ParseID(cpid); err != nil {
			t.Errorf("stderr line %q: %v", l, err)
		}
		cpids = append(cpids, cpid)
		if what != "Deployment shop/web" && what != "Service shop/web" {
			t.Errorf("stderr line %q", l)
		}
	}
	if len(cpids) != 2 || cpids[0] == cpids[1] {
		t.Fatalf("CPIDs %q, want two distinct", cpids)
	}

	// Standard output: the manifests, stamped, nothing else changed.
	docs := strings.Split(stdout, "---\n")
	if len(docs) != 2 {
		t.Fatalf("%d documents out:\n%s", len(docs), stdout)
	}
	for i, d := range docs {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(d), &obj); err != nil {
			t.Fatal(err)
		}
		ann := obj["metadata"].(map[string]any)["annotations"].(map[string]any)
		if ann[instrument.KeyCPID] != cpids[i] || ann[instrument.KeyAncestors] != nil || len(ann) != 1 {
			t.Errorf("document %d annotations %v, want the CPID %s alone", i+1, ann, cpids[i])
		}
	}
	if !strings.Contains(stdout, "9007199254740993") || !strings.Contains(stdout, "replicas: 3") {
		t.Errorf("content changed:\n%s", stdout)
	}

	// The log: one root mergelog per object.
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("log:\n%s", b)
	}
	for i, l := range lines {
		var rec struct {
			Msg     string   `json:"msg"`
			Format  int      `json:"cpid.format"`
			CPID    string   `json:"cpid"`
			Sources []string `json:"sources"`
			Service string   `json:"service"`
			Object  struct{ Kind, Namespace, Name string }
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Msg != "cpid.mergelog" || rec.Format != 1 || rec.CPID != cpids[i] || rec.Sources == nil || len(rec.Sources) != 0 ||
			rec.Service != "ops" || rec.Object.Namespace != "shop" || rec.Object.Name != "web" {
			t.Errorf("mergelog %s", l)
		}
	}

	// A second run appends.
	if code, _, stderr := runStampCmd(t, stampYAML, "stamp", "-f", "-", "--log", log); code != 0 {
		t.Fatal(stderr)
	}
	if b, _ := os.ReadFile(log); bytes.Count(b, []byte("\n")) != 4 {
		t.Errorf("log after two runs:\n%s", b)
	}
}

func TestStampJSONAndLists(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "list.json")
	list := `{"apiVersion":"v1","kind":"List","items":[
  {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}},
  {"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"b-","annotations":{"keep":"me"}}}]}
{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"x":"eA=="}}`
	if err := os.WriteFile(file, []byte(list), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runStampCmd(t, "", "stamp", "-f", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(stderr, "\n"); n != 3 || !strings.Contains(stderr, "\tConfigMap b-*\n") {
		t.Errorf("stderr:\n%s", stderr)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	var n int
	for dec.More() {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			t.Fatalf("stdout is not a JSON stream: %v\n%s", err, stdout)
		}
		n++
	}
	if n != 2 || strings.Count(stdout, instrument.KeyCPID) != 3 || !strings.Contains(stdout, `"keep": "me"`) {
		t.Errorf("stdout:\n%s", stdout)
	}
}

func TestStampBadDocuments(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string // in stderr
	}{
		{name: "YAML syntax", input: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\n  metadata: x\n",
			want: []string{"document 2 (line 5)", "line 7"}},
		{name: "no kind", input: "apiVersion: v1\nmetadata: {name: a}\n", want: []string{"document 1 (line 1): no kind"}},
		{name: "no name", input: "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", want: []string{"document 1 (line 2): no metadata.name"}},
		{name: "not an object", input: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n- a\n- b\n",
			want: []string{"document 2 (line 5): a list, not an object"}},
		{name: "several", input: "kind: A\n---\nkind: B\n", want: []string{"document 1 (line 1)", "document 2 (line 3)", "2 bad document(s)"}},
		{name: "bad list item", input: `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap"}]}`,
			want: []string{"document 1 (line 1): items[0]: no metadata"}},
		{name: "JSON syntax", input: "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"}}\n\n{\"kind\":",
			want: []string{"document 2 (line 3)"}},
		{name: "annotations not a map", input: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, annotations: [x]}\n",
			want: []string{"metadata.annotations is not a map"}},
		{name: "empty", input: "# nothing\n", want: []string{"no object to stamp"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "cpid.log")
			code, stdout, stderr := runStampCmd(t, tt.input, "stamp", "-f", "-", "--log", log)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if stdout != "" {
				t.Errorf("stdout written:\n%s", stdout)
			}
			if _, err := os.Stat(log); err == nil {
				t.Error("log written")
			}
		})
	}
}

func TestStampUsage(t *testing.T) {
	for _, args := range [][]string{{"stamp"}, {"stamp", "-f", "-", "extra"}, {"stamp", "--nope"}} {
		if code, _, _ := runStampCmd(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	if code, _, stderr := runStampCmd(t, "", "stamp", "-f", filepath.Join(t.TempDir(), "missing.yaml")); code != 1 || !strings.Contains(stderr, "no such file") {
		t.Errorf("missing file: exit %d, %s", code, stderr)
	}
}

// TestStampMerge: --merge keeps the object's previous context as an
// ancestor of the new CPID (capped at --max-ancestors), with a root and a
// merge mergelog; without it the previous context is dropped.
func TestStampMerge(t *testing.T) {
	const prev, older = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
	in := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","annotations":{` +
		`"v1.cpid.dev/cpid":"` + prev + `","v1.cpid.dev/ancestors":"` + older + `"}}}`
	for _, c := range []struct {
		name      string
		args      []string
		ancestors int  // on the object
		hasPrev   bool // prev among them
		mergelogs int
	}{
		{"fresh root", nil, 0, false, 1},
		{"merge", []string{"--merge"}, 3, true, 2},
		{"merge capped", []string{"--merge", "--max-ancestors", "2"}, 2, true, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "cpid.log")
			code, out, errOut := runCmd(t, strings.NewReader(in), append([]string{"stamp", "-f", "-", "--log", logPath}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var obj struct {
				Metadata struct{ Annotations map[string]string }
			}
			if err := json.Unmarshal([]byte(out), &obj); err != nil {
				t.Fatal(err)
			}
			anc := obj.Metadata.Annotations["v1.cpid.dev/ancestors"]
			n := 0
			if anc != "" {
				n = len(strings.Split(anc, ","))
			}
			if n != c.ancestors || strings.Contains(anc, prev) != c.hasPrev {
				t.Errorf("ancestors %q: want %d with previous=%v", anc, c.ancestors, c.hasPrev)
			}
			b, _ := os.ReadFile(logPath)
			if got := strings.Count(string(b), `"msg":"cpid.mergelog"`); got != c.mergelogs {
				t.Errorf("%d mergelogs, want %d:\n%s", got, c.mergelogs, b)
			}
		})
	}
}

// TestStampTraceparent: a traced client's W3C trace context goes into
// tracing.k8s.io/traceparent of every object, from --traceparent or the
// TRACEPARENT environment variable, and a stale one goes; a malformed one
// is a usage error that writes nothing.
func TestStampTraceparent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	in := `{"apiVersion":"v1","kind":"List","items":[` +
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","annotations":{"tracing.k8s.io/traceparent":"` + other + `"}}},` +
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}]}`
	annotations := func(out string) []map[string]string {
		var list struct {
			Items []struct {
				Metadata struct{ Annotations map[string]string }
			}
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var anns []map[string]string
		for _, it := range list.Items {
			anns = append(anns, it.Metadata.Annotations)
		}
		return anns
	}
	for _, c := range []struct {
		name, env string
		args      []string
		want      []string // traceparent of each object
	}{
		{"none: a stale one is removed", "", nil, []string{"", ""}},
		{"flag", "", []string{"--traceparent", tp}, []string{tp, tp}},
		{"environment", tp, nil, []string{tp, tp}},
		{"flag over environment", other, []string{"--traceparent", tp}, []string{tp, tp}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("TRACEPARENT", c.env)
			code, out, errOut := runStampCmd(t, in, append([]string{"stamp", "-f", "-"}, c.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for i, ann := range annotations(out) {
				if ann[instrument.KeyTraceparent] != c.want[i] || ann[instrument.KeyCPID] == "" {
					t.Errorf("object %d: annotations %v, want traceparent %q and a CPID", i, ann, c.want[i])
				}
			}
		})
	}
	t.Setenv("TRACEPARENT", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01")
	code, out, errOut := runStampCmd(t, in, "stamp", "-f", "-")
	if code != 2 || out != "" || !strings.Contains(errOut, "TRACEPARENT") || !strings.Contains(errOut, "trace-id") {
		t.Fatalf("malformed TRACEPARENT: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
}
