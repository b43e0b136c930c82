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
		if plan := queryPlan(t, s, q, s.own(), redo); !strings.Contains(plan, "audit_events_writes") {
			t.Errorf("%s\nreads the events without audit_events_writes:\n%s", q, plan)
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
// the newest write and the late ones, in a database where another
// cluster's writes came after this one's (the redo's deletes:
// TestRedoIndexUsed).
func TestWritesByCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openTest(t)
	a, b := st.InCluster("a"), st.InCluster("b")
	if _, err := (&ingest.Ingester{Sink: a}).Run(ctx, []string{"../fixtures/basic/bundle"}); err != nil {
		t.Fatal(err)
	}
	if _, err := (&ingest.Ingester{Sink: b}).Run(ctx, []string{"../fixtures/node-loss/bundle"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.pool.Exec(ctx, `ANALYZE audit_events`); err != nil {
		t.Fatal(err)
	}
	var upTo, cutoff int64
	if err := a.pool.QueryRow(ctx, `SELECT max(id), percentile_disc(0.5) WITHIN GROUP (ORDER BY received_ns)
		FROM audit_events WHERE cluster = 'a'`).Scan(&upTo, &cutoff); err != nil {
		t.Fatal(err)
	}
	byCluster := "Index Cond: ((cluster = "
	for name, plan := range map[string]string{
		"the newest write": queryPlan(t, a, latestWriteSQL, upTo, "a"),
		"the late writes":  queryPlan(t, a, lateSQL, 0, cutoff, 0, "x", "a"),
	} {
		if !strings.Contains(plan, "audit_events_writes") || !strings.Contains(plan, byCluster) {
			t.Errorf("%s, plan:\n%s\nwant audit_events_writes by the cluster", name, plan)
		}
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
