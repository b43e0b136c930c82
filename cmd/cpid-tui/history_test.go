package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// rawWrite is a write as the audit log has it, read with encoding/json
// alone: nothing of cpid's decoders.
type rawWrite struct {
	AuditID   string
	Stage     string
	Verb      string
	User      struct{ Username string }
	UserAgent string
	ObjectRef struct {
		Resource, Namespace, Name, APIGroup, Subresource string
	}
	ResponseStatus struct{ Code int }
	StageTimestamp time.Time
	ResponseObject struct {
		Metadata struct{ Name string }
	}
}

// rawWrites returns every write of a fixture's audit log (the last stage
// of a create, update, patch or delete), in the order of the log.
func rawWrites(t *testing.T, fixture string) []rawWrite {
	t.Helper()
	var out []rawWrite
	seen := map[string]bool{}
	for _, l := range auditLines(t, filepath.Join("../../fixtures", fixture, "bundle")) {
		var w rawWrite
		if json.Unmarshal([]byte(l), &w) != nil {
			continue
		}
		if w.Stage != "ResponseComplete" && w.Stage != "Panic" || !slices.Contains([]string{"create", "update", "patch", "delete"}, w.Verb) {
			continue
		}
		if w.ObjectRef.Name == "" {
			w.ObjectRef.Name = w.ResponseObject.Metadata.Name // generateName
		}
		if seen[w.AuditID] {
			continue
		}
		seen[w.AuditID] = true
		out = append(out, w)
	}
	return out
}

// of keeps the writes of one object.
func of(ws []rawWrite, group, resource, ns, name string) []rawWrite {
	var out []rawWrite
	for _, w := range ws {
		r := w.ObjectRef
		if r.APIGroup == group && r.Resource == resource && r.Namespace == ns && r.Name == name {
			out = append(out, w)
		}
	}
	return out
}

// historyJSON is what history --output json prints, as a script reads it.
type historyJSON struct {
	Object struct {
		APIGroup, Resource, Namespace, Name, Kind string
	}
	More   bool `json:"earlier_left_out"`
	Writes []struct {
		NS          int64
		Verb        string
		Subresource string
		Code        int
		User        string
		Writer      string
		Change      string
		Rule        string
		Cause       *struct{ EventID int64 } `json:"cause"`
		AfterNS     int64                    `json:"after_ns"`
		Diff        []string
	}
}

// sameWrites compares the writes history listed with the audit log's:
// the same verbs, codes and times, in the same order.
func sameWrites(t *testing.T, what string, got historyJSON, want []rawWrite) {
	t.Helper()
	var g, w []string
	for _, x := range got.Writes {
		g = append(g, fmt.Sprintf("%d %s%s %d", x.NS, x.Verb, sub(x.Subresource), x.Code))
	}
	for _, x := range want {
		w = append(w, fmt.Sprintf("%d %s%s %d", x.StageTimestamp.UnixNano(), x.Verb, sub(x.ObjectRef.Subresource), x.ResponseStatus.Code))
	}
	sort.Strings(w) // history lists writes in the order they completed
	if len(want) == 0 {
		t.Fatalf("%s: the audit log has no write of it: a bad test", what)
	}
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("%s: history lists %d writes, the audit log has %d:\nhistory:\n%s\naudit log:\n%s", what, len(g), len(w),
			strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

func historyOf(t *testing.T, db string, args ...string) historyJSON {
	t.Helper()
	code, out, errOut := runCmd(t, nil, append([]string{"history", "--db", db, "--output", "json", "--limit", "0"}, args...)...)
	if code != 0 {
		t.Fatalf("history %v: exit %d\n%s", args, code, errOut)
	}
	var h historyJSON
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("history %v: %v\n%s", args, err, out)
	}
	return h
}

// TestHistoryMatchesAuditLog: on the real basic fixture, the history of a
// Deployment, its first ReplicaSet, its first Pod and the Node lists
// exactly the writes the audit log has of each, counted here from the
// audit files; every write but the user's has a change, and the filters
// keep what they say.
func TestHistoryMatchesAuditLog(t *testing.T) {
	db := reconstructed(t)
	all := rawWrites(t, "basic")
	var rs, pod string
	for _, w := range all {
		if w.Verb == "create" && w.ObjectRef.Resource == "replicasets" && rs == "" {
			rs = w.ObjectRef.Name
		}
		if w.Verb == "create" && w.ObjectRef.Resource == "pods" && w.ObjectRef.Subresource == "" && pod == "" {
			pod = w.ObjectRef.Name
		}
	}
	for _, tc := range []struct {
		args                      []string
		group, resource, ns, name string
	}{
		{[]string{"deploy/web"}, "apps", "deployments", "default", "web"},
		{[]string{"deployments.apps/web", "-n", "default"}, "apps", "deployments", "default", "web"},
		{[]string{"rs/" + rs}, "apps", "replicasets", "default", rs},
		{[]string{"pod", pod}, "", "pods", "default", pod},
		{[]string{"node/kwok-node-0"}, "", "nodes", "", "kwok-node-0"},
		{[]string{"endpoints/web"}, "", "endpoints", "default", "web"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			h := historyOf(t, db, tc.args...)
			sameWrites(t, strings.Join(tc.args, " "), h, of(all, tc.group, tc.resource, tc.ns, tc.name))
			if h.Object.Namespace != tc.ns || h.Object.Name != tc.name || h.Object.Resource != tc.resource {
				t.Errorf("object %+v", h.Object)
			}
			for i, w := range h.Writes {
				if w.Change == "" && w.Code < 400 {
					t.Errorf("write %d (%s by %s) has no change", i, w.Verb, w.Writer)
				}
				if i > 0 && w.AfterNS != w.NS-h.Writes[i-1].NS {
					t.Errorf("write %d: after_ns %d, want %d", i, w.AfterNS, w.NS-h.Writes[i-1].NS)
				}
			}
		})
	}

	// Filters: a window of time (between the scale-up and the scale-down),
	// a user.
	deploy := of(all, "apps", "deployments", "default", "web")
	tr := readTruth(t, "../../fixtures/basic")
	var from, to int64
	for i, a := range tr.Actions {
		if a.Request.Verb == "patch" && from == 0 && i+1 < len(tr.Actions) {
			from, to = a.StartNS, tr.Actions[i+1].StartNS
		}
	}
	var window, admin []rawWrite
	for _, w := range deploy {
		if ns := w.StageTimestamp.UnixNano(); ns >= from && ns < to {
			window = append(window, w)
		}
		if w.User.Username == "kubernetes-admin" {
			admin = append(admin, w)
		}
	}
	rfc := func(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }
	sameWrites(t, "--since --until", historyOf(t, db, "deploy/web", "--since", rfc(from), "--until", rfc(to)), window)
	sameWrites(t, "--user", historyOf(t, db, "deploy/web", "--user", "KUBERNETES-ADMIN"), admin)
	if h := historyOf(t, db, "deploy/web", "--limit", "0", "--since", "0s"); len(h.Writes) != 0 {
		t.Errorf("--since 0s (the newest event on): %d writes of the Deployment", len(h.Writes))
	}
	code, out, _ := runCmd(t, nil, "history", "--db", db, "--output", "json", "--limit", "3", "deploy/web")
	var h historyJSON
	if code != 0 || json.Unmarshal([]byte(out), &h) != nil || len(h.Writes) != 3 || !h.More {
		t.Errorf("--limit 3: exit %d, %d writes, earlier left out %v", code, len(h.Writes), h.More)
	}
}

// TestHistoryReferences: how a reference that names several objects, or
// none, fails; -n picks one; a cluster-scoped resource ignores -n.
func TestHistoryReferences(t *testing.T) {
	db := reconstructed(t)
	// Every namespace holds a ServiceAccount "default" (the audit log says
	// which): the reference is ambiguous without -n.
	var nss []string
	for _, w := range rawWrites(t, "basic") {
		if w.ObjectRef.Resource == "serviceaccounts" && w.ObjectRef.Name == "default" && !slices.Contains(nss, w.ObjectRef.Namespace) {
			nss = append(nss, w.ObjectRef.Namespace)
		}
	}
	if len(nss) < 2 {
		t.Fatalf("ServiceAccounts named default in %v: a bad test", nss)
	}
	code, out, errOut := runCmd(t, nil, "history", "--db", db, "sa/default")
	if code != 1 || out != "" || !strings.Contains(errOut, fmt.Sprintf("names %d objects", len(nss))) || !strings.Contains(errOut, "--namespace") {
		t.Errorf("sa/default: exit %d, stdout %q, stderr %q; want 1 and the %d objects", code, out, errOut, len(nss))
	}
	for _, ns := range nss {
		if !strings.Contains(errOut, "ServiceAccount "+ns+"/default ") {
			t.Errorf("sa/default: the candidates leave out namespace %s:\n%s", ns, errOut)
		}
	}
	if h := historyOf(t, db, "sa/default", "-n", nss[0]); len(h.Writes) == 0 || h.Object.Namespace != nss[0] {
		t.Errorf("sa/default -n %s: %+v", nss[0], h)
	}

	code, out, errOut = runCmd(t, nil, "history", "--db", db, "node/kwok-node-0", "-n", "default")
	if code != 0 || !strings.Contains(errOut, "cluster-scoped") || !strings.Contains(out, "Node kwok-node-0: ") {
		t.Errorf("node with -n: exit %d\n%s%s", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"deploy/nope"}, 1, "no writes of Deployment.apps/nope"},
		{[]string{"deploy/web", "-n", "kube-system"}, 1, "no writes of Deployment.apps/web in namespace kube-system; there are of Deployment.apps default/web"},
		{[]string{"lease/kube-controller-manager"}, 1, "leaves the writes of leases out"},
		{[]string{"web"}, 2, "want TYPE/NAME"},
		{[]string{"deploy/web", "--since", "yesterday"}, 2, "--since \"yesterday\""},
		{[]string{"deploy/web", "--trigger", "cosmic-ray"}, 2, "--trigger \"cosmic-ray\""},
		{[]string{"deploy/web", "--output", "name"}, 2, `-o "name": want one of table, wide, json, yaml, csv`},
	} {
		code, _, errOut := runCmd(t, nil, append([]string{"history", "--db", db}, tc.args...)...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("history %v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

// TestGoldenHistory compares history's table, with and without diffs, on
// the basic fixture with testdata/basic.history.golden (go test -update
// rewrites it).
func TestGoldenHistory(t *testing.T) {
	db := reconstructed(t)
	var pod string
	for _, w := range rawWrites(t, "basic") {
		if w.Verb == "create" && w.ObjectRef.Resource == "pods" && pod == "" {
			pod = w.ObjectRef.Name
		}
	}
	var b strings.Builder
	for _, args := range [][]string{
		{"deploy/web"},
		{"deploy/web", "--diff", "--since", "2026-11-22T16:26:54Z", "--until", "2026-11-22T16:26:56Z"},
		{"pod/" + pod, "--diff"},
		{"node/kwok-node-0", "--output", "csv"},
	} {
		code, out, errOut := runCmd(t, nil, append([]string{"history", "--db", db}, args...)...)
		if code != 0 {
			t.Fatalf("history %v: exit %d\n%s", args, code, errOut)
		}
		b.WriteString("$ cpid-tui history " + strings.Join(args, " ") + "\n" + out + "\n")
	}
	golden(t, filepath.Join("testdata", "basic.history.golden"), b.String())
}

// golden compares got with the golden file, which go test -update
// rewrites.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got == string(want) {
		return
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(got, "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			t.Errorf("output differs from %s (go test -update rewrites it after a deliberate change); first at line %d:\n want: %s\n got:  %s",
				path, i+1, w, g)
			return
		}
	}
}
