package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/cpid-dev/cpid/postgres/pgtest"
	"github.com/cpid-dev/cpid/sqlite"
)

// TestFleetTailers: the tailers of four clusters write one database at
// once, each following an audit log that lumberjack rotates and gzips as
// kube-apiserver does and reconstructing every 100 ms; a second tailer of
// the first cluster follows the same files (two receivers of one log), and
// `cpid-tui reconstruct` of every cluster runs in a loop beside them. Every
// line must be stored once, in its cluster, and each cluster's changes and
// timelines must equal a post-mortem ingest of its files into a database of
// its own. On SQLite and on PostgreSQL.
func TestFleetTailers(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			dir := t.TempDir()
			db, driver, dsn := filepath.Join(dir, "fleet.db"), "sqlite", ""
			dsn = "file:" + db + "?_pragma=query_only(1)&_pragma=busy_timeout(10000)"
			if engine == "postgres" {
				db = pgtest.NewDatabase(t)
				driver, dsn = "pgx", db
			}
			testFleetTailers(t, dir, db, driver, dsn)
		})
	}
}

func testFleetTailers(t *testing.T, dir, db, driver, dsn string) {
	const n = 2000 // lines per cluster
	clusters := []string{"c1", "c2", "c3", "c4"}
	templates, err := realLines(basicBundle)
	if err != nil {
		t.Fatal(err)
	}
	must := func(args ...string) string {
		t.Helper()
		code, out, errOut := runCmd(t, nil, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	// The database exists before the processes start, as a fleet's does:
	// made by its first open (reconstruct makes no SQLite file).
	if driver == "sqlite" {
		s, err := sqlite.Open(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	must("reconstruct", "--db", db)

	var tailers []proc
	wake := make(chan struct{}, 1) // told of the tailers' every line, see TestHelperProcess
	for i, c := range clusters {
		log := filepath.Join(dir, c, "audit.log")
		args := []string{"tail", "--db", db, "--cluster", c, "--audit-log", log, "--poll", "50ms",
			"--reconstruct-every", "100ms", "--batch", "300"}
		tailers = append(tailers, helperWaking(t, wake, "cpid-tui", args...))
		if i == 0 {
			tailers = append(tailers, helperWaking(t, wake, "cpid-tui", args...))
		}
	}
	for _, p := range tailers {
		p.waitFor(t, "tail: following")
	}

	var wg sync.WaitGroup
	errs := make(chan error, len(clusters))
	for i, c := range clusters {
		wg.Go(func() {
			lj := &lumberjack.Logger{Filename: filepath.Join(dir, c, "audit.log"), MaxSize: 1, Compress: true}
			defer lj.Close()
			base := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
			for j := range n {
				if _, err := lj.Write(fleetLine(templates[j%len(templates)], i*n+j, base.Add(time.Duration(j)*time.Millisecond))); err != nil {
					errs <- err
					return
				}
				if j%100 == 99 {
					// About 3 s of writing, so that the tailers
					// reconstruct many times meanwhile. It paces the
					// writer only: whatever the pace, the result must
					// equal the post-mortem's.
					time.Sleep(150 * time.Millisecond)
				}
			}
		})
	}
	// Manual runs of every cluster while the tailers reconstruct theirs.
	stop := make(chan struct{})
	reconstructs := make(chan int, 1)
	go func() {
		runs := 0
		for {
			select {
			case <-stop:
				reconstructs <- runs
				return
			default:
			}
			p := helper(t, "cpid-tui", "reconstruct", "--db", db)
			if err := p.Wait(); err != nil {
				t.Errorf("reconstruct beside the tailers: %v\n%s", err, tail(p.stderr.String(), 2048))
			}
			runs++
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("writer: %v", err)
	}

	r, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	type count struct{ rows, ids int }
	stored := func() map[string]count {
		rows, err := r.Query(`SELECT cluster, count(*), count(DISTINCT audit_id) FROM audit_events GROUP BY cluster`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]count{}
		for rows.Next() {
			var c string
			var k count
			if err := rows.Scan(&c, &k.rows, &k.ids); err != nil {
				t.Fatal(err)
			}
			out[c] = k
		}
		return out
	}
	done := func(m map[string]count) bool {
		for _, c := range clusters {
			if m[c].rows < n {
				return false
			}
		}
		return true
	}
	// Counted again each time a tailer says that it caught up (it has
	// stored all it read).
	var got map[string]count
	waitOn(t, "every cluster's rows", func() bool { got = stored(); return done(got) }, func() <-chan struct{} { return wake },
		func() string { return fmt.Sprintf("stored: %v", got) })
	close(stop)
	runs := <-reconstructs
	for _, p := range tailers {
		p.Process.Signal(syscall.SIGTERM)
		if err := p.Wait(); err != nil {
			t.Errorf("tailer after SIGTERM: %v\n%s", err, tail(p.stderr.String(), 2048))
		}
	}
	got = stored()
	t.Logf("%d tailers, %d reconstruct runs beside them; stored per cluster: %v", len(tailers), runs, got)
	if len(got) != len(clusters) {
		t.Errorf("clusters stored: %v, want %v", got, clusters)
	}
	for _, c := range clusters {
		if got[c] != (count{n, n}) {
			t.Errorf("cluster %s: %d rows of %d distinct lines, want %d of each", c, got[c].rows, got[c].ids, n)
		}
	}

	// What the tailers derived, brought up to date, equals a post-mortem.
	must("reconstruct", "--db", db)
	for _, c := range clusters {
		alone := filepath.Join(dir, c+".db")
		must("ingest", "--db", alone, filepath.Join(dir, c))
		must("reconstruct", "--db", alone)
		want := fleetChanges(t, must("query", "changes", "--db", alone, "--output", "json", "--limit", "100000"))
		live := fleetChanges(t, must("query", "changes", "--db", db, "--cluster", c, "--output", "json", "--limit", "100000"))
		if len(want) == 0 || len(live) != len(want) {
			t.Fatalf("cluster %s: %d changes live, %d post-mortem", c, len(live), len(want))
		}
		for i := range want {
			if live[i] != want[i] {
				t.Errorf("cluster %s: change %d live %+v, post-mortem %+v", c, i, live[i], want[i])
				continue
			}
			if i%5 == 0 { // a sample of the timelines, whole
				tw := must("query", "timeline", "--db", alone, want[i].ID)
				tl := must("query", "timeline", "--db", db, live[i].ID)
				if tl != tw {
					t.Errorf("cluster %s: timeline of %s live:\n%s\npost-mortem:\n%s", c, live[i].ID, tl, tw)
				}
			}
		}
	}
}

var (
	receivedField = regexp.MustCompile(`"requestReceivedTimestamp":"[^"]*"`)
	stageField    = regexp.MustCompile(`"stageTimestamp":"[^"]*"`)
)

// fleetLine is template l with auditID i, received at and completed a
// millisecond later: every line of a cluster apart in time and identity.
func fleetLine(l []byte, i int, at time.Time) []byte {
	const ts = "2006-01-02T15:04:05.000000Z"
	l = auditIDField.ReplaceAll(l, []byte(`"auditID":"`+tortureID(i)+`"`))
	l = receivedField.ReplaceAll(l, fmt.Appendf(nil, `"requestReceivedTimestamp":"%s"`, at.Format(ts)))
	l = stageField.ReplaceAll(l, fmt.Appendf(nil, `"stageTimestamp":"%s"`, at.Add(time.Millisecond).Format(ts)))
	return append(l, '\n')
}

// fleetChange is a change as `query changes --output json` lists it, less
// its cluster.
type fleetChange struct {
	ID, Resource, Name, Verb string
	Writes, Objects          int
	StartedNS                int64 `json:"started_ns"`
	SettledNS                int64 `json:"settled_ns"`
}

func fleetChanges(t *testing.T, out string) []fleetChange {
	t.Helper()
	var cs []fleetChange
	if err := json.Unmarshal([]byte(out), &cs); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return cs
}
