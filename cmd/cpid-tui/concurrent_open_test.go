package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cpid-dev/cpid/postgres/pgtest"
)

// TestConcurrentFirstOpens: eight processes start at once on a database
// that does not exist: four ingests (one bulk load, the others wait for it
// and append), a tail, a serve, a reconstruct and a query (once something
// is creating the database). All succeed and
// every event of every input is stored once: the same rows as one process
// ingesting them all. Again with the first loader killed (-9) half way
// through a big load: the others take over its stale .partial. Before,
// nine of ten concurrent first ingests failed with "another cpid-tui ingest
// is creating it", their inputs not stored.
func TestConcurrentFirstOpens(t *testing.T) {
	t.Parallel()
	fx := func(name string) string { return filepath.Join("..", "..", "fixtures", name, "bundle") }
	// tail follows a copy of a fixture's audit log; serve is posted a batch.
	tailDir := t.TempDir()
	for _, l := range []string{filepath.Join(fx("cronjob"), "audit", "audit.log")} {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tailDir, filepath.Base(l)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	posted := eventList(goodEvents(t, 0, 50)...)
	ingests := []string{fx("basic"), fx("kcm-restart"), fx("conflicts"), fx("basic")}

	// What one process makes of every input.
	want := filepath.Join(t.TempDir(), "want.db")
	postedFile := filepath.Join(t.TempDir(), "posted.json")
	os.WriteFile(postedFile, posted, 0o600)
	for _, in := range append(append([]string{}, ingests...), tailDir, postedFile) {
		if code, out, errOut := runCmd(t, nil, "ingest", "--db", want, in); code != 0 {
			t.Fatalf("ingest %s: exit %d\n%s%s", in, code, out, errOut)
		}
	}
	rows := func(db string) string {
		t.Helper()
		code, out, errOut := runCmd(t, nil, "sql", "--db", db, "--output", "csv",
			"select (select count(*) from audit_events) || ' events, ' || (select count(*) from log_records) || ' log records, ' || (select count(distinct hash) from audit_events) || ' distinct'")
		if code != 0 {
			t.Fatalf("sql: %s", errOut)
		}
		return out
	}
	wantRows := rows(want)

	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "at-once", true: "first-loader-killed"}[kill], func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "new.db")
			changed := dirChanges(t, dir) // the waits below look again at each change in dir
			var victim proc
			if kill {
				// A load big enough to be killed half way.
				victim = helper(t, "cpid-tui", "ingest", "-q", "--batch", "500", "--db", db, synthBundle(t, 40000))
				waitOn(t, "the load half way", func() bool {
					if fi, err := os.Stat(db + ".partial"); err == nil && fi.Size() > 4<<20 {
						return true
					}
					if _, err := os.Stat(db); err == nil {
						t.Fatal("the load ended before it could be killed")
					}
					return false
				}, changed, nil)
			}
			var ps []proc
			for _, in := range ingests {
				ps = append(ps, helper(t, "cpid-tui", "ingest", "-q", "--db", db, in))
			}
			addr := freeAddr(t)
			serve := helper(t, "cpid-tui", "serve", "--db", db, "--listen", addr, "--reconstruct-every", "0")
			tailer := helper(t, "cpid-tui", "tail", "--db", db, "--reconstruct-every", "0", "--poll", "50ms", "--audit-log", filepath.Join(tailDir, "audit.log"))
			ps = append(ps, helper(t, "cpid-tui", "reconstruct", "--db", db))
			if kill {
				victim.Process.Kill()
				victim.Wait()
			}
			// A reader of a path with nothing at it fails (it never
			// creates a database): it starts once the database is on
			// its way, as a person runs query while an ingest runs, and
			// waits for it. Not while the killed loader's .partial is all
			// there is: the reader cannot tell it from a load on its way.
			waitOn(t, "the database on its way", func() bool {
				_, e1 := os.Stat(db)
				_, e2 := os.Stat(db + ".partial")
				return e1 == nil || e2 == nil && !kill
			}, changed, nil)
			ps = append(ps, helper(t, "cpid-tui", "query", "changes", "--db", db))
			serve.waitFor(t, "listening")
			resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader(string(posted)))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("serve answered %d", resp.StatusCode)
			}
			for _, p := range ps {
				if err := p.Wait(); err != nil {
					t.Errorf("%v: %v\n%s", p.Args[2:], err, tail(p.stderr.String(), 2048))
				}
			}
			// tail has read its logs when the database holds everything.
			waitOn(t, "every event stored", func() bool { return rows(db) == wantRows }, changed, nil)
			for _, p := range []proc{serve, tailer} {
				p.Process.Signal(syscall.SIGTERM)
				if err := p.Wait(); err != nil {
					t.Errorf("%v: %v\n%s", p.Args[2:], err, tail(p.stderr.String(), 2048))
				}
			}
			if got := rows(db); got != wantRows {
				t.Errorf("the database holds %s want %s", got, wantRows)
			}
			if _, err := os.Stat(db + ".partial"); err == nil {
				t.Errorf("%s.partial is left", db)
			}
		})
	}
}

// TestFirstOpenNoMigrationNotice: two serve and two tail started at once
// on a new database say nothing of migrations, whichever opens it first:
// a new database is created, not upgraded, and the migrations one process
// applies are no news to the others. Several rounds, each with a new
// database, on SQLite and PostgreSQL. Before, on PostgreSQL, most rounds
// had one of them say "migrating to schema vN" (a process whose first
// migration waited for another's applied the later ones as an upgrade).
func TestFirstOpenNoMigrationNotice(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			log := filepath.Join(dir, "audit.log")
			writeLines(t, log, userCreate(1))
			for round := range 6 {
				db := filepath.Join(dir, fmt.Sprintf("new%d.db", round))
				if engine == "postgres" {
					db = pgtest.NewDatabase(t)
				}
				var ps []proc
				for range 2 {
					ps = append(ps, helper(t, "cpid-tui", "serve", "--db", db, "--listen", freeAddr(t), "--reconstruct-every", "0"),
						helper(t, "cpid-tui", "tail", "--db", db, "--reconstruct-every", "0", "--audit-log", log))
				}
				for i, p := range ps {
					p.waitFor(t, map[bool]string{true: "listening", false: "tail: following"}[i%2 == 0])
				}
				for _, p := range ps {
					p.Process.Signal(syscall.SIGTERM)
					if err := p.Wait(); err != nil {
						t.Errorf("round %d: %v: %v\n%s", round, p.Args[2:], err, tail(p.stderr.String(), 2048))
					}
					if s := p.stderr.String(); strings.Contains(s, "migrating") {
						t.Errorf("round %d: %s on a new database says it migrates:\n%s", round, p.Args[3], s)
					}
				}
			}
		})
	}
}
