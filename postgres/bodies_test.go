package postgres

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cpid-dev/cpid/ingest"
)

// bodiesOf reads every body through the view, by event id.
func bodiesOf(t *testing.T, s *Store) map[int64][3]*string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT event_id, request_object, response_object, response_status FROM audit_bodies`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64][3]*string{}
	for rows.Next() {
		var id int64
		var b [3]*string
		if err := rows.Scan(&id, &b[0], &b[1], &b[2]); err != nil {
			t.Fatal(err)
		}
		out[id] = b
	}
	return out
}

// TestBodyBlocksMigrationKeepsBodies: migration 0003 packs the bodies of a
// database of schema v7 (a table of text) into blocks, and every body reads
// back through the view as it was, NULLs included.
func TestBodyBlocksMigrationKeepsBodies(t *testing.T) {
	ctx := context.Background()
	src := openTest(t)
	in := &ingest.Ingester{Sink: src}
	if _, err := in.Run(ctx, []string{filepath.Join("..", "fixtures", "basic", "bundle")}); err != nil {
		t.Fatal(err)
	}
	want := bodiesOf(t, src)
	if len(want) < 1000 {
		t.Fatalf("%d bodies in the fixture", len(want))
	}

	dsn, pool := databaseAt(t, 2)
	copyTable(t, src, pool, "files", `SELECT * FROM files`)
	copyTable(t, src, pool, "audit_events", `SELECT * FROM audit_events`, "traceparent")
	copyTable(t, src, pool, "audit_bodies", `SELECT event_id, request_object, response_object, response_status FROM audit_bodies`)
	pool.Close()

	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := bodiesOf(t, s)
	if len(got) != len(want) {
		t.Errorf("%d events with bodies after the migration, want %d", len(got), len(want))
	}
	str := func(p *string) string {
		if p == nil {
			return "NULL"
		}
		return *p
	}
	for id, w := range want {
		g := got[id]
		for j := range 3 {
			if str(g[j]) != str(w[j]) {
				t.Fatalf("event %d part %d differs after the migration:\n got %.200s\nwant %.200s", id, j, str(g[j]), str(w[j]))
			}
		}
	}
	var legacy bool
	s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_tables WHERE tablename = 'audit_bodies_v7')`).Scan(&legacy)
	if legacy {
		t.Error("audit_bodies_v7 left behind")
	}
}

// copyTable copies the rows a query of src returns into table of pool,
// leaving out the columns skip (those a database of an older schema has
// not).
func copyTable(t *testing.T, src *Store, pool *pgxpool.Pool, table, query string, skip ...string) {
	t.Helper()
	ctx := context.Background()
	rows, err := src.pool.Query(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	var keep []int
	for i, f := range rows.FieldDescriptions() {
		if !slices.Contains(skip, f.Name) {
			cols, keep = append(cols, f.Name), append(keep, i)
		}
	}
	var vals [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		row := make([]any, len(keep))
		for j, i := range keep {
			row[j] = v[i]
		}
		vals = append(vals, row)
	}
	rows.Close()
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(vals)); err != nil {
		t.Fatalf("copy %s: %v", table, err)
	}
}

// TestTraceparentMigrationBackfills: migration 0004 gives the events of a
// database of schema v8 the traceparent their stored bodies carry, the same
// that ingest stores today, on the real traced fixture.
func TestTraceparentMigrationBackfills(t *testing.T) {
	ctx := context.Background()
	src := openTest(t)
	if _, err := (&ingest.Ingester{Sink: src}).Run(ctx, []string{filepath.Join("..", "fixtures", "traced", "bundle")}); err != nil {
		t.Fatal(err)
	}
	traceparents := func(s *Store) map[int64]string {
		rows, err := s.pool.Query(ctx, `SELECT id, traceparent FROM audit_events WHERE traceparent IS NOT NULL`)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int64]string{}
		var id int64
		var tp string
		if _, err := pgx.ForEachRow(rows, []any{&id, &tp}, func() error { out[id] = tp; return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := traceparents(src)
	if len(want) < 20 {
		t.Fatalf("%d events with a traceparent in the traced fixture", len(want))
	}

	dsn, pool := databaseAt(t, 3)
	copyTable(t, src, pool, "files", `SELECT * FROM files`)
	copyTable(t, src, pool, "audit_events", `SELECT * FROM audit_events`, "traceparent")
	copyTable(t, src, pool, "body_blocks", `SELECT * FROM body_blocks`)
	copyTable(t, src, pool, "audit_body_refs", `SELECT * FROM audit_body_refs`)
	pool.Close()

	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := traceparents(s)
	if len(got) != len(want) {
		t.Errorf("%d events with a traceparent after the migration, want %d", len(got), len(want))
	}
	for id, tp := range want {
		if got[id] != tp {
			t.Errorf("event %d: traceparent %q after the migration, want %q", id, got[id], tp)
		}
	}
}
