package sqlite

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
)

// queryPlan is SQLite's plan of q, its steps joined by "; ".
func queryPlan(t *testing.T, s *Store, q string, args ...any) string {
	t.Helper()
	rows, err := s.r.QueryContext(context.Background(), `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, q)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}

// TestFilterIndexUsed: the terminal UI's filter, run at each key for the
// count and the page, reads the changes through the narrow index
// changes_search (migration 0012), the values of search_terms by kind,
// and what the changes' writes hold from the postings of those values
// (change_terms, migration 0019), a range of its key each, once for the
// query (a list, not a subquery run at each change), whatever the filter
// may name (a name or writer, a verb, a code): never the writes, their
// events, or the indexes of their names and writers (the filter before
// 0016, writesFilterCond, read those and fails here), nor a change's
// postings by the change (0016's change_search row of each change, by
// its key, fails here). The gate, whether any value holds the filter,
// comes before any change is read: the count is the THEN of a CASE, the
// page's LIMIT 0 when it fails (a condition of the WHERE clause was
// tested at each change, listed after their scan). Storing the postings
// of some changes reads their writes by revisions_change.
func TestFilterIndexUsed(t *testing.T) {
	t.Parallel()
	byChange := regexp.MustCompile(`CORRELATED SCALAR SUBQUERY [0-9]+; SEARCH p USING COVERING INDEX change_terms_change \(change=\?\)`)
	s := openTest(t)
	for _, cluster := range []string{"", "c"} {
		v := s.InCluster(cluster)
		// "web": no verb or code; "update": a verb; "409": a code;
		// "a\x1fb": the separator of the changes' own texts (no gate:
		// no value holds it, two columns of a change may).
		for _, f := range []string{"web", "update", "409", "n", "a\x1fb"} {
			cq, cargs := v.changeCountSQL(cpid.ChangeQuery{Filter: f})
			pq, pargs := v.changePageSQL(cpid.ChangeQuery{Filter: f, Sort: "time", Limit: 50})
			gated, kinds := f != "a\x1fb", 3
			if !gated {
				kinds = 1
			}
			for q, args := range map[string][]any{cq: cargs, pq: pargs} {
				p := queryPlan(t, s, q, args...)
				if cluster == "" && !strings.Contains(p, "INDEX changes_search") {
					t.Errorf("filter %q: %s\nplan: %s\nwant changes_search", f, q, p)
				}
				// search_terms by kind, once for the query (not
				// correlated), and the postings of its values either
				// by value, once (a list), or by change and value.
				byKind := "SEARCH search_terms USING COVERING INDEX sqlite_autoindex_search_terms_1 (kind=?"
				if !strings.Contains(p, "LIST SUBQUERY") || !strings.Contains(p, "SEARCH p USING PRIMARY KEY (term=?)") ||
					strings.Count(p, "CORRELATED") != 1 ||
					!byChange.MatchString(p) ||
					strings.Count(p, byKind) < kinds || strings.Contains(p, "SCAN search_terms") || strings.Contains(p, "SCAN p") {
					t.Errorf("filter %q, cluster %q: %s\nplan: %s\nwant search_terms by kind, once, and their postings by value or by change and value", f, cluster, q, p)
				}
				// The gate (the values of the changes' own rows) before
				// the changes.
				gate, scan := strings.Index(p, byKind), strings.Index(p, " c USING ")
				if gated && (gate < 0 || scan < 0 || gate > scan) {
					t.Errorf("filter %q, cluster %q: %s\nplan: %s\nwant the gate's values of search_terms read before the changes", f, cluster, q, p)
				}
				for _, no := range []string{"revisions", " r ", " e ", "audit_events"} {
					if strings.Contains(p+" ", no) {
						t.Errorf("filter %q, cluster %q: %s\nplan: %s\nreads the writes (%s)", f, cluster, q, p, no)
					}
				}
			}
		}
	}
	sel := fmt.Sprintf(searchSQL[2], `r.change_id IN `+inJSON)
	p := queryPlan(t, s, sel[strings.Index(sel, "SELECT"):], `["x"]`)
	if !strings.Contains(p, "INDEX revisions_change (change_id=?)") || strings.Contains(p, "SCAN r") || strings.Contains(p, "SCAN e") {
		t.Errorf("the postings of some changes, plan: %s\nwant their writes by revisions_change", p)
	}
	// A change's postings are deleted by their change (change_terms_change).
	p = queryPlan(t, s, deleteTermsSQL+`(SELECT rowid FROM changes WHERE id IN `+inJSON+`)`, `["x"]`)
	if !strings.Contains(p, "change_terms_change (change=?)") || strings.Contains(p, "SCAN change") {
		t.Errorf("deleting the postings of some changes, plan: %s\nwant them by change_terms_change", p)
	}
}

// TestSLIIndexUsed: query sli --change finds the change's writes through
// revisions_change and each Pod's writes from its creation through
// revisions_object_time (migration 0018), never by reading every write
// (or every Pod's).
func TestSLIIndexUsed(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	p := queryPlan(t, s, podWritesSQL("x"), "x")
	if !strings.Contains(p, "MATERIALIZE created; SEARCH r USING INDEX revisions_change (change_id=?)") ||
		!strings.Contains(p, "INDEX revisions_object_time (resource=? AND namespace=? AND name=? AND api_group=? AND cluster=? AND stage_ns>?)") {
		t.Errorf("PodWrites of one change, plan: %s\nwant its writes by revisions_change, then each Pod's from its creation by revisions_object_time", p)
	}
	if p := queryPlan(t, s, hopsSQL("x"), "x", ""); !strings.Contains(p, "INDEX revisions_change (change_id=?)") {
		t.Errorf("Hops of one change, plan: %s\nwant revisions_change", p)
	}
}

// TestFilterMatches: the filter finds what it says on the real fixture,
// checked against every change and write read back and matched in Go: a
// change whose own row (namespace, name, resource, user, id, cluster)
// contains the filter, or with a write whose object name or writer does,
// or whose verb[/subresource] does, or whose code it is (a failing code
// only for failed attempts).
func TestFilterMatches(t *testing.T) {
	s := ingestFixture(t)
	ctx := context.Background()
	type write struct {
		name, writer, verb string
		code               int
		attempt            bool
	}
	own := map[string]string{}
	rows, err := s.r.QueryContext(ctx, `SELECT id, namespace, name, resource, user, cluster FROM changes`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, ns, name, res, user, cluster string
		if err := rows.Scan(&id, &ns, &name, &res, &user, &cluster); err != nil {
			t.Fatal(err)
		}
		own[id] = strings.ToLower(strings.Join([]string{ns, name, res, user, id, cluster}, "\x1f"))
	}
	rows.Close()
	writes := map[string][]write{}
	rows, err = s.r.QueryContext(ctx, `SELECT r.change_id, r.name, r.writer, e.verb || CASE WHEN e.subresource <> '' THEN '/' || e.subresource ELSE '' END,
		COALESCE(e.code, 0), r.attempt FROM revisions r JOIN audit_events e ON e.id = r.event_id WHERE r.change_id IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var w write
		if err := rows.Scan(&id, &w.name, &w.writer, &w.verb, &w.code, &w.attempt); err != nil {
			t.Fatal(err)
		}
		writes[id] = append(writes[id], w)
	}
	rows.Close()
	if len(own) < 5 || len(writes) < 5 {
		t.Fatalf("%d changes, %d with writes: the fixture was not reconstructed", len(own), len(writes))
	}
	for _, f := range []string{"web", "WEB", "kube-scheduler", "Scheduler", "replicaset-controller", "kwok", "update/status", "patch",
		"binding", "201", "409", "default", "%", "_", "w_b", "no-such-thing", "n", "ns"} {
		verb, code := cpid.FilterWrites(f)
		lf := strings.ToLower(f)
		var want []string
		for id, text := range own {
			ok := strings.Contains(text, lf)
			for _, w := range writes[id] {
				ok = ok || strings.Contains(strings.ToLower(w.name), lf) || strings.Contains(strings.ToLower(w.writer), lf) ||
					verb && strings.Contains(w.verb, lf) || code != 0 && w.code == code && (code < 300 || w.attempt)
			}
			if ok {
				want = append(want, id)
			}
		}
		cs, err := s.Changes(ctx, cpid.ChangeQuery{Filter: f, Limit: 100000})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range cs {
			got = append(got, c.ID)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("filter %q: %d changes, want %d\ngot  %v\nwant %v", f, len(got), len(want), got, want)
		}
		n, err := s.CountChanges(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(want) {
			t.Errorf("CountChanges(%q) = %d, want %d", f, n, len(want))
		}
	}
}
