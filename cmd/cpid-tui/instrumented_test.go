package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// event builds one RequestResponse audit event line whose response object
// carries the given CPID annotations.
func event(n int, verb, group, resource, name, user, ua, cpid, ancestors string, owner map[string]any) string {
	ann := map[string]any{}
	if cpid != "" {
		ann["v1.cpid.dev/cpid"] = cpid
	}
	if ancestors != "" {
		ann["v1.cpid.dev/ancestors"] = ancestors
	}
	meta := map[string]any{"name": name, "namespace": "default", "uid": fmt.Sprintf("00000000-0000-0000-0000-%012d", n),
		"resourceVersion": fmt.Sprint(100 + n), "annotations": ann}
	if owner != nil {
		meta["ownerReferences"] = []any{owner}
	}
	apiVersion := "v1"
	if group != "" {
		apiVersion = group + "/v1"
	}
	obj := map[string]any{"kind": "Thing", "apiVersion": apiVersion, "metadata": meta}
	ev := map[string]any{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
		"auditID": fmt.Sprintf("aaaaaaaa-0000-0000-0000-%012d", n), "stage": "ResponseComplete",
		"requestURI": "/x", "verb": verb, "user": map[string]any{"username": user}, "userAgent": ua,
		"objectRef":      map[string]any{"resource": resource, "namespace": "default", "name": name, "apiGroup": group, "apiVersion": "v1"},
		"responseStatus": map[string]any{"metadata": map[string]any{}, "code": 201},
		"requestObject":  obj, "responseObject": obj,
		"requestReceivedTimestamp": fmt.Sprintf("2026-11-22T16:00:%02d.000000Z", n),
		"stageTimestamp":           fmt.Sprintf("2026-11-22T16:00:%02d.050000Z", n)}
	b, _ := json.Marshal(ev)
	return string(b)
}

// TestInstrumentedOrigins reconstructs a small instrumented history: CPIDs
// stamped by users, reused by a controller, merged by another that also
// wrote its mergelog and a span to its JSON log. Mergelogs of all three
// origins must appear, and the merged CPID must be related to both roots.
func TestInstrumentedOrigins(t *testing.T) {
	const (
		r = "11111111-1111-4111-8111-111111111111" // user's deployment change
		s = "22222222-2222-4222-8222-222222222222" // user's service change
		m = "33333333-3333-4333-8333-333333333333" // the endpointslice controller's merge
	)
	kubectl, kcm := "kubectl/v1.37.2 (linux/amd64)", "kube-controller-manager/v1.37.2"
	audit := strings.Join([]string{
		event(1, "create", "apps", "deployments", "web", "alice", kubectl, r, "", nil),
		event(2, "create", "apps", "replicasets", "web-1", "system:serviceaccount:kube-system:deployment-controller", kcm, r, "",
			map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "00000000-0000-0000-0000-000000000001"}),
		event(3, "create", "", "services", "web", "alice", kubectl, s, "", nil),
		event(4, "create", "discovery.k8s.io", "endpointslices", "web-x", "system:serviceaccount:kube-system:endpointslice-controller", kcm,
			m, s+","+r, map[string]any{"apiVersion": "v1", "kind": "Service", "name": "web", "uid": "00000000-0000-0000-0000-000000000003"}),
	}, "\n") + "\n"
	logs := fmt.Sprintf(`{"time":"2026-11-22T16:00:04.010000000Z","level":"INFO","msg":"cpid.mergelog","cpid.format":1,"cpid":%q,"sources":[%q,%q],"service":"endpointslice-controller","object":{"kind":"EndpointSlice","namespace":"default","name":"web-x"}}
{"time":"2026-11-22T16:00:04.040000000Z","level":"INFO","msg":"cpid.span","cpid.format":1,"cpid":%q,"span_id":"44444444-4444-4444-8444-444444444444","parent_id":"","service":"endpointslice-controller","name":"syncService","start":"2026-11-22T16:00:03.990000000Z","end":"2026-11-22T16:00:04.040000000Z"}
{"time":"2026-11-22T16:00:04.050000000Z","level":"INFO","msg":"cpid.mergelog","cpid.format":7,"cpid":"x"}
`, m, r, s, m)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "audit.log"), []byte(audit), 0o644)
	os.WriteFile(filepath.Join(dir, "controller.log"), []byte(logs), 0o644)
	dbPath := filepath.Join(dir, "cpid.db")
	if code, out, e := runCmd(t, nil, "ingest", "--db", dbPath, dir); code != 0 {
		t.Fatalf("ingest: %d %s%s", code, out, e)
	}
	code, out, e := runCmd(t, nil, "reconstruct", "--db", dbPath)
	if code != 0 {
		t.Fatalf("reconstruct: %d %s%s", code, out, e)
	}
	if !strings.Contains(out, "1 mergelog or span records could not be read") {
		t.Errorf("the unsupported record is not reported:\n%s", out)
	}
	db := openDB(t, dbPath)
	got := map[string]string{}
	rows, err := db.Query(`SELECT m.cpid || ' ' || m.origin, COALESCE(group_concat(s.source_cpid, ','), '') FROM mergelogs m
		LEFT JOIN mergelog_sources s ON s.mergelog_id = m.id GROUP BY m.id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k, v string
		rows.Scan(&k, &v)
		got[k] = v
	}
	rows.Close()
	for k, v := range map[string]string{m + " log": r + "," + s, m + " annotation": s + "," + r} {
		if got[k] != v {
			t.Errorf("mergelog %s: sources %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	var cpid, origin, change string
	db.QueryRow(`SELECT cpid, cpid_origin, change_id FROM revisions WHERE resource = 'replicasets'`).Scan(&cpid, &origin, &change)
	if cpid != r || origin != "annotation" || change != r {
		t.Errorf("replicaset write: cpid %s (%s), change %s; want %s (annotation), change %s", cpid, origin, change, r, r)
	}
	db.QueryRow(`SELECT cpid, cpid_origin, change_id FROM revisions WHERE resource = 'endpointslices'`).Scan(&cpid, &origin, &change)
	if cpid != m || origin != "annotation" || change != s {
		t.Errorf("endpointslice write: cpid %s (%s), change %s; want %s (annotation), change %s", cpid, origin, change, m, s)
	}
	for _, root := range []string{r, s} {
		_, out, _ := runCmd(t, nil, "query", "related", root, "--db", dbPath)
		if !strings.Contains(out, m) {
			t.Errorf("related %s lacks the merged CPID:\n%s", root, out)
		}
	}
	_, out, _ = runCmd(t, nil, "query", "spans", s, "--db", dbPath)
	if !strings.Contains(out, "syncService") || !strings.Contains(out, "apiserver") {
		t.Errorf("spans of the service change lack the controller span or apiserver spans:\n%s", out)
	}
}
