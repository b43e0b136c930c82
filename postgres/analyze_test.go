package postgres

import (
	"context"
	"testing"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

// TestFullRebuildAnalyzes: a full rebuild leaves the planner's statistics
// of the tables it filled, and of the events it read, gathered after its
// rows (ANALYZE, not autovacuum's some time later); an incremental run
// analyzes nothing.
func TestFullRebuildAnalyzes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t)
	if _, err := (&ingest.Ingester{Sink: s}).Run(ctx, []string{"../fixtures/basic/bundle"}); err != nil {
		t.Fatal(err)
	}
	// analyzed counts the tables analyzed by a statement (not
	// autovacuum) at or after the time the server gives now.
	analyzed := func(since string) int {
		t.Helper()
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_user_tables WHERE last_analyze >= $1::timestamptz
			AND relname IN ('audit_events', 'revisions', 'changes', 'mergelogs', 'mergelog_sources', 'cpid_ids', 'search_terms',
				'reconstruct_objects', 'anomalies')`, since).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	now := func() string {
		t.Helper()
		var ts string
		if err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()::text`).Scan(&ts); err != nil {
			t.Fatal(err)
		}
		return ts
	}
	start := now()
	if r, err := reconstruct.Run(ctx, s, reconstruct.Options{Family: ingest.Family}); err != nil || !r.Full {
		t.Fatalf("first run: %v %+v", err, r)
	}
	if n := analyzed(start); n != 9 {
		t.Errorf("after a full rebuild, %d of the 9 tables analyzed", n)
	}
	start = now()
	if r, err := reconstruct.Run(ctx, s, reconstruct.Options{Family: ingest.Family}); err != nil || r.Full {
		t.Fatalf("second run: %v %+v", err, r)
	}
	if n := analyzed(start); n != 0 {
		t.Errorf("after an incremental run, %d tables analyzed", n)
	}
}
