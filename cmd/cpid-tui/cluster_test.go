package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/postgres/pgtest"
)

// TestFleetClusters stores two real recordings as two clusters of one
// database, SQLite and PostgreSQL: each cluster's changes and timelines equal those of a database
// holding that recording alone, the listing of every cluster is the union,
// and --cluster selects one.
func TestFleetClusters(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			fleet := filepath.Join(dir, "fleet.db")
			if engine == "postgres" {
				fleet = pgtest.NewDatabase(t)
			}
			testFleet(t, dir, fleet)
		})
	}
}

func testFleet(t *testing.T, dir, fleet string) {
	fixtures := map[string]string{"east": "../../fixtures/basic/bundle", "west": "../../fixtures/figure-5/bundle"}
	must := func(args ...string) string {
		t.Helper()
		code, out, errOut := runCmd(t, nil, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	type change struct {
		ID, Cluster, Resource, Name, Verb string
		Writes, Objects                   int
		StartedNS                         int64 `json:"started_ns"`
		SettledNS                         int64 `json:"settled_ns"`
	}
	changes := func(args ...string) []change {
		t.Helper()
		var cs []change
		if err := json.Unmarshal([]byte(must(append([]string{"query", "changes", "--output", "json"}, args...)...)), &cs); err != nil {
			t.Fatal(err)
		}
		return cs
	}
	for name, bundle := range fixtures {
		must("ingest", "--db", fleet, "--cluster", name, bundle)
	}
	out := must("reconstruct", "--db", fleet)
	if !strings.Contains(out, "cluster east:") || !strings.Contains(out, "cluster west:") {
		t.Errorf("reconstruct did not run each cluster:\n%s", out)
	}
	total := 0
	for name, bundle := range fixtures {
		alone := filepath.Join(dir, name+".db")
		must("ingest", "--db", alone, bundle)
		must("reconstruct", "--db", alone)
		want, got := changes("--db", alone), changes("--db", fleet, "--cluster", name)
		if len(want) == 0 || len(got) != len(want) {
			t.Fatalf("cluster %s: %d changes, alone %d", name, len(got), len(want))
		}
		for i := range want {
			if got[i].Cluster != name || want[i].Cluster != "default" {
				t.Errorf("cluster %s: change %s in cluster %q (alone: %q)", name, got[i].ID, got[i].Cluster, want[i].Cluster)
			}
			got[i].Cluster, want[i].Cluster = "", ""
			if got[i] != want[i] {
				t.Errorf("cluster %s: change %d is %+v, alone %+v", name, i, got[i], want[i])
			}
			tlWant := must("query", "timeline", "--db", alone, want[i].ID)
			tlGot := must("query", "timeline", "--db", fleet, got[i].ID)
			if tlGot != tlWant {
				t.Errorf("cluster %s: timeline of %s differs:\n%s\nalone:\n%s", name, got[i].ID, tlGot, tlWant)
			}
		}
		total += len(want)
	}
	if all := changes("--db", fleet); len(all) != total {
		t.Errorf("every cluster: %d changes, want %d", len(all), total)
	}
	// Incremental runs stay per cluster: nothing new, nothing redone.
	if out := must("reconstruct", "--db", fleet); strings.Count(out, "up to date") != 2 {
		t.Errorf("second run:\n%s", out)
	}
}
