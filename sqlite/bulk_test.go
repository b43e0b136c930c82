//go:build unix

package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
)

// TestBulk: a bulk load is invisible at its path until Finish, which builds
// every index a database opened the ordinary way has; a second load of the
// same path waits while one runs; a partial file left by a dead load is
// started over; Finish never replaces a database that appeared meanwhile.
func TestBulk(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "cpid.db")
	os.WriteFile(path+".partial", []byte("what a killed load left"), 0o600)
	b, err := OpenBulk(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	// A second load of the same path waits for the first, saying so
	// (here it gives up as soon as it says it waits).
	wctx, stop := context.WithCancel(ctx)
	var said string
	if _, err := OpenBulk(wctx, path, cpid.WithNotice(func(s string) { said = s; stop() })); !errors.Is(err, context.Canceled) ||
		!strings.Contains(said, "another cpid-tui is creating it") {
		t.Errorf("a second load of the same path: %v, said %q", err, said)
	}
	stop()
	in := &ingest.Ingester{Sink: b}
	if _, err := in.Run(ctx, []string{"../fixtures/basic/bundle"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the database is at its path before Finish: %v", err)
	}
	if _, err := b.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ref := openTest(t)
	indexes := func(s *Store) string {
		v, _ := column(ctx, s.r, `SELECT name || ':' || coalesce(sql, '') FROM sqlite_master WHERE type = 'index' ORDER BY name`)
		return strings.Join(v, "\n")
	}
	if got, want := indexes(s), indexes(ref); got != want {
		t.Errorf("indexes after a bulk load:\n%s\nwant\n%s", got, want)
	}
	var mode string
	s.r.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode)
	var n int
	s.r.QueryRowContext(ctx, `SELECT count(*) FROM audit_bodies`).Scan(&n)
	if mode != "wal" || n != 1232 {
		t.Errorf("journal mode %s, %d bodies", mode, n)
	}
	for _, f := range []string{".partial", ".partial-wal", ".partial-journal"} {
		if _, err := os.Stat(path + f); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", f, err)
		}
	}

	// A database that appears while a load runs is left alone.
	other := filepath.Join(dir, "other.db")
	b, err = OpenBulk(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(other, []byte("someone else's"), 0o600)
	if _, err := b.Finish(ctx); err == nil || !strings.Contains(err.Error(), "appeared") {
		t.Errorf("Finish over a database that appeared: %v", err)
	}
	if got, _ := os.ReadFile(other); string(got) != "someone else's" {
		t.Errorf("the database that appeared was replaced")
	}
}

// TestBulkDuplicates: the bulk load keeps no unique index while it loads,
// so the records given twice are removed by Finish: the database ends as
// an ordinary one that refused them as they came (the same records in the
// same order, the first of each kept; ids may skip the numbers of those
// removed), and the counts (what Write said, corrected by what Finish
// returns) are the same.
func TestBulkDuplicates(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	inputs := []string{"../fixtures/basic/bundle", "../fixtures/kcm-restart/bundle", "../fixtures/basic/bundle"}
	b, err := OpenBulk(ctx, filepath.Join(dir, "bulk.db"))
	if err != nil {
		t.Fatal(err)
	}
	// Each input in its own run, as one ingest after another.
	ingestEach := func(sink cpid.RecordWriter) (w cpid.Written) {
		for _, in := range inputs {
			sum, err := (&ingest.Ingester{Sink: sink}).Run(ctx, []string{in})
			if err != nil {
				t.Fatal(err)
			}
			w.Add(sum.Written)
		}
		return w
	}
	bulk := ingestEach(b)
	dups, err := b.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bulk.Add(dups)
	ref := openTest(t)
	want := ingestEach(ref)
	if bulk != want || want.AuditDups == 0 || want.LogDups == 0 {
		t.Errorf("bulk load counted %+v, an ordinary database %+v", bulk, want)
	}
	s, err := Open(ctx, filepath.Join(dir, "bulk.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []string{
		`SELECT row_number() OVER (ORDER BY id) || ' ' || hex(hash) || ' ' || audit_id || ' ' || line FROM audit_events ORDER BY hash`,
		`SELECT hex(e.hash) || ' ' || coalesce(b.request_object, '') || coalesce(b.response_object, '') || coalesce(b.response_status, '')
			FROM audit_bodies b JOIN audit_events e ON e.id = b.event_id ORDER BY e.hash`,
		`SELECT row_number() OVER (ORDER BY id) || ' ' || hex(hash) || ' ' || msg FROM log_records ORDER BY hash`,
		`SELECT count(*) FROM audit_body_refs WHERE event_id NOT IN (SELECT id FROM audit_events)`,
	} {
		got, err := column(ctx, s.r, q)
		if err != nil {
			t.Fatal(err)
		}
		exp, err := column(ctx, ref.r, q)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "\n") != strings.Join(exp, "\n") {
			t.Errorf("%s: the bulk load has %d rows, an ordinary database %d", q, len(got), len(exp))
		}
	}
	// The load does not check foreign keys (bulkDSN): what it wrote must
	// satisfy them all the same.
	if bad, err := column(ctx, s.r, `SELECT "table" || ' ' || rowid || ' -> ' || parent FROM pragma_foreign_key_check`); err != nil || len(bad) > 0 {
		t.Errorf("foreign keys the bulk load broke: %v %v", bad, err)
	}
}
