// Package sqlite is cpid's embedded store: a SQLite database in WAL mode with
// one writer connection, a separate pool of readers, and embedded migrations.
// It owns every SQL string of the project.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/blocks"
	sqlite3 "modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3lib "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Store is an open cpid database, seen from one cluster: InCluster gives
// another view of the same database. Records are written to the view's
// cluster; a reconstruct run derives it; readers see only it, or every
// cluster when the view has none (Open's).
type Store struct {
	*conns
	// cluster is the view's cluster; "" for every cluster (reads), and the
	// cluster "default" for writes.
	cluster string
}

// conns is what the views of one database share.
type conns struct {
	path string
	// w is the only connection that writes: SQLite allows one writer at a
	// time, and funnelling writes through one connection turns lock waits
	// into a queue in Go instead of SQLITE_BUSY retries.
	w *sql.DB
	// r is a pool of query-only connections; in WAL mode they read a
	// consistent snapshot while the writer commits.
	r *sql.DB

	mu      sync.Mutex       // guards fileIDs and open: Write may be called from several goroutines
	fileIDs map[string]int64 // cluster and path -> files.id of committed rows
	bodies  blocks.Writer    // packs bodies into blocks
	// batch, when set, runs the inserts of a write by the batch in C
	// SQLite (the bulk load of a new database, cbatch_cgo.go).
	batch *batchExec
	// notice is OpenOptions.Notice (nil: none).
	notice func(string)
	// native: both pools are SQLite in C (OpenOptions.Native, cgo).
	native bool
}

// openSQL opens the pool of connections to the URI dsn (fileURI): SQLite
// in C when native is asked for and the build has it, else the pure-Go
// SQLite.
func openSQL(dsn string, native bool) (*sql.DB, error) {
	if native && haveC {
		c, err := newNativeConnector(dsn)
		if err != nil {
			return nil, err
		}
		return sql.OpenDB(c), nil
	}
	return sql.Open("sqlite", dsn)
}

// InCluster returns the view of the database from cluster name ("" for
// every cluster). It shares the connections: close only one view.
func (s *Store) InCluster(name string) *Store { return &Store{conns: s.conns, cluster: name} }

// Cluster is the view's cluster, "" for every cluster.
func (s *Store) Cluster() string { return s.cluster }

// own is the cluster that writes and reconstruct runs of the view act on.
func (s *Store) own() string { return cpid.OwnCluster(s.cluster) }

// Clusters returns the clusters that have records, sorted.
func (s *Store) Clusters(ctx context.Context) ([]string, error) {
	return column(ctx, s.r, `SELECT DISTINCT cluster FROM files ORDER BY cluster`)
}

// Open opens (creating if needed, with mode 0600) the database at path and
// applies any migrations it has not seen yet; with ReadOnly it only opens
// an existing database of the current schema.
func Open(ctx context.Context, path string, opts ...cpid.OpenOption) (*Store, error) {
	o := cpid.Options(opts...)
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if o.ReadOnly {
		// A database on its way (a load, or a writer whose schema is not
		// all there yet) is read once it is done.
		if err := waitCreation(ctx, abs, o.Notice); err != nil {
			return nil, fmt.Errorf("open database %s: %w", path, err)
		}
		return openReadOnly(ctx, path, abs, o.Native)
	}
	if _, err := os.Lstat(abs); errors.Is(err, os.ErrNotExist) {
		// Created under the creation lock (create.go), held until the
		// schema is there: a bulk load waits for it, then appends.
		lock, err := lockCreation(ctx, abs, o.Notice)
		if err != nil {
			return nil, err
		}
		defer doneCreating(lock, abs)
	} else if err := waitCreation(ctx, abs, o.Notice); err != nil {
		// The file is there, its schema maybe not yet.
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	// Create the file ourselves so its mode is 0600 whatever the umask;
	// SQLite gives the -wal and -shm files the mode of the database file.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	f.Close()

	// The writer: one connection, of SQLite in C with its inserts by the
	// batch when native.
	var w *sql.DB
	var batch *batchExec
	if o.Native && haveC {
		w, batch, err = openC(dsn(abs, false))
	} else {
		w, err = sql.Open("sqlite", dsn(abs, false))
	}
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	oneConn(w)
	r, err := openSQL(dsn(abs, true), o.Native)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	r.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))
	s := &Store{conns: &conns{path: abs, w: w, r: r, fileIDs: map[string]int64{}, notice: o.Notice,
		native: batch != nil, batch: batch}}
	if err := s.migrateRetrying(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	return s, nil
}

// openReadOnly is Open with ReadOnly, its pools SQLite in C when native
// is asked for and the build has it.
func openReadOnly(ctx context.Context, path, abs string, native bool) (*Store, error) {
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("no database at %s (cpid-tui ingest creates one)", path)
	case err != nil:
		return nil, fmt.Errorf("open database %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("open database %s: not a file", path)
	}
	s, err := openPools(ctx, abs, false, native)
	if err != nil && walEmpty(abs) {
		// A WAL database needs its -shm file, which a reader cannot create
		// in a read-only directory. With no WAL content, nothing is in it
		// to miss: read the file as it is (immutable), without one.
		if s2, err2 := openPools(ctx, abs, true, native); err2 == nil {
			s, err = s2, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if err := s.checkSchema(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	return s, nil
}

// openPools opens the read-only pools of a store and reads from them once.
// Both read only: the "writer" is there so that a write through a
// read-only store fails in SQLite rather than in Go. native: SQLite in C
// where the build has it (openSQL).
func openPools(ctx context.Context, abs string, immutable, native bool) (*Store, error) {
	w, err := openSQL(roDSN(abs, immutable), native)
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	r, err := openSQL(roDSN(abs, immutable), native)
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))
	s := &Store{conns: &conns{path: abs, w: w, r: r, fileIDs: map[string]int64{}}}
	var n int
	if err := r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// walEmpty reports a database with no write-ahead log content.
func walEmpty(abs string) bool {
	fi, err := os.Stat(abs + "-wal")
	return errors.Is(err, os.ErrNotExist) || err == nil && fi.Size() == 0
}

// roDSN is the URI of a read-only connection. It sets no journal mode:
// that is a write, and a database cpid wrote is in WAL mode already.
// immutable tells SQLite that nobody changes the file: no locks, no -shm.
func roDSN(path string, immutable bool) string {
	q := url.Values{}
	q.Set("mode", "ro")
	if immutable {
		q.Set("immutable", "1")
	}
	return fileURI(path, q, "busy_timeout(10000)", "foreign_keys(ON)", "temp_store(MEMORY)", "threads(4)", "query_only(ON)")
}

// fileURI is the file: URI of path with the query q and the driver's
// _pragma parameters, applied to every connection in order.
func fileURI(path string, q url.Values, pragmas ...string) string {
	if q == nil {
		q = url.Values{}
	}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: q.Encode()}
	return u.String()
}

// checkSchema fails unless every embedded migration is applied, and says
// which schema version a reader needs: a reading command never migrates.
func (s *Store) checkSchema(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n); err != nil {
		return err
	}
	applied := map[int]string{}
	if n > 0 {
		if applied, err = appliedMigrations(ctx, s.r); err != nil {
			return err
		}
	}
	return cpid.CheckSchema(ms, applied)
}

// appliedMigrations reads schema_migrations: each version's name.
func appliedMigrations(ctx context.Context, db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (map[int]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT version, name FROM schema_migrations`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	applied := map[int]string{}
	for rows.Next() {
		var v int
		var name string
		if err := rows.Scan(&v, &name); err != nil {
			return nil, fmt.Errorf("schema_migrations: %w", err)
		}
		applied[v] = name
	}
	return applied, rows.Err()
}

// oneConn makes db one connection, kept open for good: the writer's
// pragmas and its prepared statements live as long as the store.
func oneConn(db *sql.DB) *sql.DB {
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return db
}

// writerCacheKiB is the writer's page cache (dsn).
const writerCacheKiB = 128 << 10

// leanCacheKiB is the writer's page cache while it sorts and appends
// rather than looks up (a migration, a reconstruct run): 16 MiB.
const leanCacheKiB = 16 << 10

// leanSettings are the writer's settings for such work: a small page cache
// and sorts on file (each sort takes as much as the cache); writerSettings
// give it its own back (dsn).
var (
	leanSettings   = []string{`PRAGMA temp_store = FILE`, fmt.Sprintf(`PRAGMA cache_size = -%d`, leanCacheKiB)}
	writerSettings = []string{`PRAGMA temp_store = MEMORY`, fmt.Sprintf(`PRAGMA cache_size = -%d`, writerCacheKiB)}
)

// apply runs settings on db (a connection or the one-connection writer),
// all of them, and joins their errors.
func apply(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, settings ...string) error {
	var err error
	for _, q := range settings {
		if _, e := db.ExecContext(ctx, q); e != nil {
			err = errors.Join(err, fmt.Errorf("%s: %w", q, e))
		}
	}
	return err
}

// dsn builds a file: URI so that the driver applies every option; a plain
// path with a query string would be taken as part of the file name.
func dsn(path string, readOnly bool) string {
	pragmas := []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(ON)",
		"temp_store(MEMORY)", "threads(4)"}
	q := url.Values{}
	if readOnly {
		pragmas = append(pragmas, "query_only(ON)")
	} else {
		// A 128 MiB page cache for the writer: bulk ingest touches index
		// pages all over the file (content hashes are random).
		pragmas = append(pragmas, fmt.Sprintf("cache_size(-%d)", writerCacheKiB))
		// The WAL goes back into the database every 10,000 pages (40 MiB
		// of 4 KiB pages, 160 of a bulk-loaded database's 16 KiB), not
		// every 1,000: a live tailer's commits rewrite the same
		// index pages, which a checkpoint then copied again and again.
		// tailbench at 20,000 events/s, 4 pairs alternated at load 1.4-3.4:
		// lag p99 326-474 ms against 524-788 ms, the CPU an event the
		// same. The last connection to close still checkpoints and
		// removes the WAL.
		pragmas = append(pragmas, "wal_autocheckpoint(10000)")
		// BEGIN IMMEDIATE takes the write lock up front, so a transaction
		// never fails half way on a lock upgrade.
		q.Set("_txlock", "immediate")
	}
	return fileURI(path, q, pragmas...)
}

// Path is the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Close closes both connection pools.
func (s *Store) Close() error {
	if s.batch != nil {
		s.batch.close() // before the connection
	}
	return errors.Join(s.r.Close(), s.w.Close())
}

// migrationSteps are the parts of migrations that SQL cannot do, run in the
// migration's transaction after its SQL.
var migrationSteps = map[int]func(context.Context, *sql.Tx) error{
	8: packLegacyBodies,
	9: backfillTraceparents,
}

func migrations() ([]cpid.Migration, error) { return cpid.ReadMigrations(migrationFS, "migrations") }

// migrate applies, in order and each in its own transaction, the embedded
// migrations not yet recorded in schema_migrations.
func (s *Store) migrate(ctx context.Context) error { return s.migrateTo(ctx, math.MaxInt) }

// migrateTo is migrate up to version upTo (tests build older databases).
func (s *Store) migrateTo(ctx context.Context, upTo int) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	return s.applyMigrations(ctx, ms, upTo)
}

// applyMigrations applies the migrations ms up to version upTo
// (migrateTo; tests apply migrations of their own).
func (s *Store) applyMigrations(ctx context.Context, ms []cpid.Migration, upTo int) error {
	// In a write transaction (BEGIN IMMEDIATE waits for the write lock): in
	// autocommit the statement reads the schema first and fails at once
	// with SQLITE_BUSY when another first open wrote meanwhile.
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_ns INTEGER NOT NULL)`)
		return err
	})
	if err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	applied, err := appliedMigrations(ctx, s.w)
	if err != nil {
		return err
	}
	if err := cpid.CheckApplied(ms, applied); err != nil {
		return err
	}
	pending := false
	for _, m := range ms {
		_, done := applied[m.Version]
		pending = pending || !done && m.Version <= upTo
	}
	// Only a database that holds records is upgraded (and said so): one
	// that another process is creating right now has a part of the schema
	// and nothing in it, and migrates in no time.
	upgrade := len(applied) > 0 && pending && s.hasRecords(ctx)
	if upgrade {
		// The sorts of index builds spill to temporary files, not to
		// memory as the writer's do, past a page cache of 16 MiB (each
		// sort takes as much as the cache): migrating a million events to
		// v10 peaked at 531 MiB with the writer's settings, 415 MiB with
		// sorts on file, 142 MiB with the smaller cache too (and 12.4 s
		// instead of 14).
		if err := apply(ctx, s.w, leanSettings...); err != nil {
			return err
		}
		defer apply(context.WithoutCancel(ctx), s.w, writerSettings...)
	}
	for _, m := range ms {
		if _, done := applied[m.Version]; done || m.Version > upTo {
			continue
		}
		// Another process may be applying the same migration: the check
		// is repeated inside the write transaction (BEGIN IMMEDIATE holds
		// the database's write lock), so each migration is applied once.
		// Foreign keys off while a migration changes tables (they cannot
		// change inside a transaction; s.w is one connection), checked
		// before it commits: SQLite's procedure for altering a table.
		if _, err := s.w.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
			return err
		}
		err := s.tx(ctx, func(tx *sql.Tx) error {
			var done int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&done); err != nil {
				return err
			}
			if done > 0 {
				return nil // another process applied it meanwhile
			}
			if upgrade && s.notice != nil {
				s.notice(cpid.MigrationNotice(m))
			}
			before, err := schemaOf(ctx, tx)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			if step := migrationSteps[m.Version]; step != nil {
				if err := step(ctx, tx); err != nil {
					return err
				}
			}
			if err := checkForeignKeys(ctx, tx, before); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations(version, name, applied_ns) VALUES (?, ?, ?)`,
				m.Version, m.Name, time.Now().UnixNano())
			return err
		})
		if _, ferr := s.w.ExecContext(ctx, `PRAGMA foreign_keys = ON`); err == nil {
			err = ferr
		}
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// schemaState is what a migration may change that foreign keys depend
// on: the schema's entries (their SQL by type and name) and the rows the
// connection has written (total_changes(), rows of triggers included).
type schemaState struct {
	entries map[string]string
	changes int64
}

// schemaOf reads the schema state of the migration's transaction.
func schemaOf(ctx context.Context, tx *sql.Tx) (schemaState, error) {
	st := schemaState{entries: map[string]string{}}
	if err := tx.QueryRowContext(ctx, `SELECT total_changes()`).Scan(&st.changes); err != nil {
		return st, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT type, name, COALESCE(sql, '') FROM sqlite_schema`)
	if err != nil {
		return st, err
	}
	defer rows.Close()
	for rows.Next() {
		var typ, name, q string
		if err := rows.Scan(&typ, &name, &q); err != nil {
			return st, err
		}
		st.entries[typ+" "+name] = q
	}
	return st, rows.Err()
}

// checkForeignKeys refuses a migration that leaves a row referencing
// nothing, or a foreign key SQLite cannot check, by PRAGMA
// foreign_key_check: over the whole database when the migration wrote a
// row, or dropped or changed anything in the schema (a parent table
// dropped with foreign keys off leaves its children's references
// dangling and writes no row); over its new tables only when it only
// added to the schema, as most do (an index on a large table: the whole
// check read every table with a foreign key, 16 s at ten million events).
func checkForeignKeys(ctx context.Context, tx *sql.Tx, before schemaState) error {
	after, err := schemaOf(ctx, tx)
	if err != nil {
		return err
	}
	whole := after.changes != before.changes
	var added []string
	for k, q := range before.entries {
		if aq, ok := after.entries[k]; !ok || aq != q {
			whole = true
		}
	}
	for k := range after.entries {
		if _, ok := before.entries[k]; !ok && strings.HasPrefix(k, "table ") {
			added = append(added, strings.TrimPrefix(k, "table "))
		}
	}
	checks := []string{`PRAGMA foreign_key_check`}
	if !whole {
		checks = checks[:0]
		for _, t := range added {
			checks = append(checks, `PRAGMA foreign_key_check("`+strings.ReplaceAll(t, `"`, `""`)+`")`)
		}
	}
	for _, q := range checks {
		var table string
		var rowid, parent, fkid any
		switch err := tx.QueryRowContext(ctx, q).Scan(&table, &rowid, &parent, &fkid); {
		case err == nil:
			return fmt.Errorf("it breaks a foreign key: table %s row %v references %v", table, rowid, parent)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
	}
	return nil
}

// hasRecords reports whether the database holds an audit event or a log
// record (both tables are in schema v1); true when it cannot tell, so
// that a migration that may take long is said.
func (s *Store) hasRecords(ctx context.Context) bool {
	var has bool
	err := s.w.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM audit_events) OR EXISTS (SELECT 1 FROM log_records)`).Scan(&has)
	return has || err != nil
}

// SchemaVersion is the highest migration applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// tx runs fn in one write transaction, committing when it returns nil.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// isConstraint reports SQLITE_CONSTRAINT (a unique index refused a row).
func isConstraint(err error) bool {
	if c, ok := cCode(err); ok {
		return c == sqlite3lib.SQLITE_CONSTRAINT
	}
	var se *sqlite3.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3lib.SQLITE_CONSTRAINT
}

// isBusy reports SQLITE_BUSY.
func isBusy(err error) bool {
	var se *sqlite3.Error
	if c, ok := cCode(err); ok {
		return c == sqlite3lib.SQLITE_BUSY
	}
	return errors.As(err, &se) && se.Code()&0xff == sqlite3lib.SQLITE_BUSY
}

// migrateRetrying is migrate, again while SQLite answers SQLITE_BUSY
// without waiting: processes opening a new database at once race while it
// turns to WAL mode (a connection still in rollback mode that would
// deadlock is refused at once, the busy timeout notwithstanding). Each
// migration is checked again in its own transaction, so a retry applies
// none twice.
func (s *Store) migrateRetrying(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := s.migrate(ctx)
		if !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(10+rand.IntN(40)) * time.Millisecond):
		}
	}
}

// IsFull reports an error of a database that cannot grow: SQLITE_FULL
// (the disk is full, or max_page_count reached) or ENOSPC. A writer may
// wait and try again.
func IsFull(err error) bool {
	var se *sqlite3.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3lib.SQLITE_FULL {
		return true
	}
	if c, ok := cCode(err); ok && c == sqlite3lib.SQLITE_FULL {
		return true
	}
	return errors.Is(err, syscall.ENOSPC)
}
