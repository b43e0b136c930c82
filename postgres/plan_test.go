package postgres

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

// TestReadPaths runs the tests of the read paths' plans and results
// against one database holding the real fixture, reconstructed, vacuumed
// and analyzed (as autovacuum keeps a server's statistics and visibility
// map, which index-only scans need).
func TestReadPaths(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t)
	if _, err := (&ingest.Ingester{Sink: s}).Run(ctx, []string{"../fixtures/basic/bundle"}); err != nil {
		t.Fatal(err)
	}
	if _, err := reconstruct.Run(ctx, s, reconstruct.Options{Family: ingest.Family}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		fn   func(*testing.T, *Store)
	}{
		{"FilterIndexUsed", testFilterIndexUsed},
		{"FilterMatches", testFilterMatches},
		{"FilterGate", testFilterGate},
		{"HistoryChangesByID", testHistoryChangesByID},
		{"IDsNearOnce", testIDsNearOnce},
		{"FilterCountIndexOnly", testFilterCountIndexOnly},
		{"FilterPageByChange", testFilterPageByChange},
		{"ChangeOrdersIndexed", testChangeOrdersIndexed},
		{"SLIOneChange", testSLIOneChange},
		{"ObjectKeysOnly", testObjectKeysOnly},
		{"HistoryLimitFirst", testHistoryLimitFirst},
		{"CPIDsIndexUsed", testCPIDsIndexUsed},
		{"BodiesWhenNeeded", testBodiesWhenNeeded},
		{"CPIDIDs", testCPIDIDs}, // last: it prunes the merge graph
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, s) })
	}
}

// queryPlan is PostgreSQL's plan of q with its arguments (a custom plan,
// as the first runs of a statement get), as text, with sequential and
// bitmap scans off: on the fixture's small tables they would win anyway
// (on large ones the planner picks the index and index-only scans), so a
// sequential scan left in the plan says that no index can answer q.
func queryPlan(t *testing.T, s *Store, q string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	var plan []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `EXPLAIN `+q, args...)
		if err != nil {
			return err
		}
		plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, q)
	}
	return strings.Join(plan, "\n")
}

// testFilterIndexUsed: the terminal UI's filter, run at each key for the
// count and the page, reads the changes' own text from the narrow index
// changes_search (migration 0010), and what their writes hold from the
// postings of the values that hold it (change_terms by its key, the
// values' ranges alone: migration 0019), never the writes themselves: it
// read each change's writes and their events for a verb or a code, and
// every write of the names and writers that held it.
func testFilterIndexUsed(t *testing.T, s *Store) {
	for _, cluster := range []string{"", "c"} {
		v := s.InCluster(cluster)
		// "web": no verb or code; "update": a verb; "409": a code.
		for _, f := range []string{"web", "update", "409"} {
			where, args := v.filter(cpid.ChangeQuery{Filter: f})
			for _, q := range []string{
				`SELECT count(*) FROM changes c ` + where,
				`SELECT c.id FROM changes c ` + where + ` ORDER BY c.started_ns DESC, c.id COLLATE "C" LIMIT 50 OFFSET 0`,
			} {
				p := queryPlan(t, s, q, args...)
				wants := []string{"Index Only Scan using change_terms_pkey on change_terms p", "Index Cond: (term = ANY"}
				if cluster == "" && strings.HasPrefix(q, "SELECT count") {
					// The page reads 50 rows by changes_started, a cluster's
					// by changes_cluster; the count of all reads every one.
					wants = append(wants, "Index Only Scan using changes_search")
				}
				for _, want := range wants {
					if !strings.Contains(p, want) {
						t.Errorf("filter %q, cluster %q: %s\nplan:\n%s\nwant %s", f, cluster, q, p, want)
					}
				}
				if strings.Contains(p, " on revisions") || strings.Contains(p, " on audit_events") {
					t.Errorf("filter %q, cluster %q: %s\nplan:\n%s\nreads the writes", f, cluster, q, p)
				}
			}
		}
	}
}

// TestFilterMatches: the filter lists the changes whose own row, or one
// of whose writes' names or writers, contains it (as text: % and _ are
// themselves), as matched in Go over every change and write.
func testFilterMatches(t *testing.T, s *Store) {
	ctx := context.Background()
	own := map[string]string{}
	rows, _ := s.pool.Query(ctx, `SELECT id, lower(concat_ws(chr(31), namespace, name, resource, "user", id, cluster)) FROM changes`)
	var id, text string
	if _, err := pgx.ForEachRow(rows, []any{&id, &text}, func() error { own[id] = text; return nil }); err != nil {
		t.Fatal(err)
	}
	writes := map[string][]string{}
	rows, _ = s.pool.Query(ctx, `SELECT change_id, lower(name), lower(writer) FROM revisions WHERE change_id IS NOT NULL`)
	var name, writer string
	if _, err := pgx.ForEachRow(rows, []any{&id, &name, &writer}, func() error {
		writes[id] = append(writes[id], name, writer)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"n", "ns", "kube", "coredns", "system:serviceaccount", "deployment-controller", "%", "_", "zzz", "efaul", "e"} {
		var want []string
		for id, text := range own {
			if strings.Contains(text, f) || slices.ContainsFunc(writes[id], func(w string) bool { return strings.Contains(w, f) }) {
				want = append(want, id)
			}
		}
		slices.Sort(want)
		got, err := s.Changes(ctx, cpid.ChangeQuery{Filter: f, Limit: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(got))
		for i, c := range got {
			ids[i] = c.ID
		}
		slices.Sort(ids)
		n, err := s.CountChanges(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids, want) || n != len(want) {
			t.Errorf("filter %q: %d listed, %d counted, want %d", f, len(ids), n, len(want))
		}
	}
}

// TestHistoryLimitFirst: history finds an object's last writes from
// revisions alone and joins only those: with a limit of 2, the events of
// 2 writes are read, where the query joined every write of the object
// before keeping the last (1.6 s for a busy Node on 5M events).
func testHistoryLimitFirst(t *testing.T, s *Store) {
	ctx := context.Background()
	var k cpid.ObjectKey
	var writes int
	if err := s.pool.QueryRow(ctx, `SELECT api_group, resource, namespace, name, count(*) FROM revisions
		GROUP BY api_group, resource, namespace, name ORDER BY count(*) DESC, name LIMIT 1`).Scan(&k.Group, &k.Resource, &k.Namespace, &k.Name, &writes); err != nil {
		t.Fatal(err)
	}
	if writes < 4 {
		t.Fatalf("the busiest object of the fixture has %d writes", writes)
	}
	q, args := s.historySQL(cpid.HistoryQuery{Object: k}, 2)
	plan, out := explainAnalyze(t, s, q, args...)
	read := 0
	plan.walk(func(n node) {
		if n.Relation == "audit_events" && n.Alias == "e" {
			read += n.Rows * n.Loops
		}
	})
	if read != 2 {
		t.Errorf("history of %v (%d writes), limit 2: %d events read, want 2\n%s", k, writes, read, out)
	}
}

// testFilterGate: a filter that no value of the changes' own rows
// (search_terms, migration 0016) nor any name or writer of their writes
// holds reads no change, for the count nor for the page (the scan of the
// changes is never run), where each read every change's text at each key;
// one that a value holds reads them.
func testFilterGate(t *testing.T, s *Store) {
	// Every value of the changes' own rows is a term, as the triggers
	// keep them through reconstruct's inserts and updates.
	missing := rowsOf(t, s, `SELECT k || ' ' || v FROM changes c, LATERAL (VALUES ('namespace', lower(c.namespace)),
		('name', lower(c.name)), ('resource', lower(c.resource)), ('user', lower(c."user")), ('cluster', lower(c.cluster))) x(k, v)
		WHERE NOT EXISTS (SELECT 1 FROM search_terms WHERE kind = k AND term = v)`)
	if n := len(rowsOf(t, s, `SELECT term FROM search_terms`)); len(missing) > 0 || n < 5 {
		t.Errorf("search_terms: %d terms, lacks %q", n, missing)
	}
	for _, c := range []struct {
		filter string
		read   bool
	}{{"zzq", false}, {"kube-sch", true}, {"deployment-con", true}, {"0a", true}} {
		where, args := s.filter(cpid.ChangeQuery{Filter: c.filter})
		for _, q := range []string{
			`SELECT count(*) FROM changes c ` + where,
			`SELECT c.id FROM changes c ` + where + ` ORDER BY c.started_ns DESC, c.id COLLATE "C" LIMIT 200 OFFSET 0`,
		} {
			plan, out := explainAnalyze(t, s, q, args...)
			scans := 0
			plan.walk(func(n node) {
				if n.Relation == "changes" && n.Alias == "c" {
					scans += n.Loops
				}
			})
			if (scans > 0) != c.read {
				t.Errorf("filter %q: the changes scanned %d times, want read %v\n%s\n%s", c.filter, scans, c.read, q, out)
			}
		}
	}
}

// testHistoryChangesByID: history looks up the change of each write it
// shows by its id, where a join hashed every change of the database to
// find those of 200 writes.
func testHistoryChangesByID(t *testing.T, s *Store) {
	var k cpid.ObjectKey
	if err := s.pool.QueryRow(context.Background(), `SELECT api_group, resource, namespace, name FROM revisions
		WHERE change_id IS NOT NULL GROUP BY api_group, resource, namespace, name ORDER BY count(*) DESC, name LIMIT 1`).
		Scan(&k.Group, &k.Resource, &k.Namespace, &k.Name); err != nil {
		t.Fatal(err)
	}
	q, args := s.historySQL(cpid.HistoryQuery{Object: k}, 200)
	p := queryPlan(t, s, q, args...)
	if !strings.Contains(p, "Index Scan using changes_pkey on changes t") || strings.Contains(p, "Hash") {
		t.Errorf("history of %v: plan:\n%s\nwant each write's change looked up by changes_pkey, nothing hashed", k, p)
	}
}

// testIDsNearOnce: the neighbours of n ids (every listing's ids' length),
// in CPIDPrefixes' one statement, are 2n seeks of cpid_ids however many
// times each id is given (a history's 200 writes name a few dozen
// changes, each as often as it has writes there), where the condition on
// their value, pushed into the query that seeks them, ran each twice.
func testIDsNearOnce(t *testing.T, s *Store) {
	ids := rowsOf(t, s, `SELECT cpid FROM cpid_ids ORDER BY cpid LIMIT 7 OFFSET 1`)
	plan, out := explainAnalyze(t, s, cpidPrefixesSQL, slices.Concat(ids, ids, ids[:2]))
	seeks := 0
	plan.walk(func(n node) {
		if n.Index == "cpid_ids_pkey" && n.Cond != "" {
			seeks += n.Loops
		}
	})
	if len(ids) < 5 || seeks != 2*len(ids) {
		t.Errorf("the neighbours of %d ids, given %d times: %d seeks of cpid_ids, want %d\n%s", len(ids), 2*len(ids)+2, seeks, 2*len(ids), out)
	}
}

// testFilterCountIndexOnly: a filter's count, with ChangeCount's
// settings (countSettings), reads the changes from changes_search alone,
// never the table: on the fixture's few changes, as on ten million
// events, PostgreSQL would read the table otherwise. (A cluster's view
// reads its changes by cluster, changes_cluster or changes_trigger.) A
// filter that every value of a column holds (here the cluster's name) is
// counted without reading any change's text, and so is one that no
// change's own row may hold ("update": a verb of the writes), from the
// postings alone.
func testFilterCountIndexOnly(t *testing.T, s *Store) {
	ctx := context.Background()
	cluster := rowsOf(t, s, `SELECT term FROM search_terms WHERE kind = 'cluster'`)
	if len(cluster) != 1 {
		t.Fatalf("the fixture's clusters: %q", cluster)
	}
	for _, c := range []struct {
		filter string
		texts  bool
	}{{"web", true}, {cluster[0][1:], false}, {"update", false}} {
		query, args := s.changeCountSQL(cpid.ChangeQuery{Filter: c.filter})
		var plan []string
		var out []byte
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, countSettings); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `EXPLAIN `+query, args...)
			if err != nil {
				return err
			}
			if plan, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
				return err
			}
			return tx.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+query, args...).Scan(&out)
		})
		if err != nil {
			t.Fatal(err)
		}
		p := strings.Join(plan, "\n")
		if !strings.Contains(p, "Index Only Scan using changes_search on changes c") || strings.Contains(p, "Seq Scan on changes") {
			t.Errorf("the count of %q: plan:\n%s\nwant an index-only scan of changes_search", c.filter, p)
		}
		var ex []struct{ Plan node }
		if err := json.Unmarshal(out, &ex); err != nil {
			t.Fatal(err)
		}
		texts := 0
		ex[0].Plan.walk(func(n node) {
			if n.Relation == "changes" && strings.Contains(n.Filter, "strpos(search") {
				texts += n.Loops
			}
		})
		if (texts > 0) != c.texts {
			t.Errorf("the count of %q read the changes' texts %d times, want %v\n%s", c.filter, texts, c.texts, out)
		}
	}
}

// testFilterPageByChange: a page whose filter's postings are many (at
// least a quarter as many as the changes) reads the postings of each
// change it tests (by the change's number), not a list of them all, and
// one whose postings are few lists them: the verbs with the fewest and the
// most postings. (On the fixture's few changes, every verb's postings are
// many; TestFilterSameAsWrites holds both ways to the writes' filter.)
func testFilterPageByChange(t *testing.T, s *Store) {
	ctx := context.Background()
	var quarter int64
	if err := s.pool.QueryRow(ctx, `SELECT reltuples::bigint / 4 FROM pg_class WHERE oid = 'changes'::regclass`).Scan(&quarter); err != nil {
		t.Fatal(err)
	}
	verbs := rowsOf(t, s, `SELECT lpad(count(*)::text, 9) || ' ' || t.term FROM change_terms p JOIN search_terms t ON t.id = p.term
		WHERE t.kind = 'verb' GROUP BY t.term`)
	if len(verbs) < 2 {
		t.Fatalf("verbs: %q", verbs)
	}
	for _, v := range []string{verbs[0], verbs[len(verbs)-1]} {
		verb := strings.Fields(v)[1]
		var postings int64
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM change_terms WHERE term IN (SELECT id FROM search_terms
			WHERE kind IN ('write', 'verb') AND strpos(term, $1) > 0)`, verb).Scan(&postings); err != nil {
			t.Fatal(err)
		}
		where, args := s.filter(cpid.ChangeQuery{Filter: verb})
		plan, out := explainAnalyze(t, s, changePageSQL("time", where, len(args)), append(args, 200, 0)...)
		byChange := 0
		plan.walk(func(n node) {
			if n.Relation == "change_terms" && strings.Contains(n.Cond+n.Filter, "c.number") {
				byChange += n.Loops
			}
		})
		if (byChange > 0) != (postings >= quarter) {
			t.Errorf("the page of %q (%d postings, a quarter of the changes %d): read by change %d times\n%s", verb, postings, quarter, byChange, out)
		}
	}
}

// testChangeOrdersIndexed: a page of changes in each order, the first
// and one far in, is read from an index in that order (migration 0017),
// not sorted from every change.
func testChangeOrdersIndexed(t *testing.T, s *Store) {
	want := map[string]string{"time": "changes_time", "duration": "changes_duration", "size": "changes_size"}
	for _, sort := range cpid.ChangeSorts {
		for _, offset := range []int{0, 10} {
			p := queryPlan(t, s, changePageSQL(sort, "", 0), 200, offset)
			if !strings.Contains(p, "using "+want[sort]+" on changes c") || strings.Contains(p, "Sort") {
				t.Errorf("a page by %s from %d: plan:\n%s\nwant %s, no sort", sort, offset, p, want[sort])
			}
		}
	}
}

// testSLIOneChange: the SLI of one change finds the Pods it created first
// (a materialized CTE, by revisions_change), then their writes, and
// reads their change's start and their bodies in subqueries: joined, the
// planner searched the orders of seven tables at every command (9.4 ms
// of planning in a new backend on ten million events).
func testSLIOneChange(t *testing.T, s *Store) {
	var change string
	if err := s.pool.QueryRow(context.Background(), `SELECT r.change_id FROM revisions r JOIN audit_events e ON e.id = r.event_id
		WHERE r.resource = 'pods' AND e.verb = 'create' AND r.change_id IS NOT NULL LIMIT 1`).Scan(&change); err != nil {
		t.Fatal(err)
	}
	p := queryPlan(t, s, podWritesSQL(change), change)
	if !strings.Contains(p, "CTE Scan on created c") || !strings.Contains(p, "using revisions_change") ||
		strings.Contains(p, "Left Join") || strings.Contains(p, "Join Filter") {
		t.Errorf("SLI of %s: plan:\n%s\nwant the created Pods materialized, their writes joined, the rest in subqueries", change, p)
	}
}

// testObjectKeysOnly: the objects a reference names without their writes
// counted (cpid.ObjectQuery.KeysOnly) are those the counting query finds,
// for every object of the fixture asked by name in every namespace and in
// its own, of any group and of its group, in every view; and the busiest
// object is found by a seek or two of revisions_objects, not by reading
// its writes.
func testObjectKeysOnly(t *testing.T, s *Store) {
	ctx := context.Background()
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT cluster, api_group, resource, namespace, name FROM revisions`)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[cpid.ObjectKey])
	if err != nil || len(keys) < 10 {
		t.Fatalf("%d objects, %v", len(keys), err)
	}
	for _, k := range keys {
		for _, view := range []string{"", k.Cluster, "c"} {
			v := s.InCluster(view)
			for _, q := range []cpid.ObjectQuery{
				{ResourceMatch: cpid.ResourceMatch{Resources: []string{k.Resource}, AnyGroup: true}, Name: k.Name, AllNamespaces: true},
				{ResourceMatch: cpid.ResourceMatch{Resources: []string{k.Resource}, Group: k.Group}, Name: k.Name, Namespace: k.Namespace},
				{ResourceMatch: cpid.ResourceMatch{Resources: []string{k.Resource}, Group: k.Group + "x"}, Name: k.Name, Namespace: k.Namespace},
			} {
				counted, err := v.ObjectMatches(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				q.KeysOnly = true
				found, err := v.ObjectMatches(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				want, got := make([]cpid.ObjectKey, len(counted)), make([]cpid.ObjectKey, len(found))
				for i := range counted {
					want[i] = counted[i].ObjectKey
				}
				for i := range found {
					got[i] = found[i].ObjectKey
				}
				if !slices.Equal(got, want) {
					t.Errorf("view %q, %+v: %v, want %v", view, q, got, want)
				}
			}
		}
	}
	var k cpid.ObjectKey
	var writes int
	if err := s.pool.QueryRow(ctx, `SELECT api_group, resource, namespace, name, count(*) FROM revisions
		GROUP BY api_group, resource, namespace, name ORDER BY count(*) DESC, name LIMIT 1`).Scan(&k.Group, &k.Resource, &k.Namespace, &k.Name, &writes); err != nil {
		t.Fatal(err)
	}
	// Each way of asking (in every namespace or its own, of any group or
	// its own, in every view or the object's cluster) reads a write or two
	// of the object, where reading from the first write to the skip's
	// bound read them all when the namespace and the group were fixed.
	for _, q := range []cpid.ObjectQuery{
		{ResourceMatch: cpid.ResourceMatch{Resources: []string{k.Resource}, AnyGroup: true}, Name: k.Name, AllNamespaces: true},
		{ResourceMatch: cpid.ResourceMatch{Resources: []string{k.Resource}, Group: k.Group}, Name: k.Name, Namespace: k.Namespace},
		{ResourceMatch: cpid.ResourceMatch{Resources: []string{k.Resource}, Group: k.Group}, Name: k.Name, AllNamespaces: true},
	} {
		for _, view := range []string{"", cpid.DefaultCluster} {
			query, args := s.InCluster(view).objectKeysSQL(q)
			plan, out := explainAnalyze(t, s, query, args...)
			read, seeks := 0, 0
			plan.walk(func(n node) {
				if n.Relation == "revisions" {
					read += n.Rows * n.Loops
					seeks += n.Loops
				}
				// A column of the skip's row comparison that is also
				// fixed by an equality: the scan starts at the equality,
				// the object's first write, and reads on to the bound.
				if _, row, ok := strings.Cut(n.Cond, "ROW("); ok {
					row, _, _ = strings.Cut(row, ")")
					for _, c := range strings.Split(row, ", ") {
						if strings.Contains(n.Cond, "("+c+" = ") {
							t.Errorf("%+v, view %q: the skip's row comparison has %s, which a condition fixes: %s", q, view, c, n.Cond)
						}
					}
				}
			})
			if writes < 20 || read > 2 || seeks > 2 {
				t.Errorf("the objects named %s/%s (%d writes), %+v, view %q: %d writes read in %d seeks, want a seek each\n%s",
					k.Resource, k.Name, writes, q, view, read, seeks, out)
			}
		}
	}
}

// testBodiesWhenNeeded: a page of changes of built-in resources reads no
// body (the kind of a custom resource's change is read from its body, in
// a subquery of the CASE that needs it), where joining the view
// audit_bodies cut every row's body out of its block.
func testBodiesWhenNeeded(t *testing.T, s *Store) {
	ids := rowsOf(t, s, `SELECT id FROM changes WHERE resource IN (`+cpid.BuiltinResourcesSQL+`) ORDER BY started_ns DESC LIMIT 50`)
	if len(ids) < 5 {
		t.Fatalf("%d changes of built-in resources in the fixture", len(ids))
	}
	plan, out := explainAnalyze(t, s, changesByIDSQL, ids)
	read := 0
	plan.walk(func(n node) {
		if n.Relation == "body_blocks" {
			read += n.Rows * n.Loops
		}
	})
	if read != 0 {
		t.Errorf("a page of %d changes of built-in resources read %d body blocks, want none\n%s", len(ids), read, out)
	}
}

// explainAnalyze runs query with args under EXPLAIN (ANALYZE, FORMAT
// JSON): the plan's root and the JSON, for a test's message.
func explainAnalyze(t *testing.T, s *Store, query string, args ...any) (node, []byte) {
	t.Helper()
	var out []byte
	if err := s.pool.QueryRow(context.Background(), `EXPLAIN (ANALYZE, FORMAT JSON) `+query, args...).Scan(&out); err != nil {
		t.Fatal(err)
	}
	var plan []struct{ Plan node }
	if err := json.Unmarshal(out, &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan) == 0 {
		t.Fatalf("EXPLAIN gave no plan: %s", out)
	}
	return plan[0].Plan, out
}

// node is a node of EXPLAIN (FORMAT JSON).
type node struct {
	Type     string `json:"Node Type"`
	Relation string `json:"Relation Name"`
	Alias    string `json:"Alias"`
	Index    string `json:"Index Name"`
	Cond     string `json:"Index Cond"`
	Filter   string `json:"Filter"`
	Rows     int    `json:"Actual Rows"`
	Loops    int    `json:"Actual Loops"`
	Plans    []node `json:"Plans"`
}

func (n node) walk(fn func(node)) {
	fn(n)
	for _, c := range n.Plans {
		c.walk(fn)
	}
}

// testCPIDsIndexUsed: the CPIDs of the merge graph (IDLength's every
// listing, a prefix's candidates) come from cpid_ids in its key's order,
// not from a sort of the union of mergelogs and mergelog_sources (1.3 s on
// 5M events), and the objects a reference names (Objects) from
// revisions_objects alone (migration 0007).
func testCPIDsIndexUsed(t *testing.T, s *Store) {
	for _, prefix := range []string{"", "0a"} {
		p := queryPlan(t, s, cpidsSQL, prefix, 10)
		if !strings.Contains(p, "Index Only Scan using cpid_ids_pkey") || strings.Contains(p, "Sort") {
			t.Errorf("CPIDs %q: plan:\n%s\nwant an index-only scan of cpid_ids_pkey, no sort", prefix, p)
		}
	}
	p := queryPlan(t, s, objectsSQL, "kwok-node-0", []string{"nodes"}, false, "", true, "", "")
	if !strings.Contains(p, "Index Only Scan using revisions_objects") {
		t.Errorf("Objects: plan:\n%s\nwant an index-only scan of revisions_objects", p)
	}
}

// testCPIDIDs: cpid_ids, kept by triggers, holds every CPID of the merge
// graph once with the rows that name it and what it shares with the next
// in byte order, after a reconstruct and after a prune deleted some.
func testCPIDIDs(t *testing.T, s *Store) {
	ctx := context.Background()
	check := func(when string) {
		t.Helper()
		const want = `SELECT cpid || ' ' || count(*) || ' ' || cpid_shared(cpid, lead(cpid) OVER (ORDER BY cpid)) FROM (
			SELECT cpid COLLATE "C" AS cpid FROM mergelogs UNION ALL SELECT source_cpid FROM mergelog_sources) a GROUP BY cpid`
		w, got := rowsOf(t, s, want), rowsOf(t, s, `SELECT cpid || ' ' || refs || ' ' || shared FROM cpid_ids`)
		if len(w) < 3 || !slices.Equal(w, got) {
			t.Errorf("%s: cpid_ids holds %d rows, want %d; first difference: %v", when, len(got), len(w), firstDiff(got, w))
		}
	}
	check("after reconstruct")
	removed, _, err := reconstruct.PruneStore(ctx, s, reconstruct.Budget{MaxCPIDs: 5}, false)
	if err != nil || len(removed) == 0 {
		t.Fatalf("prune: %d removed, %v", len(removed), err)
	}
	check("after prune")
}

// firstDiff is the first row where got and want differ.
func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return got[i] + " against " + want[i]
		}
	}
	return "one is a prefix of the other"
}
