package main

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cpid-dev/cpid/postgres/pgtest"
)

// TestExpireCommand: expire --dry-run counts, expire deletes and says the
// next reconstruct rebuilds; until it runs there is no change to list,
// after it there are; the fixture ingested again stores nothing. A SQLite
// database is refused (exit 1) with the reason. (The engine's guarantees
// are postgres.TestExpire's.)
func TestExpireCommand(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	for _, args := range [][]string{{"ingest", "--db", db, "../../fixtures/basic/bundle"}, {"reconstruct", "--db", db}} {
		if code, out, errOut := runCmd(t, nil, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	r, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var mid, old int64
	if err := r.QueryRow(`SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY received_ns) FROM audit_events`).Scan(&mid); err != nil {
		t.Fatal(err)
	}
	if err := r.QueryRow(`SELECT count(*) FROM audit_events WHERE received_ns < $1`, mid).Scan(&old); err != nil {
		t.Fatal(err)
	}
	before := time.Unix(0, mid).UTC().Format(time.RFC3339Nano)
	code, out, errOut := runCmd(t, nil, "expire", "--db", db, "--before", before, "--dry-run")
	if want := fmt.Sprintf("would delete %d audit events", old); code != 0 || !strings.Contains(out, want) {
		t.Fatalf("expire --dry-run: exit %d\n%s%s\nwant %q", code, out, errOut, want)
	}
	code, out, errOut = runCmd(t, nil, "expire", "--db", db, "--before", before)
	if want := fmt.Sprintf("deleted %d audit events", old); code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "full rebuild") {
		t.Fatalf("expire: exit %d\n%s%s\nwant %q", code, out, errOut, want)
	}
	if code, out, _ := runCmd(t, nil, "query", "changes", "--db", db, "-o", "name"); code != 0 || out != "" {
		t.Errorf("changes listed after expire, before a reconstruct: exit %d\n%s", code, out)
	}
	if code, out, errOut := runCmd(t, nil, "ingest", "--db", db, "../../fixtures/basic/bundle"); code != 0 {
		t.Fatalf("ingest again: exit %d\n%s%s", code, out, errOut)
	}
	var n int64
	if err := r.QueryRow(`SELECT count(*) FROM audit_events WHERE received_ns < $1`, mid).Scan(&n); err != nil || n != 0 {
		t.Errorf("ingest again after expire stored %d events older than --before (%v)", n, err)
	}
	if code, out, errOut := runCmd(t, nil, "reconstruct", "--db", db); code != 0 || !strings.Contains(out+errOut, "full rebuild") {
		t.Fatalf("reconstruct after expire: exit %d\n%s%s\nwant a full rebuild", code, out, errOut)
	}
	if code, out, _ := runCmd(t, nil, "query", "changes", "--db", db, "-o", "name"); code != 0 || out == "" {
		t.Errorf("no change listed after the rebuild: exit %d", code)
	}

	lite := filepath.Join(t.TempDir(), "cpid.db")
	code, _, errOut = runCmd(t, nil, "expire", "--db", lite, "--before", before)
	if code != 1 || !strings.Contains(errOut, "only a PostgreSQL database") {
		t.Errorf("expire of SQLite: exit %d\n%s", code, errOut)
	}
}
