package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

// TestRedoIndexUsed: what an incremental run deletes first (redoSQL) finds
// the mergelogs of the writes after the cutoff through audit_events_writes
// (the writes in receive order), where it read every event (1.8 s for a
// run on 1M events, every run of a live tail's), and deletes the same rows.
// The cutoff is near the end, as an incremental run's is (SettleLag before
// the newest write): from half of the writes on, a scan of the mergelogs is
// the cheaper plan, and a run that far back is a full rebuild.
func TestRedoIndexUsed(t *testing.T) {
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
	var redo int64
	if err := s.pool.QueryRow(ctx, `SELECT percentile_disc(0.9) WITHIN GROUP (ORDER BY received_ns) FROM audit_events`).Scan(&redo); err != nil {
		t.Fatal(err)
	}
	for _, q := range redoSQL {
		if !strings.Contains(q, "FROM mergelogs") {
			continue
		}
		// By the cluster too (migration 0020): by time alone the scan would
		// walk every cluster's writes after the cutoff.
		if plan := queryPlan(t, s, q, s.own(), redo); !strings.Contains(plan, "audit_events_writes") ||
			!strings.Contains(plan, "Index Cond: ((cluster = ") {
			t.Errorf("%s\nreads the events without audit_events_writes by the cluster:\n%s", q, plan)
		}
	}
	// The same mergelogs as all the writes after the cutoff name.
	var want, got int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM mergelogs m JOIN audit_events e ON e.id = m.event_id
		WHERE e.received_ns > $1`, redo).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if want == 0 {
		t.Fatal("no mergelog after the middle of the fixture")
	}
	for _, q := range redoSQL {
		tag, err := s.pool.Exec(ctx, q, s.own(), redo)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if strings.HasPrefix(q, "DELETE FROM mergelogs") {
			got = tag.RowsAffected()
		}
	}
	if got != want {
		t.Errorf("redo deleted %d mergelogs, want the %d of the writes after the cutoff", got, want)
	}
}

// TestWritesByCluster: a cluster's reads of its writes go down
// audit_events_writes by the cluster (migration 0020), not through every
// cluster's writes in the time range with the cluster tested row by row:
// the newest write, in a database where another cluster's events came
// after this one's (the redo's deletes: TestRedoIndexUsed).
func TestWritesByCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openTest(t)
	a, b := st.InCluster("a"), st.InCluster("b")
	// b's events are stored first and were received later (2026-11-24,
	// a's 2026-11-22): a's ids come last, as a run's newest cluster's
	// do, and its times first.
	if _, err := (&ingest.Ingester{Sink: b}).Run(ctx, []string{"../fixtures/node-loss/bundle"}); err != nil {
		t.Fatal(err)
	}
	if _, err := (&ingest.Ingester{Sink: a}).Run(ctx, []string{"../fixtures/basic/bundle"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.pool.Exec(ctx, `ANALYZE audit_events`); err != nil {
		t.Fatal(err)
	}
	var upTo int64
	if err := a.pool.QueryRow(ctx, `SELECT max(id) FROM audit_events WHERE cluster = 'a'`).Scan(&upTo); err != nil {
		t.Fatal(err)
	}
	// As a run asks it: the newest write up to the last event. (The
	// evidence's reads, audit_events_reads by the cluster on a million
	// events, are the primary key's on a fixture this small.)
	if plan := queryPlan(t, a, latestWriteSQL, upTo, "a"); !strings.Contains(plan, "audit_events_writes") ||
		!strings.Contains(plan, "Index Cond: ((cluster = ") {
		t.Errorf("the newest write, plan:\n%s\nwant audit_events_writes by the cluster", plan)
	}
	// And the newest write is the cluster's own, not the other's.
	la, err := a.LatestWrite(ctx, upTo)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	if err := a.pool.QueryRow(ctx, `SELECT max(received_ns) FROM audit_events WHERE cluster = 'a'
		AND `+writeTerms).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if la != want || la == 0 {
		t.Errorf("the newest write of a: %d, want %d", la, want)
	}
}
