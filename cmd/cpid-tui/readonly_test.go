package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cpid-dev/cpid/postgres/pgtest"
)

// readOnlyFile makes a file and its directory read-only: modes 0444 and
// 0555, and for root, whom modes do not stop, the immutable attribute
// (chattr +i), which stops root too. Cleanup undoes it.
func readOnlyFile(t *testing.T, path string) {
	t.Helper()
	dir := filepath.Dir(path)
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755); os.Chmod(path, 0o644) })
	if os.Geteuid() != 0 {
		return
	}
	if out, err := exec.Command("chattr", "+i", path, dir).CombinedOutput(); err != nil {
		t.Skipf("root, and chattr +i failed (%v: %s): cannot make a file read-only", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", path, dir).Run() })
	if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
		f.Close()
		t.Skip("the immutable file opens for writing: cannot make a file read-only here")
	}
}

// ingested returns a database holding the basic fixture, reconstructed
// when derive is set.
func ingested(t *testing.T, derive bool) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "cpid.db")
	args := [][]string{{"ingest", "--db", db, filepath.Join("..", "..", "fixtures", "basic", "bundle")}}
	if derive {
		args = append(args, []string{"reconstruct", "--db", db})
	}
	for _, a := range args {
		if code, out, errOut := runCmd(t, nil, a...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", a, code, out, errOut)
		}
	}
	return db
}

// TestReadingNeverCreates: query, browse and tail --status on a path with
// no database fail naming it, and leave no file behind.
func TestReadingNeverCreates(t *testing.T) {
	for _, args := range [][]string{
		{"query", "changes"},
		{"query", "related", "x"},
		{"browse"},
		{"tail", "--status"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "typo.db")
			code, _, errOut := runCmd(t, nil, append(args, "--db", db)...)
			if code != 1 || !strings.Contains(errOut, "no database at "+db) {
				t.Errorf("exit %d, stderr %q; want 1 and no database at %s", code, errOut, db)
			}
			if _, err := os.Stat(db); !os.IsNotExist(err) {
				t.Errorf("%s was created", db)
			}
		})
	}
}

// TestReadingNeverMigrates: a database that lacks a migration is not
// migrated by a reading command, which says what it needs; a writing
// command migrates it.
func TestReadingNeverMigrates(t *testing.T) {
	db := ingested(t, true)
	w, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// As a database of an older cpid-tui would be: the latest migration
	// not applied. The reader must not apply it (here it would fail half
	// way: the columns exist).
	var latest int
	var name string
	if err := w.QueryRow(`SELECT version, name FROM schema_migrations ORDER BY version DESC LIMIT 1`).Scan(&latest, &name); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec(`DELETE FROM schema_migrations WHERE version = ?`, latest); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"query", "changes"}, {"tail", "--status"}} {
		code, out, errOut := runCmd(t, nil, append(args, "--db", db)...)
		if code != 1 || !strings.Contains(errOut, fmt.Sprintf("schema version %d lacks %s", latest-1, name)) ||
			!strings.Contains(errOut, fmt.Sprintf("reads schema version %d", latest)) || !strings.Contains(errOut, "cpid-tui reconstruct") {
			t.Errorf("%v: exit %d, stderr %q; want 1 and the schema version needed", args, code, errOut)
		}
		if out != "" {
			t.Errorf("%v: stdout %q", args, out)
		}
	}
	var n int
	if err := w.QueryRow(`SELECT count(*) FROM schema_migrations WHERE version = ?`, latest).Scan(&n); err != nil || n != 0 {
		t.Errorf("migration %d recorded %d times (%v) after reading: a reader migrated", latest, n, err)
	}
}

// TestReadingReadOnlyFile: a database file and directory nobody may write
// (a copy handed around, a read-only mount) are read.
func TestReadingReadOnlyFile(t *testing.T) {
	db := ingested(t, true)
	want := func() string {
		code, out, errOut := runCmd(t, nil, "query", "changes", "--db", db)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		return out
	}()
	readOnlyFile(t, db)
	for _, args := range [][]string{{"query", "changes"}, {"tail", "--status"}} {
		code, out, errOut := runCmd(t, nil, append(args, "--db", db)...)
		if code != 0 {
			t.Errorf("%v on a read-only database: exit %d, %s", args, code, errOut)
		}
		if args[0] == "query" && out != want {
			t.Errorf("query changes on a read-only database:\n%s\nwant\n%s", out, want)
		}
	}
}

// TestReadingHintsReconstruct: a query of a database never reconstructed
// says to run reconstruct, an empty listing and an id not found alike;
// one reconstructed says nothing.
func TestReadingHintsReconstruct(t *testing.T) {
	for _, derive := range []bool{false, true} {
		db := ingested(t, derive)
		for _, c := range []struct {
			args []string
			code int
		}{
			{[]string{"query", "changes"}, 0},
			{[]string{"query", "hops"}, 0},
			{[]string{"query", "timeline", "abc"}, 1},
		} {
			code, _, errOut := runCmd(t, nil, append(c.args, "--db", db)...)
			hint := strings.Contains(errOut, "run `cpid-tui reconstruct --db "+db+"`")
			if code != c.code || hint == derive {
				t.Errorf("%v, reconstructed %v: exit %d, stderr %q; want %d and a hint only when not", c.args, derive, code, errOut, c.code)
			}
		}
	}
}

// TestReadingPostgres: on PostgreSQL too, a reading command neither
// creates the schema nor migrates it, and reads with a read-only session.
func TestReadingPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	code, _, errOut := runCmd(t, nil, "query", "changes", "--db", dsn)
	if code != 1 || !strings.Contains(errOut, "no cpid schema") {
		t.Errorf("query on an empty database: exit %d, stderr %q; want 1 and no cpid schema", code, errOut)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil || exists {
		t.Fatalf("schema_migrations exists (%v) after a query: the reader migrated", err)
	}
	if code, out, errOut := runCmd(t, nil, "ingest", "--db", dsn, filepath.Join("..", "..", "fixtures", "basic", "bundle")); code != 0 {
		t.Fatalf("ingest: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = runCmd(t, nil, "query", "changes", "--db", dsn)
	if code != 0 || !strings.Contains(errOut, "cpid-tui reconstruct`") {
		t.Errorf("query before reconstruct: exit %d, stderr %q; want 0 and the hint", code, errOut)
	}
	// An older schema: the first migration alone.
	if _, err := conn.Exec(ctx, `DELETE FROM schema_migrations WHERE version > 1`); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCmd(t, nil, "query", "changes", "--db", dsn)
	if code != 1 || !strings.Contains(errOut, "schema version 1 lacks 0002_causality.sql") {
		t.Errorf("query on an older schema: exit %d, stderr %q; want 1 and the version needed", code, errOut)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != 1 {
		t.Errorf("schema_migrations has %d rows (%v) after a query: the reader migrated", n, err)
	}
}
