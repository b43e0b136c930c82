package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestWritesIndexUsed: the queries of the writes find them through the
// partial index audit_events_writes, which SQLite uses only when a query
// repeats its WHERE word for word (writeTerms, migration 0011). A change
// to either alone makes reconstruct read every event and sort.
func TestWritesIndexUsed(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	for _, q := range []string{
		`SELECT e.id FROM audit_events e WHERE e.received_ns > 1 AND e.id <= 9 AND e.cluster = 'c' AND ` +
			writeTerms("e") + ` ORDER BY e.received_ns, e.id`,
		`SELECT COALESCE(max(received_ns), 0) FROM audit_events WHERE id <= 9 AND ` + writeTerms("") + ` AND cluster = 'c'`,
	} {
		rows, err := s.r.QueryContext(ctx, `EXPLAIN QUERY PLAN `+q)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if p := strings.Join(plan, "; "); !strings.Contains(p, "INDEX audit_events_writes") {
			t.Errorf("%s\nplan: %s, want the index audit_events_writes", q, p)
		}
	}
}

// TestMigrationNotice: opening a database of an older schema says each
// migration before it runs it (a rebuild may take a while); a new
// database is created silently; the writer's sorts go back to memory.
func TestMigrationNotice(t *testing.T) {
	ctx := context.Background()
	var said []string
	notice := cpid.WithNotice(func(s string) { said = append(said, s) })
	old, path := openAt(t, 9)
	old.Close()
	s, err := Open(ctx, path, notice)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ms, _ := migrations()
	if len(said) != len(ms)-9 || !strings.Contains(said[0], "schema v10 (0010_hash_index.sql)") {
		t.Errorf("upgrading a v9 database said %q", said)
	}
	var temp, cache int
	s.w.QueryRowContext(ctx, `PRAGMA temp_store`).Scan(&temp)
	s.w.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&cache)
	if temp != 2 || cache != -writerCacheKiB {
		t.Errorf("the writer after migrating: temp_store %d, cache_size %d; want 2 (memory), %d", temp, cache, -writerCacheKiB)
	}
	said = nil
	s2, err := Open(ctx, filepath.Join(t.TempDir(), "new.db"), notice)
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if len(said) != 0 {
		t.Errorf("a new database said %q", said)
	}
}
