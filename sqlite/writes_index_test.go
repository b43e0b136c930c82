package sqlite

import (
	"context"
	"strings"
	"testing"
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
