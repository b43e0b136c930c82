package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// actionChange is the root change of a fixture's user action (its
// truth.json id): the first change of its verb and object started in the
// action's window.
func actionChange(t *testing.T, db *sql.DB, fixture, action string) string {
	t.Helper()
	for _, a := range readTruth(t, filepath.Join("../../fixtures", fixture)).Actions {
		if a.ID != action {
			continue
		}
		var id string
		err := db.QueryRow(`SELECT id FROM changes WHERE verb = ? AND resource = ? AND namespace = ? AND name = ?
			AND started_ns BETWEEN ? AND ? ORDER BY started_ns LIMIT 1`,
			a.Request.Verb, a.Request.Resource, a.Request.Namespace, a.Request.Name, a.StartNS, a.EndNS).Scan(&id)
		if err != nil {
			t.Fatalf("%s %s: %v", fixture, action, err)
		}
		return id
	}
	t.Fatalf("%s has no action %s", fixture, action)
	return ""
}

// criticalByWriter walks a change's critical path in the database, from
// its last successful write back through the causes within the change,
// and adds up the hops by writer: what diff should report, computed here
// from the revisions table alone.
func criticalByWriter(t *testing.T, db *sql.DB, change string) map[string]int64 {
	t.Helper()
	rows, err := db.Query(`SELECT r.event_id, r.writer, r.attempt, COALESCE(r.cause_event_id, 0), COALESCE(r.hop_ns, 0)
		FROM revisions r JOIN audit_events e ON e.id = r.event_id WHERE r.change_id = ? ORDER BY e.stage_ns, r.event_id`, change)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	type w struct {
		writer     string
		cause, hop int64
	}
	ws := map[int64]w{}
	var last int64
	for rows.Next() {
		var id, cause, hop int64
		var writer string
		var attempt bool
		if err := rows.Scan(&id, &writer, &attempt, &cause, &hop); err != nil {
			t.Fatal(err)
		}
		ws[id] = w{writer, cause, hop}
		if !attempt {
			last = id
		}
	}
	out := map[string]int64{}
	for id := last; ; {
		x, ok := ws[id]
		if !ok {
			break
		}
		// A cause outside the change: the wait before it, not counted.
		if _, in := ws[x.cause]; in && x.cause != id {
			out[x.writer] += x.hop
		}
		if x.cause == id {
			break
		}
		id = x.cause
	}
	for w, ns := range out {
		if ns == 0 {
			delete(out, w)
		}
	}
	return out
}

// checkDiffSums checks a diff report against the database: each writer's
// critical path time as walked here, and rows that add up to the settled
// times.
func checkDiffSums(t *testing.T, db *sql.DB, r diffReport) {
	t.Helper()
	wantA, wantB := criticalByWriter(t, db, r.A.ID), criticalByWriter(t, db, r.B.ID)
	var sumA, sumB, sumDelta int64
	for _, w := range r.Writers {
		sumA, sumB, sumDelta = sumA+w.ANS, sumB+w.BNS, sumDelta+w.DeltaNS
		if slices.Contains(special, w.Writer) {
			continue
		}
		if w.ANS != wantA[w.Writer] || w.BNS != wantB[w.Writer] || w.DeltaNS != w.BNS-w.ANS {
			t.Errorf("%s vs %s: %s: %d, %d, delta %d; the critical paths give %d, %d", r.A.ID, r.B.ID, w.Writer, w.ANS, w.BNS, w.DeltaNS,
				wantA[w.Writer], wantB[w.Writer])
		}
		delete(wantA, w.Writer)
		delete(wantB, w.Writer)
	}
	if len(wantA)+len(wantB) > 0 {
		t.Errorf("%s vs %s: writers on the critical paths left out: %v %v", r.A.ID, r.B.ID, wantA, wantB)
	}
	if sumA != r.SettledANS || sumB != r.SettledBNS || sumDelta != r.DeltaNS {
		t.Errorf("%s vs %s: the rows add up to %d, %d, delta %d; settled after %d, %d, delta %d", r.A.ID, r.B.ID,
			sumA, sumB, sumDelta, r.SettledANS, r.SettledBNS, r.DeltaNS)
	}
}

// TestDiffAddsUp: on fixtures with environment changes, retries and
// restarts, every change compared with the next: the writers' rows are
// the critical paths walked here and they add up to the settled times.
func TestDiffAddsUp(t *testing.T) {
	for _, fx := range []string{"kcm-restart", "conflicts", "node-loss"} {
		t.Run(fx, func(t *testing.T) {
			dbPath := reconstructedFixture(t, filepath.Join("../../fixtures", fx, "bundle"))
			db := openDB(t, dbPath)
			rows, err := db.Query(`SELECT id FROM changes ORDER BY started_ns, id`)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for rows.Next() {
				var id string
				rows.Scan(&id)
				ids = append(ids, id)
			}
			rows.Close()
			before := 0
			for i := 1; i < len(ids); i++ {
				code, out, errOut := runCmd(t, nil, "diff", "--db", dbPath, "--output", "json", ids[i-1], ids[i])
				var r diffReport
				if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
					t.Fatalf("diff %s %s: exit %d\n%s", ids[i-1], ids[i], code, errOut)
				}
				checkDiffSums(t, db, r)
				if r.BeforeB != nil {
					before++
				}
			}
			// A controller-start change (a resync after a restart) starts
			// with a wait on a cause before it; the user's change a restart
			// interrupted holds its wait inside (docs/CAUSALITY.md).
			var starts int
			db.QueryRow(`SELECT count(*) FROM changes c JOIN revisions r ON r.event_id = c.event_id
				WHERE c.trigger = 'controller-start' AND r.cause_event_id IS NOT NULL`).Scan(&starts)
			if starts > 0 && before == 0 {
				t.Errorf("%s: %d controller-start changes, none whose critical path starts with a wait on a cause before it", fx, starts)
			}
		})
	}
}

// TestDiffScaleUps compares two real scale-ups of paper-5-1-1 (20 -> 30 and
// 30 -> 40 replicas): every write of each change is in one step, the n-th
// Pod created by one meets the n-th of the other, each writer's critical
// path time is the one walked here from the revisions, and the rows add
// up to each change's settled time.
func TestDiffScaleUps(t *testing.T) {
	dbPath := reconstructedFixture(t, "../../fixtures/paper-5-1-1/bundle")
	db := openDB(t, dbPath)
	a, b := actionChange(t, db, "paper-5-1-1", "scale-30"), actionChange(t, db, "paper-5-1-1", "scale-40")
	code, out, errOut := runCmd(t, nil, "diff", "--db", dbPath, "--output", "json", a[:8], b[:8])
	if code != 0 {
		t.Fatalf("diff: exit %d\n%s", code, errOut)
	}
	if errOut != "" {
		t.Errorf("two scale-ups: stderr %q", errOut)
	}
	var r diffReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.A.ID != a || r.B.ID != b {
		t.Fatalf("compared %s and %s, want %s and %s", r.A.ID, r.B.ID, a, b)
	}
	settled := func(id string) (ns int64) {
		if err := db.QueryRow(`SELECT settled_ns - started_ns FROM changes WHERE id = ?`, id).Scan(&ns); err != nil {
			t.Fatal(err)
		}
		return ns
	}
	if r.SettledANS != settled(a) || r.SettledBNS != settled(b) || r.DeltaNS != settled(b)-settled(a) {
		t.Errorf("settled %d, %d, delta %d; the changes table says %d, %d", r.SettledANS, r.SettledBNS, r.DeltaNS, settled(a), settled(b))
	}

	// Every write of each change is on its side of exactly one step.
	writes := func(id string) (ids []int64) {
		rows, err := db.Query(`SELECT event_id FROM revisions WHERE change_id = ? ORDER BY event_id`, id)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var x int64
			rows.Scan(&x)
			ids = append(ids, x)
		}
		return ids
	}
	var sideA, sideB []int64
	matched := map[string]bool{}
	for _, s := range r.Steps {
		if s.A != nil {
			sideA = append(sideA, s.A.EventID)
		}
		if s.B != nil {
			sideB = append(sideB, s.B.EventID)
		}
		if s.A != nil && s.B != nil {
			matched[s.Step] = true
			if s.DeltaNS != nil && *s.DeltaNS != s.B.HopNS-s.A.HopNS {
				t.Errorf("%s: delta %d, hops %d and %d", s.Step, *s.DeltaNS, s.A.HopNS, s.B.HopNS)
			}
		}
	}
	slices.Sort(sideA)
	slices.Sort(sideB)
	if !slices.Equal(sideA, writes(a)) || !slices.Equal(sideB, writes(b)) {
		t.Errorf("steps hold %d and %d writes; the changes have %d and %d", len(sideA), len(sideB), len(writes(a)), len(writes(b)))
	}
	// Each scale-up creates 10 Pods (the ground truth): the n-th of each
	// meet, and so do their bindings.
	for n := 1; n <= 10; n++ {
		for _, step := range []string{"replicaset-controller create Pod[%d]", "kube-scheduler create/binding Pod[%d]"} {
			if s := fmt.Sprintf(step, n); !matched[s] {
				t.Errorf("step %q is not in both changes", s)
			}
		}
	}

	// Per writer: the critical path walked here; the rows add up.
	if r.BeforeA != nil || r.BeforeB != nil {
		t.Errorf("user changes waited on a cause before them: %+v %+v", r.BeforeA, r.BeforeB)
	}
	checkDiffSums(t, db, r)
	// Largest difference first, and the summary names it.
	for i := 1; i < len(r.Writers); i++ {
		x, y := r.Writers[i-1], r.Writers[i]
		if !slices.Contains(special, y.Writer) && abs(x.DeltaNS) < abs(y.DeltaNS) {
			t.Errorf("writers out of order: %+v before %+v", x, y)
		}
	}
	top := r.Writers[0]
	if !strings.Contains(r.Summary, dur(abs(r.DeltaNS))) || !strings.Contains(r.Summary, top.Writer) {
		t.Errorf("summary %q: want the difference %s and %s", r.Summary, dur(abs(r.DeltaNS)), top.Writer)
	}

	code, table, errOut := runCmd(t, nil, "diff", "--db", dbPath, a[:8], b[:8])
	if code != 0 {
		t.Fatalf("diff: exit %d\n%s", code, errOut)
	}
	golden(t, filepath.Join("testdata", "paper-5-1-1.diff.golden"), "$ cpid-tui diff "+a[:8]+" "+b[:8]+"\n"+table)

	// Two changes of different kinds are compared, with a note.
	first := actionChange(t, db, "paper-5-1-1", "create")
	if code, _, errOut := runCmd(t, nil, "diff", "--db", dbPath, first, a); code != 0 || !strings.Contains(errOut, "not of the same kind") {
		t.Errorf("diff of the create and a scale-up: exit %d, stderr %q; want 0 and a note", code, errOut)
	}
}

// TestChangeIDPrefix: timeline, spans, --change and diff take a unique
// prefix of a change id; an ambiguous one fails listing the changes it
// starts.
func TestChangeIDPrefix(t *testing.T) {
	dbPath := reconstructedFixture(t, "../../fixtures/paper-5-1-1/bundle")
	var ids []string
	rows, err := openDB(t, dbPath).Query(`SELECT id FROM changes ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	// The shortest prefix that starts two ids, and a unique one.
	var amb string
	var starts []string
	for n := 1; amb == "" && n < 36; n++ {
		for i := 1; i < len(ids); i++ {
			if len(ids[i]) >= n && strings.HasPrefix(ids[i], ids[i-1][:n]) {
				amb = ids[i-1][:n]
				break
			}
		}
	}
	for _, id := range ids {
		if strings.HasPrefix(id, amb) {
			starts = append(starts, id)
		}
	}
	if amb == "" || len(starts) < 2 {
		t.Fatalf("no ambiguous prefix among %v: a bad test", ids)
	}
	one := starts[0][:len(amb)+4]
	for _, other := range ids {
		if other != starts[0] && strings.HasPrefix(other, one) {
			t.Fatalf("%s is not unique: a bad test", one)
		}
	}
	for _, args := range [][]string{{"query", "timeline"}, {"query", "spans"}, {"query", "hops", "--change"}, {"query", "anomalies", "--change"}} {
		code, byPrefix, errOut := runCmd(t, nil, append(append([]string{}, args...), one, "--db", dbPath)...)
		_, byID, _ := runCmd(t, nil, append(append([]string{}, args...), starts[0], "--db", dbPath)...)
		if code != 0 || byPrefix != byID {
			t.Errorf("%v %s: exit %d %s\n%s\nwant the output of the whole id:\n%s", args, one, code, errOut, byPrefix, byID)
		}
		code, out, errOut := runCmd(t, nil, append(append([]string{}, args...), amb, "--db", dbPath)...)
		if code != 1 || out != "" || !strings.Contains(errOut, "ambiguous") {
			t.Errorf("%v %s: exit %d, stdout %q, stderr %q; want 1 and the candidates", args, amb, code, out, errOut)
		}
		for _, id := range starts {
			if !strings.Contains(errOut, id) {
				t.Errorf("%v %s: the candidates leave out %s:\n%s", args, amb, id, errOut)
			}
		}
	}
	if code, _, errOut := runCmd(t, nil, "diff", amb, one, "--db", dbPath); code != 1 || !strings.Contains(errOut, starts[1]) {
		t.Errorf("diff with an ambiguous prefix: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := runCmd(t, nil, "query", "timeline", "zz", "--db", dbPath); code != 1 || !strings.Contains(errOut, `no change "zz"`) {
		t.Errorf("an unknown prefix: exit %d\n%s", code, errOut)
	}
}

// TestQueryChangesFilters: each filter of query changes keeps the changes
// a plain SQL query over the database keeps, on the basic fixture, and they
// combine.
func TestQueryChangesFilters(t *testing.T) {
	dbPath := reconstructed(t)
	db := openDB(t, dbPath)
	ids := func(q string, args ...any) []string {
		t.Helper()
		out := queryStrings(t, db, q, args...)
		sort.Strings(out)
		return out
	}
	var newest, mid int64
	db.QueryRow(`SELECT max(stage_ns) FROM audit_events`).Scan(&newest)
	db.QueryRow(`SELECT started_ns FROM changes ORDER BY started_ns LIMIT 1 OFFSET 3`).Scan(&mid)
	rfc := time.Unix(0, mid).UTC().Format(time.RFC3339Nano)
	for _, tc := range []struct {
		flags []string
		want  []string
	}{
		{[]string{"--kind", "deploy"}, ids(`SELECT id FROM changes WHERE resource = 'deployments' AND api_group = 'apps'`)},
		{[]string{"--kind", "Service"}, ids(`SELECT id FROM changes WHERE resource = 'services' AND api_group = ''`)},
		{[]string{"-n", "default"}, ids(`SELECT id FROM changes WHERE namespace = 'default'`)},
		{[]string{"--since", rfc}, ids(`SELECT id FROM changes WHERE started_ns >= ?`, mid)},
		{[]string{"--until", rfc}, ids(`SELECT id FROM changes WHERE started_ns < ?`, mid)},
		{[]string{"--since", "12s"}, ids(`SELECT id FROM changes WHERE started_ns >= ?`, newest-12e9)},
		{[]string{"--writer", "KWOK"}, ids(`SELECT DISTINCT change_id FROM revisions r JOIN audit_events e ON e.id = r.event_id
			WHERE change_id IS NOT NULL AND e.user_agent LIKE 'kwok/%'`)},
		{[]string{"--user", "admin"}, ids(`SELECT id FROM changes WHERE user LIKE '%admin%'`)},
		{[]string{"--min-duration", "100ms"}, ids(`SELECT id FROM changes WHERE settled_ns - started_ns >= 100000000`)},
		{[]string{"--trigger", "user"}, ids(`SELECT id FROM changes WHERE trigger = 'user'`)},
		{[]string{"--trigger", "gc"}, nil},
		{[]string{"--kind", "deploy", "--min-duration", "150ms", "--writer", "scheduler"},
			ids(`SELECT id FROM changes WHERE resource = 'deployments' AND settled_ns - started_ns >= 150000000
				AND id IN (SELECT change_id FROM revisions WHERE writer = 'kube-scheduler')`)},
	} {
		code, out, errOut := runCmd(t, nil, append([]string{"query", "changes", "--db", dbPath, "--output", "json", "--limit", "0"}, tc.flags...)...)
		var cs []struct{ ID string }
		if code != 0 || json.Unmarshal([]byte(out), &cs) != nil {
			t.Fatalf("%v: exit %d\n%s", tc.flags, code, errOut)
		}
		var got []string
		for _, c := range cs {
			got = append(got, c.ID)
		}
		sort.Strings(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v: %v, want %v", tc.flags, got, tc.want)
		}
	}
	if got, all := ids(`SELECT id FROM changes WHERE resource = 'deployments'`), ids(`SELECT id FROM changes`); len(got) == 0 || len(got) == len(all) {
		t.Fatalf("deployments' changes %d of %d: a bad test", len(got), len(all))
	}
	for _, flags := range [][]string{{"--trigger", "x"}, {"--since", "x"}, {"--min-duration", "-1s"}, {"--kind", ".x"}} {
		if code, _, _ := runCmd(t, nil, append([]string{"query", "changes", "--db", dbPath}, flags...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2", flags, code)
		}
	}
}

func abs(x int64) int64 { return max(x, -x) }
