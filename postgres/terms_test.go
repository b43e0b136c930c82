package postgres

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
	"github.com/cpid-dev/cpid/storetest"
)

// writesFilterCond is the filter's condition as it was before
// change_terms (migration 0019), a filter (argument arg, lowercase) read
// from the writes: the changes with a write whose name or writer holds it
// (here every write is read, where the filter skipped through the
// distinct values), the verbs and codes read from each change's writes
// and their events. TestFilterSameAsWrites holds the new one to it.
func writesFilterCond(filter string, arg int, args *[]any) string {
	cond := fmt.Sprintf(`(strpos(c.search, $%[1]d) > 0
		OR c.id IN (SELECT change_id FROM revisions WHERE change_id IS NOT NULL AND strpos(lower(name), $%[1]d) > 0)
		OR c.id IN (SELECT change_id FROM revisions WHERE change_id IS NOT NULL AND strpos(lower(writer), $%[1]d) > 0)`, arg)
	verb, code := cpid.FilterWrites(filter)
	if verb {
		cond += fmt.Sprintf(`
		OR EXISTS (SELECT 1 FROM revisions r JOIN audit_events e ON e.id = r.event_id WHERE r.change_id = c.id
			AND strpos(e.verb || CASE WHEN e.subresource <> '' THEN '/' || e.subresource ELSE '' END, $%d) > 0)`, arg)
	}
	if code != 0 {
		*args = append(*args, code)
		failed := ""
		if cpid.IsFailedCode(code) {
			failed = " AND r.attempt <> 0"
		}
		cond += fmt.Sprintf(`
		OR EXISTS (SELECT 1 FROM revisions r JOIN audit_events e ON e.id = r.event_id WHERE r.change_id = c.id%s AND e.code = $%d)`,
			failed, len(*args))
	}
	return cond + `)`
}

// termFixtures are the recorded fixtures the filter is compared on, each
// in a cluster of its own in one database.
var termFixtures = []string{"basic", "conflicts", "instrumented", "namespace-delete", "node-loss", "operator",
	"leader-change", "jobs", "drain-pdb", "statefulset"}

// ingestClusters stores each fixture in its cluster of one database and
// reconstructs each cluster (steps > 0: in steps of that many rows).
func ingestClusters(t *testing.T, fixtures []string, steps int) *Store {
	t.Helper()
	ctx := context.Background()
	s := openTest(t)
	for _, f := range fixtures {
		v := s.InCluster(f)
		sum, err := (&ingest.Ingester{Sink: v}).Run(ctx, []string{filepath.Join("..", "fixtures", f, "bundle")})
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
	vals := rowsOf(t, s, `SELECT name FROM revisions UNION SELECT writer FROM revisions
		UNION SELECT namespace FROM changes UNION SELECT "user" FROM changes UNION SELECT resource FROM revisions
		UNION SELECT verb || CASE WHEN subresource <> '' THEN '/' || subresource ELSE '' END FROM audit_events
		UNION SELECT code::text FROM audit_events WHERE code IS NOT NULL UNION SELECT id FROM changes`)
	return storetest.FilterSamples(vals)
}

// filteredIDs is the ids of the changes that a WHERE clause keeps, sorted.
func filteredIDs(t *testing.T, s *Store, where string, args []any) []string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT c.id FROM changes c `+where, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, where)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%v\n%s", err, where)
	}
	slices.Sort(ids)
	return ids
}

// TestFilterSameAsWrites: the filter read from the postings of
// change_terms, with its gate, keeps exactly the changes that the filter
// reading the writes kept, on ten recorded fixtures (each its own
// cluster), for every printable character, two-character and middle
// parts of every name, writer, namespace, user, resource, verb and id,
// the codes, % and _, and filters holding the separator of the changes'
// own texts; for the condition alone, the count and the page; both for a
// database reconstructed in one run and in steps (incremental runs, whose
// postings are stored again as changes grow and are redone).
func TestFilterSameAsWrites(t *testing.T) {
	t.Parallel()
	for _, steps := range []int{0, 7} {
		t.Run(fmt.Sprintf("steps=%d", steps), func(t *testing.T) {
			t.Parallel()
			fixtures := termFixtures
			if steps > 0 {
				fixtures = fixtures[:4]
			}
			s := ingestClusters(t, fixtures, steps)
			if n := len(rowsOf(t, s, `SELECT DISTINCT change::text FROM change_terms`)); n < 50 {
				t.Fatalf("postings of %d changes", n)
			}
			fs := filterSamples(t, s)
			if len(fs) < 300 {
				t.Fatalf("%d filters", len(fs))
			}
			matched, some := 0, 0
			for _, f := range fs {
				raw := strings.ToLower(f)
				oldArgs := []any{raw}
				want := filteredIDs(t, s, `WHERE `+writesFilterCond(raw, 1, &oldArgs), oldArgs)
				// The condition of a count and of a page (each way of
				// reading the postings a page may take), with and without
				// the gate.
				newArgs := []any{raw}
				fs := newFilterSQL(raw, 1, &newArgs)
				for _, where := range []string{fs.cond(false), fs.cond(true), fs.gate + ` AND ` + fs.cond(true),
					strings.Replace(fs.cond(true), `CASE WHEN`, `CASE WHEN TRUE OR`, 1),
					strings.Replace(fs.cond(true), `CASE WHEN`, `CASE WHEN FALSE AND`, 1)} {
					if got := filteredIDs(t, s, `WHERE `+where, newArgs); !slices.Equal(got, want) {
						t.Errorf("filter %q: %d changes, the writes' filter %d\ngot  %v\nwant %v\n%s", f, len(got), len(want), got, want, where)
					}
				}
				// The statements run, their gate before the changes:
				// the same count and page.
				q := cpid.ChangeQuery{Filter: raw, Sort: "time", Limit: 1 << 20}
				n, err := reads{s.pool, s}.ChangeCount(t.Context(), q)
				if err != nil {
					t.Fatal(err)
				}
				page, err := reads{s.pool, s}.ChangePage(t.Context(), q)
				if err != nil {
					t.Fatal(err)
				}
				slices.Sort(page)
				if n != len(want) || !slices.Equal(page, want) {
					t.Errorf("filter %q: count %d and page %v, the writes' filter %d: %v", f, n, page, len(want), want)
				}
				// The filters that match on the writes alone, not on
				// the change's own row, are what the postings decide.
				own := filteredIDs(t, s, `WHERE strpos(c.search, $1) > 0`, []any{raw})
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

// wantTermsSQL is every posting that the writes of the changes there
// make, as a line "change kind:value", from the writes themselves.
const wantTermsSQL = `SELECT DISTINCT c.id || ' ' || x.kind || ':' || x.term FROM changes c
	JOIN revisions r ON r.change_id = c.id JOIN audit_events e ON e.id = r.event_id,
	LATERAL (VALUES ('write', lower(r.name)), ('write', lower(r.writer)), ('verb', ` + cpid.FilterVerbSQL + `),
		('code', CASE WHEN e.code < 300 OR r.attempt <> 0 THEN e.code::text END)) x(kind, term)
	WHERE x.term IS NOT NULL`

// changeTerms is the postings of change_terms as wantTermsSQL's lines,
// sorted, after it checked that they are those the writes make and that
// none names a change or a value that is not there (one deleted, or left
// behind by a change redone).
func changeTerms(t *testing.T, s *Store, when string) []string {
	t.Helper()
	var dangling int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM change_terms p
		WHERE NOT EXISTS (SELECT 1 FROM changes c WHERE c.number = p.change)
		   OR NOT EXISTS (SELECT 1 FROM search_terms t WHERE t.id = p.term)`).Scan(&dangling); err != nil || dangling > 0 {
		t.Errorf("%s: %d postings of no change or no value (%v)", when, dangling, err)
	}
	got := rowsOf(t, s, `SELECT c.id || ' ' || t.kind || ':' || t.term FROM change_terms p JOIN search_terms t ON t.id = p.term
		JOIN changes c ON c.number = p.change`)
	if want := rowsOf(t, s, wantTermsSQL); !slices.Equal(got, want) {
		t.Errorf("%s: %d postings, the writes make %d: %s", when, len(got), len(want), firstDiff(got, want))
	}
	return got
}

// TestChangeTerms: the postings are those the writes make (none of a
// gone change or value) after incremental runs in steps (stored again as
// changes grow, and as writes are redone), full rebuilds in one
// transaction and in steps (the same postings), an expiry (none left of
// the cluster) and the full rebuild after it, and migration 0019 over a
// database as migration 0018 left it.
func TestChangeTerms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	files := storetest.InSteps(t, "../fixtures/instrumented/bundle")
	s := openTest(t)
	in := &ingest.Ingester{Sink: s}
	for i, f := range files {
		if _, err := in.Run(ctx, []string{f}); err != nil {
			t.Fatal(err)
		}
		if _, err := reconstruct.Run(ctx, s, reconstruct.Options{StepRows: 7, Family: ingest.Family}); err != nil {
			t.Fatal(err)
		}
		changeTerms(t, s, fmt.Sprintf("incremental run %d", i+1))
	}
	steps := changeTerms(t, s, "incremental runs")
	if n := len(steps); n < 50 {
		t.Fatalf("%d postings", n)
	}
	// Every change with writes has postings: a name and a writer at least.
	if missing := rowsOf(t, s, `SELECT id FROM changes WHERE id IN (SELECT change_id FROM revisions)
		AND number NOT IN (SELECT change FROM change_terms)`); len(missing) > 0 {
		t.Errorf("changes with writes and no postings: %q", missing)
	}
	for _, o := range []reconstruct.Options{{Full: true}, {Full: true, StepRows: 7}} {
		o.Family = ingest.Family
		if r, err := reconstruct.Run(ctx, s, o); err != nil || !r.Full {
			t.Fatalf("full rebuild: %v %+v", err, r)
		}
		if got := changeTerms(t, s, fmt.Sprintf("full rebuild, %d rows a step", o.StepRows)); !slices.Equal(got, steps) {
			t.Errorf("full rebuild (%d rows a step): the postings differ from the runs in steps: %s", o.StepRows, firstDiff(got, steps))
		}
	}

	// The database as migration 0018 left it, then 0019 on it.
	for _, q := range []string{`DROP TABLE change_terms`, `DELETE FROM search_terms WHERE kind IN ('write', 'verb', 'code')`,
		`ALTER TABLE search_terms DROP COLUMN id`, `ALTER TABLE changes DROP COLUMN number`,
		`CREATE INDEX changes_search ON changes(started_ns) INCLUDE (search, id, cluster)`,
		`DELETE FROM schema_migrations WHERE version >= 19`} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	vacuums := func() (n [2]int64) {
		t.Helper()
		if err := s.pool.QueryRow(ctx, `SELECT sum(vacuum_count), sum(analyze_count) FROM pg_stat_user_tables
			WHERE relname IN ('changes', 'change_terms', 'search_terms')`).Scan(&n[0], &n[1]); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := vacuums()
	if err := s.migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := changeTerms(t, s, "migration 0019"); !slices.Equal(got, steps) {
		t.Errorf("migration 0019: the postings differ from reconstruct's: %s", firstDiff(got, steps))
	}
	// The tables it rewrote and filled are vacuumed and analyzed after
	// (migrationsAfter), once each: the manual counts, never autovacuum's.
	// What the vacuum leaves all visible is not asserted: a snapshot older
	// than the migration (autovacuum analyzing this database's events
	// meanwhile, on a loaded machine) rightly keeps its rows from being
	// marked, as it would on a user's server.
	if got := vacuums(); got != [2]int64{before[0] + 3, before[1] + 3} {
		t.Errorf("migration 0019: vacuums and analyzes of its 3 tables %v -> %v, want 3 more of each", before, got)
	}
	var visible, pages int
	if err := s.pool.QueryRow(ctx, `SELECT relallvisible, relpages FROM pg_class WHERE oid = 'changes'::regclass`).Scan(&visible, &pages); err == nil {
		t.Logf("after migration 0019, %d of the %d pages of changes are all visible", visible, pages)
	}

	// An expiry deletes the cluster's changes and their postings; the
	// full rebuild after it stores those of the changes left.
	var cutoff int64
	if err := s.pool.QueryRow(ctx, `SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY received_ns) FROM audit_events`).Scan(&cutoff); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InCluster(s.own()).Expire(ctx, cutoff, false); err != nil {
		t.Fatal(err)
	}
	if left := changeTerms(t, s, "expire"); len(left) > 0 {
		t.Errorf("expire left %d postings", len(left))
	}
	if _, err := reconstruct.Run(ctx, s, reconstruct.Options{Family: ingest.Family}); err != nil {
		t.Fatal(err)
	}
	if got := changeTerms(t, s, "rebuild after expire"); len(got) == 0 {
		t.Error("no postings after the rebuild that followed the expiry")
	}
}

// TestChangeTermsRedone: a run that redoes the writes received after a
// time and stores nothing else leaves the postings those left make: none
// of the changes it deleted (started after the time), and for the changes
// that lost writes, those of the writes they keep. (Runs that store the
// same writes again give each change its postings again when they
// summarize it, hiding either.)
func TestChangeTermsRedone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t)
	if _, err := (&ingest.Ingester{Sink: s}).Run(ctx, []string{"../fixtures/operator/bundle"}); err != nil {
		t.Fatal(err)
	}
	if _, err := reconstruct.Run(ctx, s, reconstruct.Options{Family: ingest.Family}); err != nil {
		t.Fatal(err)
	}
	before := changeTerms(t, s, "the first run")
	// The time: the middle of the writes that changes started before
	// have, so that some changes go and some lose writes.
	var redo int64
	if err := s.pool.QueryRow(ctx, `SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY e.received_ns)
		FROM revisions r JOIN audit_events e ON e.id = r.event_id JOIN changes c ON c.id = r.change_id
		WHERE c.started_ns < e.received_ns`).Scan(&redo); err != nil {
		t.Fatal(err)
	}
	gone := rowsOf(t, s, fmt.Sprintf(`SELECT id FROM changes WHERE started_ns > %d`, redo))
	lose := rowsOf(t, s, fmt.Sprintf(`SELECT DISTINCT c.id FROM changes c JOIN revisions r ON r.change_id = c.id
		JOIN audit_events e ON e.id = r.event_id WHERE c.started_ns <= %[1]d AND r.stage_ns > %[1]d AND e.received_ns > %[1]d`, redo))
	if len(gone) == 0 || len(lose) == 0 {
		t.Fatalf("redo from %d: %d changes go, %d lose writes", redo, len(gone), len(lose))
	}
	w, err := s.Watermark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Derive(ctx, cpid.DeriveMode{RedoNS: redo})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Finish(ctx, w); err != nil {
		t.Fatal(err)
	}
	if after := changeTerms(t, s, "redone"); len(after) == 0 || len(after) >= len(before) {
		t.Errorf("redone from %d (%d changes gone, %d losing writes): %d postings, %d before", redo, len(gone), len(lose), len(after), len(before))
	}
}
