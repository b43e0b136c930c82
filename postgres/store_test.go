package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/postgres/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func openTest(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOpenMigrates(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	dsn := pgtest.NewDatabase(t)
	t.Logf("server and database ready in %v", time.Since(start))
	for i := range 2 {
		s, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		ms, _ := cpid.ReadMigrations(migrationFS, "migrations")
		var n int
		s.pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n)
		if v, _ := s.SchemaVersion(ctx); n != len(ms) || v != ms[len(ms)-1].Version {
			t.Errorf("open %d: %d migrations recorded, version %d", i+1, n, v)
		}
		s.Close()
	}
}

// TestMigrationNotice: opening a database of an older schema that holds
// records says each migration before it runs it; a new database, or an
// older one with no records, is migrated silently.
func TestMigrationNotice(t *testing.T) {
	ctx := context.Background()
	var said []string
	notice := cpid.WithNotice(func(s string) { said = append(said, s) })
	s, err := Open(ctx, pgtest.NewDatabase(t), notice)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if len(said) != 0 {
		t.Errorf("a new database said %q", said)
	}
	// A database of an older schema with no records migrates in no time,
	// and says nothing: it is what a process that opens a new database
	// sees while another one is creating it (before, the migrations it
	// applied after the other's first were announced).
	dsn, pool := databaseAt(t, 1)
	pool.Close()
	if s, err = Open(ctx, dsn, notice); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if len(said) != 0 {
		t.Errorf("upgrading a v1 database with no records said %q", said)
	}
	dsn, pool = databaseAt(t, 1)
	_, err = pool.Exec(ctx, `WITH f AS (INSERT INTO files(path) VALUES ('kcm.log') RETURNING id)
		INSERT INTO log_records(hash, ts_ns, level, component, msg, fields, file_id, line)
		SELECT '\x01', 1, 'info', 'kcm', 'm', '{}', id, 1 FROM f`)
	pool.Close()
	if err != nil {
		t.Fatal(err)
	}
	said = nil
	if s, err = Open(ctx, dsn, notice); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ms, _ := cpid.ReadMigrations(migrationFS, "migrations")
	if len(said) != len(ms)-1 || !strings.Contains(said[0], "schema v2 ("+ms[1].Name+")") {
		t.Errorf("upgrading a v1 database said %q", said)
	}
}

// databaseAt is a new database migrated to version v, and a pool on it
// for the caller to fill and close.
func databaseAt(t *testing.T, v int) (string, *pgxpool.Pool) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	old := &Store{conns: &conns{pool: pool, dsn: dsn}}
	if err := old.migrateTo(context.Background(), v); err != nil {
		pool.Close()
		t.Fatal(err)
	}
	return dsn, pool
}

// TestConcurrentFirstOpens opens a new database from several processes'
// worth of pools at once: each migration is applied once, every open
// succeeds.
func TestConcurrentFirstOpens(t *testing.T) {
	ctx := context.Background()
	for round := range 3 {
		dsn := pgtest.NewDatabase(t)
		const n = 6
		errs := make(chan error, n)
		start := make(chan struct{})
		for range n {
			go func() {
				<-start
				s, err := Open(ctx, dsn)
				if err == nil {
					s.Close()
				}
				errs <- err
			}()
		}
		close(start)
		for range n {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO schema_migrations VALUES (9999, '9999_future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, dsn); err == nil || !strings.Contains(err.Error(), "newer than this cpid-tui knows") {
		t.Errorf("Open of a newer schema: %v", err)
	}
}

// TestOtherBuildsMigrationRefused: a database whose schema_migrations
// holds a version under another name than this build's, or a version this
// build has none of (0006: there is no PostgreSQL migration of that
// number), was migrated by another build of cpid-tui: a writer and a
// reader refuse it, and say what to do.
func TestOtherBuildsMigrationRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct{ change, want string }{
		{`UPDATE schema_migrations SET name = '0010_a_branch.sql' WHERE version = 10`,
			"version 10 as 0010_a_branch.sql, where this cpid-tui has 0010_change_search.sql"},
		{`INSERT INTO schema_migrations VALUES (6, '0006_a_branch.sql', 0)`,
			"version 6 as 0006_a_branch.sql, where this cpid-tui has no migration of that version"},
	} {
		dsn := pgtest.NewDatabase(t)
		s, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.pool.Exec(ctx, c.change); err != nil {
			t.Fatal(err)
		}
		s.Close()
		for _, opts := range [][]cpid.OpenOption{nil, {cpid.ReadOnly()}} {
			_, err := Open(ctx, dsn, opts...)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "another build of cpid-tui migrated this database") {
				t.Errorf("%s; Open %v: %v", c.change, opts, err)
			}
		}
	}
}

// TestIsDown: the errors of a server that went away (its connection closed
// under a query, a connection refused) are IsDown and said in words; an
// error about the request itself, or a database that does not exist, is
// not: waiting would not cure it.
func TestIsDown(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.StartTest(t)
	dsn, err := srv.CreateDatabase(ctx, "cpid")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	_, bad := conn.Exec(ctx, `SELECT * FROM no_such_table`)
	_, noDB := pgx.Connect(ctx, srv.DSN("no_such_database"))
	srv.Kill()
	_, closed := conn.Exec(ctx, `SELECT 1`)
	_, refused := pgx.Connect(ctx, dsn)
	for _, c := range []struct {
		name string
		err  error
		down bool
		says string
	}{
		{"a query's error", bad, false, ""},
		{"a database that does not exist", noDB, false, ""},
		{"the connection closed under a query", closed, true, "the PostgreSQL server closed the connection during the write (it may have crashed: check its log; a full disk stops it)"},
		{"a connection refused", refused, true, "the PostgreSQL server is not reachable (it may be down, or starting again after a crash: check its log; a full disk stops it)"},
	} {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if IsDown(c.err) != c.down {
			t.Errorf("%s: IsDown(%v) = %v, want %v", c.name, c.err, !c.down, c.down)
		}
		if got := explainDown(c.err).Error(); c.down && !strings.HasPrefix(got, c.says) || !c.down && got != c.err.Error() {
			t.Errorf("%s: said %q", c.name, got)
		}
	}
}
