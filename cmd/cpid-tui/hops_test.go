package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestQueryHops: on the real basic fixture every hop is within its window
// and explained; held to 1 ms, the replicaset controller's hops are past
// it and explained otherwise.
func TestQueryHops(t *testing.T) {
	db := filepath.Join(t.TempDir(), "cpid.db")
	for _, args := range [][]string{{"ingest", "--db", db, basicBundle}, {"reconstruct", "--db", db}} {
		if code, out, errOut := runCmd(t, nil, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	hops := func() map[string]hopRow {
		t.Helper()
		code, out, errOut := runCmd(t, nil, "query", "hops", "--db", db, "--output", "json")
		if code != 0 {
			t.Fatalf("query hops: exit %d\n%s", code, errOut)
		}
		var rows []hopRow
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatal(err)
		}
		m := map[string]hopRow{}
		for _, r := range rows {
			m[r.Rule+"/"+r.Writer+"/"+r.Resource] = r
		}
		return m
	}
	m := hops()
	rs, ok := m["owner/replicaset-controller/pods"]
	if !ok || rs.N == 0 || rs.WindowNS <= 0 || rs.Past != 0 || rs.Explain["informer"] != rs.N {
		t.Errorf("owner/replicaset-controller: %+v; want hops, all within the window, all informer", rs)
	}
	if k := m["self/kwok/pods"]; k.Explain["kubelet"] != k.N || k.N == 0 {
		t.Errorf("self/kwok: %+v; want every hop explained as kubelet", k)
	}
	for k, r := range m {
		if r.Explain["unexplained"] > 0 || r.Explain[""] > 0 {
			t.Errorf("%s: %+v: a hop without an explanation", k, r)
		}
	}
	if code, out, errOut := runCmd(t, nil, "reconstruct", "--db", db, "--full", "--window", "owner/replicaset-controller=1ms"); code != 0 {
		t.Fatalf("reconstruct --window: exit %d\n%s%s", code, out, errOut)
	}
	rs = hops()["owner/replicaset-controller/pods"]
	if rs.Explain["informer"] != 0 || rs.Explain["unexplained"]+rs.Explain["apiserver"] != rs.N {
		t.Errorf("held to 1 ms: %+v; want every hop explained by the apiserver or unexplained", rs)
	}
	if code, _, _ := runCmd(t, nil, "reconstruct", "--db", db, "--window", "kwok"); code != 2 {
		t.Errorf("--window kwok: exit %d, want 2", code)
	}
}
