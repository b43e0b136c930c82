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

// filterSamples are filters to try on s: every printable ASCII character,
// the fixed cases, and the values the changes and writes hold (names,
// writers, namespaces, users, verbs, codes, ids) whole, in upper case, and cut
// into their first two characters and a part from their middle.
func filterSamples(t *testing.T, s *Store) []string {
	t.Helper()
	set := map[string]bool{}
	for c := ' '; c <= '~'; c++ {
		set[string(c)] = true
	}
	for _, f := range []string{"web", "WEB", "update/status", "patch/scale", "upd", "apply", "deletecollection", "201", "409", "404",
		"500", "422", "200", "999", "099", "%", "_", "w_b", "%e%", "no-such-thing", "ns", "n", "-", "--", "kube-", "system:",
		"kubernetes-admin", "\x1f", "n\x1fk", "default\x1f", "update/\x1f", "\x1fpods"} {
		set[f] = true
	}
	vals, err := column(context.Background(), s.r, `SELECT name FROM revisions UNION SELECT writer FROM revisions
		UNION SELECT namespace FROM changes UNION SELECT user FROM changes UNION SELECT resource FROM revisions
		UNION SELECT verb || CASE WHEN subresource <> '' THEN '/' || subresource ELSE '' END FROM audit_events
		UNION SELECT CAST(code AS TEXT) FROM audit_events WHERE code IS NOT NULL UNION SELECT id FROM changes`)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		if v == "" {
			continue
		}
		set[v] = true
		set[strings.ToUpper(v)] = true
		if len(v) >= 2 {
			set[v[:2]] = true
		}
		if len(v) >= 6 {
			set[v[len(v)/2-2:len(v)/2+1]] = true
		}
	}
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
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

// TestFilterSameAsWrites: the filter read from change_search keeps
// exactly the changes that the filter reading the writes kept, on a
// dozen recorded fixtures (each its own cluster), for every printable
// character, two-character and middle parts of every name, writer,
// namespace, user, resource and verb, the codes, % and _, and filters
// holding change_search's separator; both for a database reconstructed
// in one run and in steps (incremental runs, whose rows refreshSearch
// stores again as changes grow).
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
			if err := s.r.QueryRow(`SELECT count(*) FROM change_search`).Scan(&n); err != nil || n < 50 {
				t.Fatalf("%d change_search rows (%v)", n, err)
			}
			fs := filterSamples(t, s)
			if len(fs) < 300 {
				t.Fatalf("%d filters", len(fs))
			}
			matched, some := 0, 0
			for _, f := range fs {
				oc, oa := writesFilterCond(f)
				nc, na := filterCond(f)
				want, got := filtered(t, s, oc, oa), filtered(t, s, nc, na)
				if !slices.Equal(got, want) {
					t.Errorf("filter %q: %d changes, the writes' filter %d\ngot  %v\nwant %v", f, len(got), len(want), got, want)
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
				// the change's own row, are what change_search decides.
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

// sortedSearch is change_search in order, each text of a row with its values
// sorted, so that two dumps compare whatever order group_concat gave them.
func sortedSearch(t *testing.T, s *Store) string {
	t.Helper()
	rows, err := s.r.Query(`SELECT change_id, cluster, names, writers, verbs, codes FROM change_search ORDER BY change_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out strings.Builder
	for rows.Next() {
		var v [6]string
		if err := rows.Scan(&v[0], &v[1], &v[2], &v[3], &v[4], &v[5]); err != nil {
			t.Fatal(err)
		}
		for i := 2; i < 6; i++ {
			parts := strings.Split(strings.Trim(v[i], "\x1f"), "\x1f")
			slices.Sort(parts)
			v[i] = strconv.Quote(strings.Join(parts, "|"))
		}
		fmt.Fprintln(&out, strings.Join(v[:], " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestSearchRows: the change_search rows that incremental runs in steps
// store (refreshSearch, as changes grow and provisional writes are
// redone) are those a full rebuild in one transaction stores (fillSearch,
// after the bulk load), those of a full rebuild in steps, and those that
// migration 0016 stores for a database derived before it; a row holds each
// name, writer, verb and code once.
func TestSearchRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	backups, _ := filepath.Glob("../fixtures/instrumented/bundle/audit/*.gz")
	logs, _ := filepath.Glob("../fixtures/instrumented/bundle/logs/*")
	files := append(append(backups, logs...), "../fixtures/instrumented/bundle/audit/audit.log")
	if len(backups) < 2 || len(logs) < 2 {
		t.Fatalf("fixture files: %v", files)
	}
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
		t.Fatalf("%d change_search rows", n)
	}
	// Every change with writes has its row, and a row's values are
	// distinct.
	var missing int
	if err := s.r.QueryRow(`SELECT count(*) FROM changes WHERE id IN (SELECT change_id FROM revisions) AND id NOT IN (SELECT change_id FROM change_search)`).Scan(&missing); err != nil || missing > 0 {
		t.Errorf("%d changes with writes have no change_search row (%v)", missing, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(steps), "\n") {
		for _, q := range strings.Fields(line)[2:] {
			v, _ := strconv.Unquote(q)
			parts := strings.Split(v, "|")
			if len(slices.Compact(slices.Clone(parts))) != len(parts) {
				t.Errorf("values repeated in %s", line)
			}
		}
	}
	for _, o := range []reconstruct.Options{{Full: true}, {Full: true, StepRows: 7}} {
		o.Family = ingest.Family
		if r, err := reconstruct.Run(ctx, s, o); err != nil || !r.Full {
			t.Fatalf("full rebuild: %v %+v", err, r)
		}
		if got := sortedSearch(t, s); got != steps {
			t.Errorf("full rebuild (%d rows a step): change_search differs from the runs in steps:\n%s", o.StepRows, diffLines(steps, got))
		}
	}
	// Migration 0016 again, on the rows derived.
	terms := searchTerms(t, s)
	for _, q := range []string{`DROP TABLE change_search`, `DROP TABLE search_terms`, `DROP TRIGGER changes_search_terms`,
		`DROP TRIGGER changes_search_terms_update`, `DELETE FROM schema_migrations WHERE version = 16`} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sortedSearch(t, s); got != steps {
		t.Errorf("migration 0016: change_search differs from reconstruct's:\n%s", diffLines(steps, got))
	}
	if got := searchTerms(t, s); !slices.Equal(got, terms) {
		t.Errorf("migration 0016: search_terms\n%q\nreconstruct's\n%q", got, terms)
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
// that the run does not make again, lose their change_search rows
// (deriveTx.stale), though the run gives neither a write.
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
	// (deleted), each with its change_search row.
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
		`INSERT INTO change_search(change_id, cluster, names, writers, verbs, codes) VALUES ('gone', 'default', 'x', 'x', 'x', '')`,
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
	rows := func() []string {
		t.Helper()
		ids, err := column(ctx, s.r, `SELECT change_id || ':' || names FROM change_search WHERE change_id IN ('moved', 'gone') ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if got := rows(); !slices.Equal(got, []string{"gone:x", "moved:" + name}) {
		t.Fatalf("change_search rows before the run: %q", got)
	}
	run("../fixtures/instrumented/bundle/audit/audit.log")
	if got := rows(); len(got) > 0 {
		t.Errorf("change_search rows of changes that lost their writes: %q", got)
	}
}
