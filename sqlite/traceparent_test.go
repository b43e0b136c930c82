package sqlite

import (
	"context"
	"testing"

	"github.com/cpid-dev/cpid/ingest"
)

// TestTraceparentMigrationBackfills: migration 0009 gives the events of a
// version 8 database the traceparent their stored bodies carry, the same
// that ingest stores today, on the real traced fixture.
func TestTraceparentMigrationBackfills(t *testing.T) {
	ctx := context.Background()
	src := openTest(t)
	sum, err := (&ingest.Ingester{Sink: src}).Run(ctx, []string{"../fixtures/traced/bundle"})
	if err != nil || len(sum.ReadErrors) > 0 {
		t.Fatalf("ingest: %v %v", err, sum.ReadErrors)
	}
	want := traceparents(t, src)
	if len(want) < 20 {
		t.Fatalf("%d events with a traceparent in the traced fixture", len(want))
	}

	s, path := openAt(t, 8)
	var cols string
	if err := s.w.QueryRowContext(ctx, `SELECT group_concat(name, ', ') FROM pragma_table_info('audit_events')`).Scan(&cols); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, `ATTACH DATABASE ? AS src`, src.path); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO files SELECT * FROM src.files`,
		`INSERT INTO audit_events SELECT ` + cols + ` FROM src.audit_events`,
		`INSERT INTO body_blocks SELECT * FROM src.body_blocks`,
		`INSERT INTO audit_body_refs SELECT * FROM src.audit_body_refs`,
		`DETACH DATABASE src`,
	} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s.Close()
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := traceparents(t, s)
	if len(got) != len(want) {
		t.Errorf("%d events with a traceparent after the migration, want %d", len(got), len(want))
	}
	for id, tp := range want {
		if got[id] != tp {
			t.Errorf("event %d: traceparent %q after the migration, want %q", id, got[id], tp)
		}
	}
}

func traceparents(t *testing.T, s *Store) map[int64]string {
	t.Helper()
	rows, err := s.r.Query(`SELECT id, traceparent FROM audit_events WHERE traceparent IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var tp string
		if err := rows.Scan(&id, &tp); err != nil {
			t.Fatal(err)
		}
		out[id] = tp
	}
	return out
}
