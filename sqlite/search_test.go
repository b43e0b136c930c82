package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
	"github.com/cpid-dev/cpid/storetest"
)

// writesFilterCond is the filter's condition as it was before
// change_search (migration 0016): the changes with a write whose name or
// writer holds it (then read through their distinct values and the index
// revisions_names, which migration 0018 dropped: here every write is
// read), the verbs and codes read from each change's writes and their
// events. TestFilterSameAsWrites holds the new one to it.
func writesFilterCond(filter string) (string, []any) {
	distinctIn := func(col string) string {
		return `c.id IN (SELECT change_id FROM revisions WHERE change_id IS NOT NULL AND instr(lower(` + col + `), ?) > 0)`
	}
	raw := strings.ToLower(filter)
	cond := `(instr(` + searchText + `, ?) > 0
		OR ` + distinctIn("name") + `
		OR ` + distinctIn("writer")
	args := []any{raw, raw, raw}
	verb, code := cpid.FilterWrites(filter)
	if verb {
		cond += `
		OR EXISTS (SELECT 1 FROM revisions r JOIN audit_events e ON e.id = r.event_id WHERE r.change_id = c.id
			AND instr(e.verb || CASE WHEN e.subresource <> '' THEN '/' || e.subresource ELSE '' END, ?) > 0)`
		args = append(args, raw)
	}
	if code != 0 {
		failed := ""
		if cpid.IsFailedCode(code) {
			failed = " AND r.attempt <> 0"
		}
		cond += `
		OR EXISTS (SELECT 1 FROM revisions r JOIN audit_events e ON e.id = r.event_id WHERE r.change_id = c.id` + failed + ` AND e.code = ?)`
		args = append(args, code)
	}
	return cond + `)`, args
}

// searchFixtures are the recorded fixtures the filter is compared on, each
// in a cluster of its own in one database.
var searchFixtures = []string{"basic", "conflicts", "instrumented", "namespace-delete", "node-loss", "operator",
	"leader-change", "jobs", "cronjob", "drain-pdb", "traced", "statefulset"}

// ingestClusters stores each fixture in its cluster of one database and
// reconstructs each cluster (steps > 0: in steps of that many rows).
func ingestClusters(t *testing.T, fixtures []string, steps int) *Store {
	t.Helper()
	ctx := context.Background()
	s := openTest(t)
	for _, f := range fixtures {
		v := s.InCluster(f)
		in := &ingest.Ingester{Sink: v}
		sum, err := in.Run(ctx, []string{filepath.Join("..", "fixtures", f, "bundle")})
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.ReadErrors) > 0 || sum.Written.Audits == 0 {
			t.Fatalf("%s: %v, %+v", f, sum.ReadErrors, sum.Written)
		}
		if _, err := reconstruct.Run(ctx, v, reconstruct.Options{StepRows: steps, Family: ingest.Family}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// filterSamples are the filters to try on s: storetest.FilterSamples of
// the values its changes and writes hold (names, writers, namespaces,
// users, resources, verbs, codes, ids).
func filterSamples(t *testing.T, s *Store) []string {
	t.Helper()
	vals, err := column(context.Background(), s.r, `SELECT name FROM revisions UNION SELECT writer FROM revisions
		UNION SELECT namespace FROM changes UNION SELECT user FROM changes UNION SELECT resource FROM revisions
		UNION SELECT verb || CASE WHEN subresource <> '' THEN '/' || subresource ELSE '' END FROM audit_events
		UNION SELECT CAST(code AS TEXT) FROM audit_events WHERE code IS NOT NULL UNION SELECT id FROM changes`)
	if err != nil {
		t.Fatal(err)
	}
	return storetest.FilterSamples(vals)
}

// filtered is the ids of the changes that cond keeps, in order.
func filtered(t *testing.T, s *Store, cond string, args []any) []string {
	t.Helper()
	ids, err := column(context.Background(), s.r, `SELECT c.id FROM changes c WHERE `+cond+` ORDER BY c.id`, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, cond)
	}
	return ids
}

// TestFilterSameAsWrites: the filter read from the postings of
// change_terms keeps exactly the changes that the filter reading the
// writes kept, on a dozen recorded fixtures (each its own cluster), for
// every printable character, two-character and middle parts of every
// name, writer, namespace, user, resource and verb, the codes, % and _,
// and filters holding the separator of the changes' own texts; both for
// a database reconstructed in one run and in steps (incremental runs,
// whose postings refreshSearch stores again as changes grow).
func TestFilterSameAsWrites(t *testing.T) {
	t.Parallel()
	for _, steps := range []int{0, 7} {
		t.Run(fmt.Sprintf("steps=%d", steps), func(t *testing.T) {
			t.Parallel()
			fixtures := searchFixtures
			if steps > 0 {
				fixtures = fixtures[:4]
			}
			s := ingestClusters(t, fixtures, steps)
			var n int
			if err := s.r.QueryRow(`SELECT count(DISTINCT change) FROM change_terms`).Scan(&n); err != nil || n < 50 {
				t.Fatalf("postings of %d changes (%v)", n, err)
			}
			fs := filterSamples(t, s)
			if len(fs) < 300 {
				t.Fatalf("%d filters", len(fs))
			}
			matched, some := 0, 0
			for _, f := range fs {
				oc, oa := writesFilterCond(f)
				want := filtered(t, s, oc, oa)
				// Each way of reading the postings, whichever the
				// filter would choose.
				raw := strings.ToLower(f)
				verb, code := cpid.FilterWrites(f)
				terms, targs := filterTerms(raw, verb, code)
				for _, by := range []string{"", "TRUE", "FALSE"} {
					nc, na := filterCond(f, false)
					if by != "" {
						nc, na = filterCondBy(raw, terms, targs, by, nil)
					}
					if got := filtered(t, s, nc, na); !slices.Equal(got, want) {
						t.Errorf("filter %q (by change %q): %d changes, the writes' filter %d\ngot  %v\nwant %v", f, by, len(got), len(want), got, want)
					}
				}
				// The statements run, their gate before the changes:
				// the same count and page.
				q := cpid.ChangeQuery{Filter: strings.ToLower(f), Sort: "time", Limit: 1 << 20}
				n, err := reads{s.r, s}.ChangeCount(t.Context(), q)
				if err != nil {
					t.Fatal(err)
				}
				page, err := reads{s.r, s}.ChangePage(t.Context(), q)
				if err != nil {
					t.Fatal(err)
				}
				slices.Sort(page)
				if n != len(want) || !slices.Equal(page, want) {
					t.Errorf("filter %q: count %d and page %v, the writes' filter %d: %v", f, n, page, len(want), want)
				}
				// The filters that match on the writes alone, not on
				// the change's own row, are what the postings decide.
				own := filtered(t, s, `instr(`+searchText+`, ?) > 0`, []any{strings.ToLower(f)})
				if len(want) > len(own) {
					matched++
				}
				if len(want) > 0 {
					some++
				}
			}
			if matched < 100 || some < 200 {
				t.Fatalf("of %d filters, %d match a change, %d more than the changes' own rows: too few to compare", len(fs), some, matched)
			}
			t.Logf("%d filters, %d match a change, %d more than the changes' own rows", len(fs), some, matched)
		})
	}
}

// sortedSearch is the postings of change_terms in order, a line per
// change: its id, cluster and values (kind:term, sorted). It fails the
// test if a posting names a change or a value that is not there (a
// change deleted or stored again under another rowid left it behind).
func sortedSearch(t *testing.T, s *Store) string {
	t.Helper()
	var dangling int
	if err := s.r.QueryRow(`SELECT count(*) FROM change_terms WHERE change NOT IN (SELECT rowid FROM changes)
		OR term NOT IN (SELECT rowid FROM search_terms)`).Scan(&dangling); err != nil || dangling > 0 {
		t.Errorf("%d postings of no change or no value (%v)", dangling, err)
	}
	rows, err := s.r.Query(`SELECT c.id, c.cluster, group_concat(t.kind || ':' || t.term, char(31)) FROM change_terms p
		JOIN changes c ON c.rowid = p.change JOIN search_terms t ON t.rowid = p.term GROUP BY c.id ORDER BY c.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out strings.Builder
	for rows.Next() {
		var id, cluster, terms string
		if err := rows.Scan(&id, &cluster, &terms); err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(terms, "\x1f")
		slices.Sort(parts)
		fmt.Fprintln(&out, id, cluster, strconv.Quote(strings.Join(parts, "|")))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestSearchRows: the postings that incremental runs in steps store
// (refreshSearch, as changes grow and provisional writes are redone) are
// those a full rebuild in one transaction stores (fillSearch, after the
// bulk load), those of a full rebuild in steps, and those that migration
// 0019 stores for a database derived before it (by 0016, whose
// change_search it replaces); none names a change or value that is gone.
func TestSearchRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	files := storetest.InSteps(t, "../fixtures/instrumented/bundle")
	s := openTest(t)
	in := &ingest.Ingester{Sink: s}
	for _, f := range files {
		if _, err := in.Run(ctx, []string{f}); err != nil {
			t.Fatal(err)
		}
		if _, err := reconstruct.Run(ctx, s, reconstruct.Options{StepRows: 7, Family: ingest.Family}); err != nil {
			t.Fatal(err)
		}
	}
	steps := sortedSearch(t, s)
	searchTerms(t, s)
	if n := strings.Count(steps, "\n"); n < 5 {
		t.Fatalf("postings of %d changes", n)
	}
	// Every change with writes has postings: a name and a writer at least.
	var missing int
	if err := s.r.QueryRow(`SELECT count(*) FROM changes WHERE id IN (SELECT change_id FROM revisions)
		AND rowid NOT IN (SELECT change FROM change_terms)`).Scan(&missing); err != nil || missing > 0 {
		t.Errorf("%d changes with writes have no postings (%v)", missing, err)
	}
	for _, o := range []reconstruct.Options{{Full: true}, {Full: true, StepRows: 7}} {
		o.Family = ingest.Family
		if r, err := reconstruct.Run(ctx, s, o); err != nil || !r.Full {
			t.Fatalf("full rebuild: %v %+v", err, r)
		}
		if got := sortedSearch(t, s); got != steps {
			t.Errorf("full rebuild (%d rows a step): the postings differ from the runs in steps:\n%s", o.StepRows, diffLines(steps, got))
		}
	}
	// The database as migration 0018 left it (0016's change_search and
	// search_terms, made from the rows derived), then 0019 on it.
	terms := searchTerms(t, s)
	v16, err := migrationFS.ReadFile("migrations/0016_change_search.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TABLE change_terms`, `DROP TABLE search_terms`, `DROP TRIGGER changes_search_terms`,
		`DROP TRIGGER changes_search_terms_update`, string(v16), `DELETE FROM schema_migrations WHERE version = 19`} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sortedSearch(t, s); got != steps {
		t.Errorf("migration 0019: the postings differ from reconstruct's:\n%s", diffLines(steps, got))
	}
	if got := searchTerms(t, s); !slices.Equal(got, terms) {
		t.Errorf("migration 0019: search_terms\n%q\nreconstruct's\n%q", got, terms)
	}
	if _, err := s.r.Exec(`SELECT 1 FROM change_search`); err == nil {
		t.Error("migration 0019 left change_search")
	}
}

// searchTerms checks that search_terms holds every value of the changes'
// own rows and of their writes, and returns those values.
func searchTerms(t *testing.T, s *Store) []string {
	t.Helper()
	need, err := column(context.Background(), s.r, `SELECT 'o:' || lower(namespace) FROM changes UNION SELECT 'o:' || lower(name) FROM changes
		UNION SELECT 'o:' || lower(resource) FROM changes UNION SELECT 'o:' || lower(user) FROM changes UNION SELECT 'o:' || lower(cluster) FROM changes
		UNION SELECT 'i:' || lower(id) FROM changes WHERE lower(id) GLOB '*[^0-9a-f-]*'
		UNION SELECT 'w:' || lower(name) FROM revisions WHERE change_id IN (SELECT id FROM changes)
		UNION SELECT 'w:' || lower(writer) FROM revisions WHERE change_id IN (SELECT id FROM changes)
		UNION SELECT 'v:' || e.verb || CASE WHEN e.subresource <> '' THEN '/' || e.subresource ELSE '' END FROM revisions r
			JOIN audit_events e ON e.id = r.event_id WHERE r.change_id IN (SELECT id FROM changes)
		UNION SELECT 'k:' || e.code FROM revisions r JOIN audit_events e ON e.id = r.event_id
			WHERE r.change_id IN (SELECT id FROM changes) AND (e.code < 300 OR r.attempt <> 0)`)
	if err != nil {
		t.Fatal(err)
	}
	have, err := column(context.Background(), s.r, `SELECT kind || ':' || term FROM search_terms`)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range need {
		if !slices.Contains(have, n) {
			t.Errorf("search_terms lacks %q", n)
		}
	}
	if len(need) < 10 {
		t.Fatalf("%d values: %q", len(need), need)
	}
	return need
}

// diffLines is the first line where a and b differ.
func diffLines(a, b string) string {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(x), len(y)) {
		if x[i] != y[i] {
			return fmt.Sprintf("line %d:\n  want %s\n  got  %s", i+1, x[i], y[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(y), len(x))
}

// TestSearchRowsRedone: an incremental run redoes the writes received
// after the last run's cutoff, deleting them and the changes started
// after it first: a change that loses such a write, and a change deleted
// that the run does not make again, lose their postings (deriveTx.stale,
// provisionalSQL), though the run gives neither a write.
func TestSearchRowsRedone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	backups, _ := filepath.Glob("../fixtures/instrumented/bundle/audit/*.gz")
	if len(backups) < 2 {
		t.Fatalf("fixture files: %v", backups)
	}
	s := openTest(t)
	in := &ingest.Ingester{Sink: s}
	run := func(files ...string) {
		t.Helper()
		if _, err := in.Run(ctx, files); err != nil {
			t.Fatal(err)
		}
		if _, err := reconstruct.Run(ctx, s, reconstruct.Options{Family: ingest.Family}); err != nil {
			t.Fatal(err)
		}
	}
	run(backups...)
	var cutoff, event int64
	var name string
	if err := s.r.QueryRow(`SELECT CAST(value AS INTEGER) FROM reconstruct_state WHERE key = 'cutoff_ns'`).Scan(&cutoff); err != nil {
		t.Fatal(err)
	}
	// A write the next run redoes, given to a change of its own that
	// started before the cutoff (kept), and a change started after it
	// (deleted), each with its postings.
	err := s.r.QueryRow(`SELECT r.event_id, lower(r.name) FROM revisions r JOIN audit_events e ON e.id = r.event_id
		WHERE r.stage_ns > ?1 AND e.received_ns > ?1 AND r.change_id IS NOT NULL ORDER BY r.event_id LIMIT 1`, cutoff).Scan(&event, &name)
	if err != nil {
		t.Fatalf("a write after the cutoff %d: %v", cutoff, err)
	}
	for _, q := range []string{
		`INSERT INTO changes(id, event_id, started_ns, settled_ns, user, verb, api_group, resource, subresource, namespace, name, writes, objects, cluster)
			SELECT 'moved', event_id, started_ns, settled_ns, user, verb, api_group, resource, subresource, namespace, name, 1, 1, cluster
			FROM changes WHERE started_ns <= ?1 LIMIT 1`,
		`INSERT INTO changes(id, event_id, started_ns, settled_ns, user, verb, api_group, resource, subresource, namespace, name, writes, objects, cluster)
			SELECT 'gone', event_id, ?1 + 1, ?1 + 1, user, verb, api_group, resource, subresource, namespace, name, 1, 1, cluster
			FROM changes LIMIT 1`,
		`UPDATE revisions SET change_id = 'moved' WHERE event_id = ?2`,
		`INSERT INTO change_terms(term, change) SELECT (SELECT rowid FROM search_terms WHERE kind = 'w' LIMIT 1), rowid FROM changes WHERE id = 'gone'`,
	} {
		if _, err := s.w.ExecContext(ctx, q, cutoff, event); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := refreshSearch(ctx, tx, `["moved"]`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// The postings of both by their rowids: those of a change deleted
	// are not found by joining the changes.
	var gone, moved int64
	if err := s.r.QueryRow(`SELECT (SELECT rowid FROM changes WHERE id = 'gone'), (SELECT rowid FROM changes WHERE id = 'moved')`).Scan(&gone, &moved); err != nil {
		t.Fatal(err)
	}
	rows := func() []string {
		t.Helper()
		ids, err := column(ctx, s.r, `SELECT CASE p.change WHEN ?1 THEN 'gone' ELSE 'moved' END || ':' || t.kind || ':' || t.term
			FROM change_terms p JOIN search_terms t ON t.rowid = p.term WHERE p.change IN (?1, ?2) ORDER BY 1`, gone, moved)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if got := rows(); len(got) < 3 || !strings.HasPrefix(got[0], "gone:w:") || !slices.Contains(got, "moved:w:"+name) {
		t.Fatalf("postings before the run: %q", got)
	}
	run("../fixtures/instrumented/bundle/audit/audit.log")
	// 'gone' is deleted with its postings; the run may give its rowid to
	// a change it makes. 'moved' keeps its rowid and loses its postings.
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM changes WHERE id = 'gone'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d changes 'gone' (%v)", n, err)
	}
	if got := rows(); slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, "moved:") }) {
		t.Errorf("postings of a change that lost its writes: %q", got)
	}
	// Every posting is that of a full rebuild.
	after := sortedSearch(t, s)
	if _, err := reconstruct.Run(ctx, s, reconstruct.Options{Full: true, Family: ingest.Family}); err != nil {
		t.Fatal(err)
	}
	if got := sortedSearch(t, s); got != after {
		t.Errorf("the postings of the incremental run differ from a full rebuild's:\n%s", diffLines(got, after))
	}
}

// TestChangeStoredAgainKeepsRowid: a change that reconstruct stores again
// (insertChangeSQL on a change already there) keeps its rowid, which its
// postings name, and takes the new values; a replace would give it the
// next rowid and leave its postings behind.
func TestChangeStoredAgainKeepsRowid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := ingestClusters(t, []string{"basic"}, 0)
	var first, last int64
	if err := s.r.QueryRow(`SELECT min(id), max(id) FROM audit_events`).Scan(&first, &last); err != nil {
		t.Fatal(err)
	}
	store := func(id string, started, event int64) int64 {
		t.Helper()
		if _, err := s.w.ExecContext(ctx, insertChangeSQL, id, started, "user", "", "", event); err != nil {
			t.Fatal(err)
		}
		var rowid int64
		if err := s.r.QueryRow(`SELECT rowid FROM changes WHERE id = ?`, id).Scan(&rowid); err != nil {
			t.Fatal(err)
		}
		return rowid
	}
	a := store("again-a", 1, first)
	store("again-b", 2, first) // a is not the last rowid
	if got := store("again-a", 3, last); got != a {
		t.Errorf("stored again: rowid %d, was %d", got, a)
	}
	var started, event int64
	if err := s.r.QueryRow(`SELECT started_ns, event_id FROM changes WHERE id = 'again-a'`).Scan(&started, &event); err != nil || started != 3 || event != last {
		t.Errorf("stored again: started %d event %d (%v), want 3 and %d", started, event, err, last)
	}
}

// TestFilterNoChanges: values kept in search_terms (they are never
// removed) with no change left: the filter's gate passes, and it counts
// and lists none.
func TestFilterNoChanges(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	if _, err := s.w.Exec(`INSERT INTO search_terms(kind, term) VALUES ('w', 'web'), ('v', 'update'), ('o', 'default')`); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"web", "update", "def", "e"} {
		q := cpid.ChangeQuery{Filter: f, Sort: "time", Limit: 50}
		n, err := reads{s.r, s}.ChangeCount(t.Context(), q)
		if err != nil || n != 0 {
			t.Errorf("filter %q: count %d, %v", f, n, err)
		}
		page, err := reads{s.r, s}.ChangePage(t.Context(), q)
		if err != nil || len(page) != 0 {
			t.Errorf("filter %q: page %v, %v", f, page, err)
		}
	}
}
