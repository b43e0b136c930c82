package main

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// dumpFile is dumpDB of the database at path, and the names of its
// indexes (a bulk load builds them at the end).
func dumpFile(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var idx []string
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'index' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		idx = append(idx, n)
	}
	rows.Close()
	return dumpDB(t, db) + "indexes: " + strings.Join(idx, " ") + "\n"
}

// synthBundle returns a synthetic bundle of n events templated from the
// real fixture (fixtures/synth), written once in a run of the package's
// tests: tests only read it.
func synthBundle(t *testing.T, n int) string {
	t.Helper()
	dir, err := sharedOnce(&synthBundles, n, func() (string, error) {
		dir, err := sharedTestDir("synth")
		if err != nil {
			return "", err
		}
		cmd := exec.Command("go", "run", "../../fixtures/synth", "-events", fmt.Sprint(n), "-rotate-mb", "20", "-out", dir, basicBundle)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("synth: %v\n%s", err, out)
		}
		return dir, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// synthBundles holds synthBundle's bundles by number of events.
var synthBundles sync.Map

// TestIngestKilled: an ingest SIGKILLed half way, then the same ingest run
// again, ends with the database an uninterrupted ingest makes: the same
// rows, ids and body blocks. Both ways in: a new database (the bulk load,
// which leaves nothing at --db until it is done) and one that held records
// already (the ordinary WAL transactions).
func TestIngestKilled(t *testing.T) {
	t.Parallel()
	bundle := synthBundle(t, 40000)
	for _, existing := range []bool{false, true} {
		t.Run(map[bool]string{false: "new-database", true: "existing-database"}[existing], func(t *testing.T) {
			dir := t.TempDir()
			want, db := filepath.Join(dir, "want.db"), filepath.Join(dir, "cpid.db")
			args := func(path string) []string {
				return []string{"ingest", "--batch", "500", "--db", path, bundle}
			}
			if existing {
				for _, p := range []string{want, db} {
					if code, _, errOut := runCmd(t, nil, "ingest", "--db", p, basicBundle); code != 0 {
						t.Fatalf("first ingest: %s", errOut)
					}
				}
			}
			if code, _, errOut := runCmd(t, nil, args(want)...); code != 0 {
				t.Fatalf("uninterrupted ingest: %s", errOut)
			}
			// Kill it once it stored a few MB, so that the run is
			// neither at its start nor at its end.
			size := func() int64 {
				var n int64
				for _, f := range []string{db, db + "-wal", db + ".partial"} {
					if fi, err := os.Stat(f); err == nil {
						n += fi.Size()
					}
				}
				return n
			}
			// Sized again at each change in dir (watched before the
			// first size).
			changed := dirChanges(t, dir)
			before := size()
			p := helper(t, "cpid-tui", args(db)...)
			waitOn(t, "the database to grow by 6 MB", func() bool { return size()-before >= 6<<20 },
				changed, nil)
			p.Process.Kill()
			p.Wait()
			if !existing {
				if _, err := os.Stat(db); !os.IsNotExist(err) {
					t.Fatalf("a killed bulk load left a database at --db: %v", err)
				}
			}
			code, out, errOut := runCmd(t, nil, args(db)...)
			if code != 0 {
				t.Fatalf("ingest after the kill: exit %d: %s", code, errOut)
			}
			t.Logf("after the kill: %s", strings.SplitN(out, "\n", 3)[1])
			if _, err := os.Stat(db + ".partial"); !os.IsNotExist(err) {
				t.Errorf("the partial database is left behind: %v", err)
			}
			if got, w := dumpFile(t, db), dumpFile(t, want); got != w {
				gl, wl := strings.Split(got, "\n"), strings.Split(w, "\n")
				for i := range min(len(gl), len(wl)) {
					if gl[i] != wl[i] {
						t.Fatalf("the database differs from an uninterrupted ingest's at line %d:\n got %.300s\nwant %.300s", i+1, gl[i], wl[i])
					}
				}
				t.Fatalf("the database differs from an uninterrupted ingest's: %d lines, want %d", len(gl), len(wl))
			}
		})
	}
}
