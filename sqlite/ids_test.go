package sqlite

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

// checkCPIDIDs compares cpid_ids with the CPIDs of the merge graph
// counted in Go: every CPID once, with the rows that name it and the
// characters it shares with the next (cpid.CPIDSharedCap at most).
func checkCPIDIDs(t *testing.T, s *Store, when string) {
	t.Helper()
	ctx := context.Background()
	all, err := column(ctx, s.r, `SELECT cpid FROM mergelogs UNION ALL SELECT source_cpid FROM mergelog_sources`)
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]int{}
	for _, c := range all {
		refs[c]++
	}
	var want []string
	ids := slices.Sorted(func(yield func(string) bool) {
		for c := range refs {
			if !yield(c) {
				return
			}
		}
	})
	for i, c := range ids {
		shared := 0
		if i+1 < len(ids) {
			shared = min(cpid.UniqueLength([]string{c, ids[i+1]}, 0)-1, cpid.CPIDSharedCap)
		}
		want = append(want, strings.Join([]string{c, strconv.Itoa(refs[c]), strconv.Itoa(shared)}, " "))
	}
	got, err := column(ctx, s.r, `SELECT cpid || ' ' || refs || ' ' || shared FROM cpid_ids ORDER BY cpid`)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: cpid_ids (%d rows) differs from the CPIDs counted (%d)\ngot  %.600v\nwant %.600v", when, len(got), len(want), got, want)
	}
}

// checkIDLength compares cpid.IDLength, which reads cpid_ids, with the
// length counted from every CPID (cpid.UniqueLength), for ids given that
// are CPIDs, changes' ids, or neither but close to some.
func checkIDLength(t *testing.T, s *Store, when string) {
	t.Helper()
	ctx := context.Background()
	all, err := s.CPIDs(ctx, "", math.MaxInt32)
	if err != nil {
		t.Fatal(err)
	}
	listings := [][]string{nil, {"zzz"}, {""}}
	for i, c := range all {
		if i%7 == 0 {
			listings = append(listings, []string{c}, []string{c[:len(c)/2]}, []string{c + "0", c[:len(c)-1]},
				[]string{c[:len(c)-1] + "~", all[len(all)-1-i]})
		}
	}
	for _, listed := range listings {
		for _, m := range []int{0, 1, 8} {
			got, err := cpid.IDLength(ctx, s, m, listed...)
			if err != nil {
				t.Fatal(err)
			}
			if want := cpid.UniqueLength(append(slices.Clone(all), listed...), m); got != want {
				t.Errorf("%s: IDLength(min %d, %q) = %d, want %d (from %d CPIDs)", when, m, listed, got, want, len(all))
			}
		}
	}
}

// TestCPIDIDs: the triggers of migration 0013 keep cpid_ids as the
// CPIDs of the merge graph are written, replaced and deleted, and
// IDLength reads from it the length it counted from every CPID before;
// past cpid.CPIDSharedCap characters shared it counts from the CPIDs again.
func TestCPIDIDs(t *testing.T) {
	s := ingestFixture(t)
	ctx := context.Background()
	checkCPIDIDs(t, s, "reconstructed")
	checkIDLength(t, s, "reconstructed")
	p, err := s.CPIDPrefixes(ctx, nil)
	if err != nil || !p.Known {
		t.Fatalf("CPIDPrefixes on the fixture: %+v, %v: want known", p, err)
	}

	all, err := s.CPIDs(ctx, "", math.MaxInt32)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 10 {
		t.Fatalf("%d CPIDs: the fixture was not reconstructed", len(all))
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := s.w.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
	// CPIDs that share many characters with one of the fixture's, added
	// as mergelogs and as sources, then renamed and deleted.
	base := all[len(all)/2]
	long := base + strings.Repeat("x", 50)
	exec(`INSERT INTO mergelogs(cpid, ts_ns, service, origin) VALUES (?1 || 'a', 1, 't', 'test'), (?1 || 'b', 1, 't', 'test')`, base)
	exec(`INSERT INTO mergelog_sources(mergelog_id, pos, source_cpid) SELECT max(id), 99, ?1 || 'a' FROM mergelogs`, base)
	checkCPIDIDs(t, s, "added")
	checkIDLength(t, s, "added")
	exec(`UPDATE mergelogs SET cpid = ?2 WHERE cpid = ?1 || 'b'`, base, long+"1")
	exec(`INSERT INTO mergelogs(cpid, ts_ns, service, origin) VALUES (?1, 1, 't', 'test')`, long+"2")
	checkCPIDIDs(t, s, "renamed")
	checkIDLength(t, s, "renamed")
	if p, err := s.CPIDPrefixes(ctx, nil); err != nil || p.Known {
		t.Errorf("CPIDPrefixes with two CPIDs sharing %d characters: %+v, %v: want unknown", len(long), p, err)
	}
	exec(`DELETE FROM mergelog_sources WHERE pos = 99`)
	exec(`DELETE FROM mergelogs WHERE cpid = ?`, long+"1")
	checkCPIDIDs(t, s, "deleted")
	checkIDLength(t, s, "deleted")
	if err := s.DeleteMergelogs(ctx, append(all[:len(all)/3:len(all)/3], long+"2", base+"a")); err != nil {
		t.Fatal(err)
	}
	checkCPIDIDs(t, s, "DeleteMergelogs")
	checkIDLength(t, s, "DeleteMergelogs")

	// What the migration fills an existing database's table with.
	mig, err := os.ReadFile(filepath.Join("migrations", "0013_cpid_ids.sql"))
	if err != nil {
		t.Fatal(err)
	}
	fill := string(mig)
	fill = fill[strings.Index(fill, "INSERT INTO cpid_ids"):strings.Index(fill, "CREATE TRIGGER")]
	exec(`DELETE FROM cpid_ids`)
	exec(fill)
	checkCPIDIDs(t, s, "migrated")

	// A second cluster's bundle, rebuilt in full (a bulk load, which
	// drops the triggers and counts every CPID at its end) while the first
	// cluster's merge graph stays, then the first rebuilt again.
	other := s.InCluster("other")
	if sum, err := (&ingest.Ingester{Sink: other}).Run(ctx, []string{"../fixtures/instrumented/bundle"}); err != nil || sum.Written.Audits == 0 {
		t.Fatalf("ingest into a second cluster: %+v, %v", sum.Written, err)
	}
	for _, st := range []*Store{other, s} {
		if _, err := reconstruct.Run(ctx, st, reconstruct.Options{Family: ingest.Family, Full: true}); err != nil {
			t.Fatal(err)
		}
		checkCPIDIDs(t, s, "rebuilt "+st.own())
		checkIDLength(t, s, "rebuilt "+st.own())
	}
	var clusters int
	if err := s.r.QueryRowContext(ctx, `SELECT count(DISTINCT cluster) FROM mergelogs`).Scan(&clusters); err != nil || clusters != 2 {
		t.Fatalf("mergelogs of %d clusters (%v): want 2", clusters, err)
	}
	exec(`INSERT INTO mergelogs(cpid, ts_ns, service, origin) VALUES (?1, 1, 't', 'test')`, long+"3")
	checkCPIDIDs(t, s, "added after the rebuilds (the triggers are back)")

	// A full rebuild again: cleared and written back.
	exec(`DELETE FROM mergelog_sources`)
	exec(`DELETE FROM mergelogs`)
	checkCPIDIDs(t, s, "emptied")
	checkIDLength(t, s, "emptied")
}

// TestCPIDPrefixesIndexUsed: IDLength's reads of cpid_ids are a seek
// each, never a scan of every CPID.
func TestCPIDPrefixesIndexUsed(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	p := queryPlan(t, s, idStatsSQL)
	if !strings.Contains(p, "SEARCH cpid_ids USING COVERING INDEX cpid_ids_shared") {
		t.Errorf("plan: %s\nwant the largest shared from cpid_ids_shared", p)
	}
	p = queryPlan(t, s, idsNearSQL, `["a"]`)
	if !strings.Contains(p, "SEARCH cpid_ids USING PRIMARY KEY (cpid<?)") || !strings.Contains(p, "SEARCH cpid_ids USING PRIMARY KEY (cpid>?)") {
		t.Errorf("plan: %s\nwant a seek in cpid_ids", p)
	}
}

// TestMergelogsCPIDIndexUsed: the walks of the merge DAG (the change
// view's origins and descendants, query related and origins) find a
// CPID's mergelogs through mergelogs_cpid (migration 0013), not through an
// automatic index of every mergelog built for each walk.
func TestMergelogsCPIDIndexUsed(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	for _, walk := range []string{ancestorsOf("g", "?"), descendants("g", "?")} {
		p := queryPlan(t, s, walk+` SELECT DISTINCT COALESCE(change_id, '') FROM revisions WHERE cpid IN (SELECT cpid FROM g)`, "x")
		if strings.Contains(p, "AUTOMATIC") || strings.Contains(p, "SCAN m") {
			t.Errorf("plan: %s\nwant no scan of mergelogs", p)
		}
	}
	p := queryPlan(t, s, ancestorsOf("g", "?")+` SELECT 1 FROM g`, "x")
	if !strings.Contains(p, "SEARCH m USING") || !strings.Contains(p, "mergelogs_cpid (cpid=?)") {
		t.Errorf("ancestors, plan: %s\nwant mergelogs_cpid", p)
	}
}

// TestIDPrefixIndexUsed: a change named by the start of its id (every
// command that takes a change id) is found by a range of the changes'
// primary key, not by reading every change's id.
func TestIDPrefixIndexUsed(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	where, args := s.changeFilter(cpid.ChangeQuery{IDPrefix: "8f3a"}, true)
	p := queryPlan(t, s, `SELECT c.id FROM changes c `+where, args...)
	if !strings.Contains(p, "SEARCH c USING COVERING INDEX sqlite_autoindex_changes_1 (id>? AND id<?)") {
		t.Errorf("plan: %s\nwant a range of the changes' ids", p)
	}
}
