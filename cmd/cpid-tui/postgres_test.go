package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/cpid-dev/cpid/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestPostgresCLI: ingest, reconstruct and the queries with --db
// postgres://… give what they give on a SQLite file, on every real fixture.
func TestPostgresCLI(t *testing.T) {
	for _, fx := range []string{"basic", "instrumented", "figure-5", "paper-5-1-1", "paper-5-1-1-stock", "paper-5-1-2", "rollout-interrupted",
		"node-loss", "kcm-restart", "leader-change", "leader-change-metadata", "conflicts", "cronjob", "metadata-policy", "traced", "waits"} {
		t.Run(fx, func(t *testing.T) {
			bundle := filepath.Join("..", "..", "fixtures", fx, "bundle")
			lite := filepath.Join(t.TempDir(), "cpid.db")
			pg := pgtest.NewDatabase(t)
			must := func(args ...string) string {
				t.Helper()
				code, out, errOut := runCmd(t, nil, args...)
				if code != 0 {
					t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
				}
				return out
			}
			for _, db := range []string{lite, pg} {
				must("ingest", "--db", db, bundle)
				must("reconstruct", "--db", db)
			}
			for _, q := range [][]string{
				{"query", "changes", "--output", "json"},
				{"query", "changes", "--sort", "duration"},
				{"query", "sli", "--output", "json"},
				{"query", "anomalies", "--output", "json"},
				{"query", "hops", "--output", "json"},
				// Every body, as each engine's view decodes it from its blocks.
				{"sql", "--output", "csv", "select event_id, request_object, response_object, response_status from audit_bodies order by event_id"},
			} {
				want := must(append(q, "--db", lite)...)
				if got := must(append(q, "--db", pg)...); got != want {
					t.Errorf("%v differs:\npostgres:\n%s\nsqlite:\n%s", q, got, want)
				}
			}
			var ids []struct{ ID, Resource, APIGroup, Namespace, Name string }
			if err := jsonUnmarshal(must("query", "changes", "--output", "json", "--db", lite), &ids); err != nil {
				t.Fatal(err)
			}
			for i, c := range ids {
				typ := c.Resource
				if c.APIGroup != "" {
					typ += "." + c.APIGroup
				}
				qs := [][]string{{"query", "timeline", c.ID, "--output", "json"}, {"query", "spans", c.ID},
					{"history", typ + "/" + c.Name, "-n", c.Namespace, "--diff", "--output", "json"},
					{"diff", c.ID, ids[(i+1)%len(ids)].ID, "--output", "json"}}
				for _, q := range qs {
					want := must(append(q, "--db", lite)...)
					if got := must(append(q, "--db", pg)...); got != want {
						t.Errorf("%v differs:\npostgres:\n%s\nsqlite:\n%s", q, got, want)
					}
				}
			}
		})
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
