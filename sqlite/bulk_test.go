//go:build unix

package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/ingest"
)

// TestBulk: a bulk load is invisible at its path until Finish, which builds
// every index a database opened the ordinary way has; a second load of the
// same path is refused while one runs; a partial file left by a dead load is
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
	if _, err := OpenBulk(ctx, path); err == nil || !strings.Contains(err.Error(), "another cpid-tui ingest") {
		t.Errorf("a second load of the same path: %v", err)
	}
	in := &ingest.Ingester{Sink: b}
	if _, err := in.Run(ctx, []string{"../fixtures/basic/bundle"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the database is at its path before Finish: %v", err)
	}
	if err := b.Finish(ctx); err != nil {
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
	if err := b.Finish(ctx); err == nil || !strings.Contains(err.Error(), "appeared") {
		t.Errorf("Finish over a database that appeared: %v", err)
	}
	if got, _ := os.ReadFile(other); string(got) != "someone else's" {
		t.Errorf("the database that appeared was replaced")
	}
}
