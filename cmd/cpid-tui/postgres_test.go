package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cpid-dev/cpid/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m, removeSharedDir) }

// TestPostgresCLI: ingest, reconstruct and the queries with --db
// postgres://… give what they give on a SQLite file, on every real fixture.
func TestPostgresCLI(t *testing.T) {
	t.Parallel()
	for _, fx := range []string{"basic", "instrumented", "figure-5", "paper-5-1-1", "paper-5-1-1-stock", "paper-5-1-2", "rollout-interrupted",
		"node-loss", "kcm-restart", "leader-change", "leader-change-metadata", "conflicts", "cronjob", "metadata-policy", "traced", "waits"} {
		t.Run(fx, func(t *testing.T) {
			t.Parallel()
			bundle := filepath.Join("..", "..", "fixtures", fx, "bundle")
			lite := reconstructedFixture(t, bundle)
			pg := pgtest.NewDatabase(t)
			must := func(args ...string) string {
				t.Helper()
				code, out, errOut := runCmd(t, nil, args...)
				if code != 0 {
					t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
				}
				return out
			}
			must("ingest", "--db", pg, bundle)
			must("reconstruct", "--db", pg)
			for _, q := range [][]string{
				{"query", "changes", "--output", "json"},
				{"query", "changes", "--sort", "duration"},
				{"query", "sli", "--output", "json"},
				{"query", "anomalies", "--output", "json"},
				{"query", "hops", "--output", "json"},
				// Every body, as each engine's view decodes it from its blocks.
				{"sql", "--output", "csv", "select event_id, request_object, response_object, response_status from audit_bodies order by event_id"},
			} {
				want := must(append(q, "--db", lite)...)
				if got := must(append(q, "--db", pg)...); got != want {
					t.Errorf("%v differs:\npostgres:\n%s\nsqlite:\n%s", q, got, want)
				}
			}
			var ids []struct{ ID, Resource, APIGroup, Namespace, Name string }
			if err := jsonUnmarshal(must("query", "changes", "--output", "json", "--db", lite), &ids); err != nil {
				t.Fatal(err)
			}
			// Eight changes of each fixture, spread over it, read by each
			// command: the conformance suite (storetest) reads every
			// change through both engines.
			for i, c := range ids {
				if !spread(i, len(ids), 8) {
					continue
				}
				typ := c.Resource
				if c.APIGroup != "" {
					typ += "." + c.APIGroup
				}
				qs := [][]string{{"query", "timeline", c.ID, "--output", "json"}, {"query", "spans", c.ID},
					{"history", typ + "/" + c.Name, "-n", c.Namespace, "--diff", "--output", "json"},
					{"diff", c.ID, ids[(i+1)%len(ids)].ID, "--output", "json"}}
				for _, q := range qs {
					want := must(append(q, "--db", lite)...)
					if got := must(append(q, "--db", pg)...); got != want {
						t.Errorf("%v differs:\npostgres:\n%s\nsqlite:\n%s", q, got, want)
					}
				}
			}
		})
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// TestPostgresServerLost: when the PostgreSQL server dies in the middle of
// a write (a crash; a PANIC on a full WAL disk), tail says what happened
// in words a user can act on, keeps what it stored and what it read, tries
// the batch again until the server is back, and stores it once; serve
// answers 500 meanwhile, saying the same, and stores the retried post.
// Before, tail exited 1 saying "store: unexpected EOF".
func TestPostgresServerLost(t *testing.T) {
	srv := pgtest.StartTest(t, "synchronous_commit=on") // a commit acknowledged survives the crash
	ctx := context.Background()
	dsn, err := srv.CreateDatabase(ctx, "cpid")
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return -1
		}
		defer conn.Close(ctx)
		var n int
		if conn.QueryRow(ctx, `SELECT count(*) FROM audit_events`).Scan(&n) != nil {
			return -1
		}
		return n
	}
	defer func(e time.Duration) { tailRetryEvery = e }(tailRetryEvery)
	tailRetryEvery = 10 * time.Millisecond
	log := filepath.Join(t.TempDir(), "audit.log")
	writeLines(t, log, userCreate(1))
	var stderr lockedBuffer
	stop := startTail(t, &stderr, "--db", dsn, "--audit-log", log)
	defer func() {
		if t.Failed() {
			t.Logf("tail's stderr:\n%s", stderr.String())
		}
	}()
	waitOn(t, "the first event stored", func() bool { return count() == 1 }, caughtUp, nil)
	addr, _, serveErr := startServe(t, "--db", dsn)

	// The next write waits for a lock the test holds, so that the server
	// dies in the middle of it.
	lock, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(ctx)
	if _, err := lock.Exec(ctx, `BEGIN; LOCK TABLE audit_events IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, userCreate(2))
	f.Close()
	eventually(t, "tail's write waiting for the lock", func() bool {
		var n int
		lock.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = 'cpid'`).Scan(&n)
		return n == 1
	})
	srv.Kill()
	const said = "the PostgreSQL server closed the connection during the write (it may have crashed: check its log; a full disk stops it)"
	waitOn(t, "tail saying the server closed the connection", func() bool {
		return strings.Contains(stderr.String(), said) && strings.Contains(stderr.String(), "trying again every 10ms")
	}, stderr.woken, nil)

	// serve, meanwhile, answers 500 and says why; the post is retried.
	body := eventList(goodEvents(t, 0, 1)...)
	if code, _, msg := post(t, http.DefaultClient, "http://"+addr+"/", "application/json", bytes.NewReader(body)); code != 500 {
		t.Errorf("a post while the server is down: %d %q, want 500", code, msg)
	}
	if s := serveErr.String(); !strings.Contains(s, "the PostgreSQL server") || !strings.Contains(s, "check its log; a full disk stops it") {
		t.Errorf("serve's stderr does not say what happened:\n%s", s)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	waitOn(t, "tail's batch stored once the server is back", func() bool { return count() == 2 }, caughtUp, nil)
	if code, _, msg := post(t, http.DefaultClient, "http://"+addr+"/", "application/json", bytes.NewReader(body)); code != 200 {
		t.Errorf("the post again, the server back: %d %q, want 200", code, msg)
	}
	if n := count(); n != 3 {
		t.Errorf("%d events stored, want 3: the first, the one tail read during the crash, the one posted", n)
	}
	if code := stop(); code != 0 {
		t.Errorf("tail exit %d:\n%s", code, stderr.String())
	}
	if s := stderr.String(); !strings.Contains(s, "stored again after waiting") || strings.Count(s, "trying again") != 1 {
		t.Errorf("tail's stderr:\n%s\nwant the lost server said once, and the recovery", s)
	}
}
