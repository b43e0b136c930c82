package main

import (
	"bytes"
	"context"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	modernc "modernc.org/sqlite"

	"github.com/cpid-dev/cpid/postgres/pgtest"
)

// selects counts the SELECTs that SQLite prepares on the connections to
// the database files of the tests that asked (countSelects): the
// authorizer of each connection opened to one of them counts them, as
// SQLite presents each SELECT of a statement to it when it prepares the
// statement (the driver prepares every query it runs).
var selects struct {
	sync.Mutex
	of map[string]*atomic.Int64 // by database file
}

func init() {
	// Before any connection is opened: the hook runs for each new one.
	modernc.RegisterConnectionHook(func(conn modernc.ExecQuerierContext, dsn string) error {
		u, err := url.Parse(dsn)
		if err != nil {
			return nil
		}
		selects.Lock()
		n := selects.of[u.Path]
		selects.Unlock()
		a, ok := conn.(modernc.AuthorizerRegisterer)
		if n == nil || !ok {
			return nil
		}
		return a.RegisterAuthorizer(func(action modernc.AuthorizerActionCode, _, _, _, _ string) modernc.AuthorizerReturnCode {
			if action == modernc.AuthSelect {
				n.Add(1)
			}
			return modernc.AuthorizerOK
		})
	})
}

// countSelects counts the SELECTs prepared on the connections opened to
// the database file db from now on.
func countSelects(t *testing.T, db string) *atomic.Int64 {
	abs, err := filepath.Abs(db)
	if err != nil {
		t.Fatal(err)
	}
	n := new(atomic.Int64)
	selects.Lock()
	defer selects.Unlock()
	if selects.of == nil {
		selects.of = map[string]*atomic.Int64{}
	}
	selects.of[abs] = n
	return n
}

// TestJSONQueryCount: query changes -o json, which says for each change
// where its time went (from its timeline), runs as many statements for
// every change of a fixture as for one (issue 27, item 7: it ran a
// timeline query per change). The databases count them: SQLite's
// authorizer the SELECTs it prepares, PostgreSQL's pg_stat_statements
// the statements it runs.
func TestJSONQueryCount(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db := reconstructedFixture(t, basicBundle)
		n := countSelects(t, db)
		jsonQueries(t, db, func() int64 { return n.Swap(0) })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		srv := pgtest.StartTest(t, "shared_preload_libraries=pg_stat_statements")
		ctx := context.Background()
		db, err := srv.CreateDatabase(ctx, "queries")
		if err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"ingest", "--db", db, basicBundle}, {"reconstruct", "--db", db}} {
			if code, out, e := runCmd(t, nil, args...); code != 0 {
				t.Fatalf("%v: %d\n%s%s", args, code, out, e)
			}
		}
		conn, err := pgx.Connect(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `CREATE EXTENSION pg_stat_statements`); err != nil {
			t.Fatal(err)
		}
		// What the statements of the test's connection add (the reset,
		// the sum) is the same for each count.
		calls := func() int64 {
			var n int64
			if err := conn.QueryRow(ctx, `SELECT COALESCE(sum(calls), 0)::bigint FROM pg_stat_statements
				WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
				t.Fatal(err)
			}
			return n
		}
		calls()
		jsonQueries(t, db, calls)
	})
}

// jsonQueries compares the statements that count says query changes -o
// json ran for one change and for every change of the database db (count
// returns how many since it was last called).
func jsonQueries(t *testing.T, db string, count func() int64) {
	t.Helper()
	ran := map[int]int64{}
	for _, limit := range []int{1, 0} {
		// The pure-Go SQLite, whose hook counts the statements (the
		// count does not depend on the driver).
		var o, eb bytes.Buffer
		code := run(context.Background(), &env{stdin: strings.NewReader(""), stdout: &o, stderr: &eb, pureReads: true},
			[]string{"query", "changes", "--db", db, "-o", "json", "--limit", strconv.Itoa(limit)})
		out, e := o.String(), eb.String()
		if code != 0 {
			t.Fatalf("query changes -o json --limit %d: %d\n%s", limit, code, e)
		}
		changes := strings.Count(out, `"time_by_reason_ns"`)
		if limit == 1 && changes != 1 || limit == 0 && changes < 5 {
			t.Fatalf("query changes -o json --limit %d listed %d changes with where their time went", limit, changes)
		}
		ran[changes] = count()
	}
	t.Logf("statements by changes listed: %v", ran)
	if len(ran) != 2 {
		t.Fatalf("statements by changes listed: %v", ran)
	}
	var counts []int64
	for _, n := range ran {
		if n == 0 {
			t.Fatalf("no statement counted: %v by changes listed", ran)
		}
		counts = append(counts, n)
	}
	if counts[0] != counts[1] {
		t.Errorf("query changes -o json ran %v statements by changes listed: more changes, more statements", ran)
	}
}
