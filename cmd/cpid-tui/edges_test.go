package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// instrumentedFixtures are the recordings whose Deployment and ReplicaSet
// controllers were instrumented (and in operator-instrumented the example
// controller-runtime operator): their writes carry the CPID the paper's
// Algorithm 1 gave them, and their logs the mergelogs, which say which
// writes caused which.
var instrumentedFixtures = []string{"instrumented", "paper-5-1-1", "paper-5-1-2", "traced", "operator-instrumented"}

// instrumentedWriters are the controllers the instrumented recordings ran
// through cpid's instrument library (fixtures/recorder/controllers, and
// examples/webapp-operator through instrument/controllerruntime).
var instrumentedWriters = []string{"deployment-controller", "replicaset-controller", "webapp-operator"}

// edgeTruth is, per write of an instrumented controller (event ID), the
// CPIDs the write it reacted to may carry: the write's own CPID (the
// controller carried on the context of what it read: the object as its
// cache held it, its owners) and the sources of that CPID's mergelog (it
// merged them). CPIDs are those the objects carry in the audit log, not
// what reconstruct made of them. Left out: deletes (the instrument library
// stamps creates, updates and patches; the object a delete leaves in the
// audit log carries the CPID of its last update) and status writes (the
// library keeps the object's context on them, by design: their CPID names
// the object's lineage, not the dependent whose change they count).
func edgeTruth(t *testing.T, db *sql.DB) map[int64]map[string]bool {
	t.Helper()
	rows, err := db.Query(`SELECT r.event_id, e.cpid, COALESCE(s.source_cpid, '')
		FROM revisions r JOIN audit_events e ON e.id = r.event_id
		LEFT JOIN mergelogs m ON m.cpid = e.cpid AND m.origin IN ('log', 'annotation')
		LEFT JOIN mergelog_sources s ON s.mergelog_id = m.id
		WHERE r.writer IN (`+strings.Repeat("?, ", len(instrumentedWriters)-1)+`?) AND r.attempt = 0 AND e.cpid IS NOT NULL
			AND e.verb IN ('create', 'update', 'patch') AND e.subresource = ''`, anys(instrumentedWriters)...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]map[string]bool{}
	for rows.Next() {
		var id int64
		var c, src string
		if err := rows.Scan(&id, &c, &src); err != nil {
			t.Fatal(err)
		}
		if out[id] == nil {
			out[id] = map[string]bool{c: true}
		}
		if src != "" {
			out[id][src] = true
		}
	}
	return out
}

// measureEdges reconstructs fixture twice, with the CPIDs its writes carry
// and without them (--ignore-cpids), and compares each instrumented write's
// inferred cause with the truth the CPIDs give: the cause is right when
// the CPID it left on its object is the write's own or one its mergelog
// merged. Precision: right causes among the writes given one; recall:
// right causes among the writes the truth has. byWriter counts them per
// writer.
func measureEdges(t *testing.T, fixture string) (p, r float64, n int, wrong []string, byWriter map[string]*edgeCount) {
	t.Helper()
	dir := t.TempDir()
	truthDB, blindDB := filepath.Join(dir, "truth.db"), filepath.Join(dir, "blind.db")
	if code, out, e := runCmd(t, nil, "ingest", "--db", truthDB, filepath.Join("../../fixtures", fixture, "bundle")); code != 0 {
		t.Fatalf("ingest: %d\n%s%s", code, out, e)
	}
	b, err := os.ReadFile(truthDB)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blindDB, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"reconstruct", "--db", truthDB}, {"reconstruct", "--ignore-cpids", "--db", blindDB}} {
		if code, out, e := runCmd(t, nil, args...); code != 0 {
			t.Fatalf("%v: %d\n%s%s", args, code, out, e)
		}
	}
	tdb, bdb := openDB(t, truthDB), openDB(t, blindDB)
	truth := edgeTruth(t, tdb)
	cpidOf := map[int64]string{}
	rows, err := tdb.Query(`SELECT id, COALESCE(cpid, '') FROM audit_events`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var c string
		rows.Scan(&id, &c)
		cpidOf[id] = c
	}
	rows.Close()
	if n := len(truth); n == 0 {
		t.Fatalf("%s: no write carries a controller's CPID", fixture)
	}
	var given, right int
	byWriter = map[string]*edgeCount{}
	ids := make([]int64, 0, len(truth))
	for id := range truth {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		var cause sql.NullInt64
		var rule, writer, res, name string
		if err := bdb.QueryRow(`SELECT cause_event_id, COALESCE(cause_rule, ''), writer, resource, name FROM revisions
			WHERE event_id = ?`, id).Scan(&cause, &rule, &writer, &res, &name); err != nil {
			t.Fatalf("event %d: %v", id, err)
		}
		if byWriter[writer] == nil {
			byWriter[writer] = &edgeCount{}
		}
		c := byWriter[writer]
		c.truth++
		if !cause.Valid {
			wrong = append(wrong, fmt.Sprintf("event %d %s %s/%s: no cause inferred", id, writer, res, name))
			continue
		}
		given++
		c.given++
		if truth[id][cpidOf[cause.Int64]] {
			right++
			c.right++
			continue
		}
		wrong = append(wrong, fmt.Sprintf("event %d %s %s/%s: caused by event %d (rule %s), whose CPID %.8s is not among %v",
			id, writer, res, name, cause.Int64, rule, cpidOf[cause.Int64], short(truth[id])))
	}
	p, r = 1, 1
	if given > 0 {
		p = float64(right) / float64(given)
	}
	r = float64(right) / float64(len(truth))
	return p, r, len(truth), wrong, byWriter
}

// edgeCount counts one writer's writes in measureEdges: those the CPIDs
// give a cause (truth), those inference gave one, and the right ones.
type edgeCount struct{ truth, given, right int }

// anys returns the strings of ss as query arguments.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func short(set map[string]bool) []string {
	var out []string
	for c := range set {
		out = append(out, c[:min(8, len(c))])
	}
	sort.Strings(out)
	return out
}

// TestEdgesAgainstCPIDs: on every instrumented recording, the causes
// inference finds with the CPIDs hidden are the ones the CPIDs name, with
// precision and recall at least 0.95 (docs/CAUSALITY.md prints them).
func TestEdgesAgainstCPIDs(t *testing.T) {
	t.Parallel()
	for _, f := range instrumentedFixtures {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			p, r, n, wrong, _ := measureEdges(t, f)
			t.Logf("%-12s edges of %d instrumented writes: precision %.3f recall %.3f", f, n, p, r)
			if p < 0.95 || r < 0.95 {
				t.Errorf("%s: edge precision %.3f, recall %.3f (min 0.95):\n  %s", f, p, r, strings.Join(wrong, "\n  "))
			}
		})
	}
}
