package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

// TestSearchTermsLock: a statement that adds a value to search_terms (one
// table for every cluster) takes cpid_ids' transaction advisory lock
// first (migration 0018), so that two clusters' runs never each hold a
// value the other adds later (a deadlock); one whose values are all there
// takes none, so that runs of known values do not queue.
func TestSearchTermsLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openTest(t)
	a := st.InCluster("a")
	if _, err := (&ingest.Ingester{Sink: a}).Run(ctx, []string{"../fixtures/basic/bundle"}); err != nil {
		t.Fatal(err)
	}
	if _, err := reconstruct.Run(ctx, a, reconstruct.Options{Family: ingest.Family}); err != nil {
		t.Fatal(err)
	}
	var id string
	if err := st.pool.QueryRow(ctx, `SELECT id FROM changes WHERE cluster = 'a' ORDER BY id LIMIT 1`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	// holds reports whether the transaction's backend holds the lock
	// after stmt.
	holds := func(stmt string) bool {
		t.Helper()
		tx, err := st.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, stmt, id); err != nil {
			t.Fatal(err)
		}
		var held bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory'
			AND classid = 1668311416 AND objid = 0 AND granted)`).Scan(&held); err != nil {
			t.Fatal(err)
		}
		return held
	}
	if !holds(`UPDATE changes SET namespace = 'a-namespace-no-change-had' WHERE id = $1`) {
		t.Error("a statement adding a value to search_terms holds no advisory lock: two clusters' runs can deadlock")
	}
	if holds(`UPDATE changes SET writes = writes WHERE id = $1`) {
		t.Error("a statement adding no value to search_terms took the advisory lock: runs of known values queue")
	}
	// The values added under the lock are there once committed.
	if err := pgx.BeginFunc(ctx, st.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE changes SET namespace = 'committed-namespace' WHERE id = $1`, id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM search_terms WHERE kind = 'namespace' AND term = 'committed-namespace'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("search_terms holds the committed value %d times (%v), want 1", n, err)
	}
}
