// Package postgres is cpid's engine for fleets: the schema of docs/SCHEMA.md
// in a PostgreSQL database (or a PostgreSQL-compatible one), written by many
// tailers at once and read by many people. It holds SQL and migrations only:
// what to store and when is decided by ingest and reconstruct, through the
// interfaces of the root package.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/blocks"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Store is an open cpid database seen from one cluster: InCluster gives
// another view of it. Records are written to the view's cluster; a
// reconstruct run derives it; readers see only it, or every cluster when
// the view has none (Open's).
type Store struct {
	*conns
	cluster string
}

type conns struct {
	pool *pgxpool.Pool
	dsn  string

	bodies blocks.Writer // packs bodies into blocks
	notice func(string)  // OpenOptions.Notice (nil: none)
}

// migrationLock is the key of the advisory lock that migrations hold, so
// that processes opening a new database at once apply each one once.
const migrationLock = 0x63706964 // "cpid"

// Open connects to the database of dsn (a postgres:// URL or key=value
// string, as libpq takes them) and applies the migrations it has not seen;
// with ReadOnly it checks the schema instead.
func Open(ctx context.Context, dsn string, opts ...cpid.OpenOption) (*Store, error) {
	o := cpid.Options(opts...)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	// A reconstruct run streams its scan on one connection while it saves
	// on another, and a process may run several clusters at once: pgx's
	// default (the number of CPUs, at least 4) is too few. pool_max_conns
	// in the DSN decides when given.
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = max(cfg.MaxConns, 16)
	}
	// No JIT compilation unless the DSN asks for it: the planner's costs
	// of the UI filter's subplans (tens of millions on 5M events) are
	// above jit_above_cost, and compiling the query took 1.5 s of a count
	// that runs in milliseconds. cpid's queries are lookups and scans of
	// narrow rows, where the compiled code saves less than it costs.
	if _, ok := cfg.ConnConfig.RuntimeParams["jit"]; !ok {
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	if o.ReadOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", redacted(cfg), err)
	}
	s := &Store{conns: &conns{pool: pool, dsn: dsn, notice: o.Notice}}
	if o.ReadOnly {
		err = s.checkSchema(ctx)
	} else {
		err = s.migrate(ctx)
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("database %s: %w", redacted(cfg), err)
	}
	return s, nil
}

// checkSchema fails unless every embedded migration is applied: a reading
// command never migrates.
func (s *Store) checkSchema(ctx context.Context) error {
	ms, err := cpid.ReadMigrations(migrationFS, "migrations")
	if err != nil {
		return err
	}
	applied, err := s.applied(ctx)
	if err != nil {
		return err
	}
	return cpid.CheckSchema(ms, applied)
}

// applied returns the versions recorded in schema_migrations with their
// names (migration files), none when the table does not exist
// (undefined_table): one statement, a round trip at every open, where
// asking first whether the table exists made two.
func (s *Store) applied(ctx context.Context) (map[int]string, error) {
	var vs []int64
	var names []string
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(array_agg(version ORDER BY version), '{}'), COALESCE(array_agg(name ORDER BY version), '{}')
		FROM schema_migrations`).Scan(&vs, &names)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" {
		return map[int]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	if len(vs) != len(names) {
		return nil, fmt.Errorf("schema_migrations: %d versions, %d names", len(vs), len(names))
	}
	applied := make(map[int]string, len(vs))
	for i, v := range vs {
		applied[int(v)] = names[i]
	}
	return applied, nil
}

// redacted names a database without its password.
func redacted(cfg *pgxpool.Config) string {
	return fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
}

// Close closes the connections (of every view).
func (s *Store) Close() error {
	s.pool.Close()
	return nil
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
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT cluster COLLATE "C" FROM files ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// SchemaVersion is the highest migration applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// migrate applies, in order and each in its own transaction holding the
// advisory lock, the embedded migrations not yet recorded.
func (s *Store) migrate(ctx context.Context) error { return s.migrateTo(ctx, math.MaxInt) }

// migrateTo is migrate up to version upTo (tests build older databases).
// A database that has every migration up to upTo already (every open but
// the first after an upgrade) is read once and left alone: a transaction
// per migration, each taking the lock and asking whether it was applied,
// was 15 transactions and 75 round trips at every open for writing (the
// terminal UI's first screen in BenchmarkBrowse, every ingest and tail).
func (s *Store) migrateTo(ctx context.Context, upTo int) error {
	ms, err := cpid.ReadMigrations(migrationFS, "migrations")
	if err != nil {
		return err
	}
	latest := ms[len(ms)-1].Version
	applied, err := s.applied(ctx)
	if err != nil {
		return err
	}
	if done, err := allApplied(ms, applied, upTo); done || err != nil {
		return err
	}
	// Whether the database is upgraded (and said so), -1 not known yet:
	// only one that holds records is. One that another process is
	// creating right now has a part of the schema and nothing in it, and
	// migrates in no time.
	upgrade := -1
	for _, m := range ms {
		if m.Version > upTo {
			break
		}
		ran := false
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				version    BIGINT PRIMARY KEY,
				name       TEXT NOT NULL,
				applied_ns BIGINT NOT NULL)`); err != nil {
				return err
			}
			var newest int
			if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&newest); err != nil {
				return err
			}
			if newest > latest {
				return newer{cpid.NewerSchemaError(newest, latest)}
			}
			if upgrade < 0 {
				upgrade = 0
				var has bool
				if newest > 0 { // the tables of records are in schema v1
					if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM audit_events) OR EXISTS (SELECT 1 FROM log_records)`).Scan(&has); err != nil {
						return err
					}
				}
				if has {
					upgrade = 1
				}
			}
			var done bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, m.Version).Scan(&done); err != nil || done {
				return err
			}
			if upgrade > 0 && s.notice != nil {
				s.notice(cpid.MigrationNotice(m))
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			if step := migrationSteps[m.Version]; step != nil {
				if err := step(ctx, tx); err != nil {
					return err
				}
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations(version, name, applied_ns) VALUES ($1, $2, $3)`,
				m.Version, m.Name, time.Now().UnixNano())
			ran = err == nil
			return err
		})
		var nw newer
		if errors.As(err, &nw) {
			return nw.error
		}
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if after := migrationsAfter[m.Version]; ran && after != "" {
			if _, err := s.pool.Exec(ctx, after); err != nil {
				return fmt.Errorf("after migration %s: %w", m.Name, err)
			}
		}
	}
	return nil
}

// migrationsAfter are statements run once a migration has committed, by
// the process that applied it, outside any transaction (VACUUM cannot run
// in one). 0019 rewrites changes (a number for each change): the new
// table has no visibility map, so that the filter's index-only scans of
// changes_search read the table for every change until autovacuum comes,
// which a rewrite does not call (no row was inserted or deleted).
var migrationsAfter = map[int]string{
	19: `VACUUM (ANALYZE) changes, change_terms, search_terms`,
}

// allApplied reports whether every migration of ms up to version upTo is
// in applied; a schema newer than ms, or another build's, is an error
// (cpid.CheckApplied), as migrating finds it.
func allApplied(ms []cpid.Migration, applied map[int]string, upTo int) (bool, error) {
	if err := cpid.CheckApplied(ms, applied); err != nil {
		return false, err
	}
	for _, m := range ms {
		if _, done := applied[m.Version]; m.Version <= upTo && !done {
			return false, nil
		}
	}
	return true, nil
}

// migrationSteps are the parts of migrations that SQL cannot do, run in the
// migration's transaction after its SQL.
var migrationSteps = map[int]func(context.Context, pgx.Tx) error{
	3: packLegacyBodies,
	4: backfillTraceparents,
}

// newer is a schema newer than this program's, found by a migration.
type newer struct{ error }

// IsFull reports an error of a database that cannot grow: disk_full
// (SQLSTATE 53100) or ENOSPC. A writer may wait and try again.
func IsFull(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "53100" {
		return true
	}
	return errors.Is(err, syscall.ENOSPC)
}

// IsDown reports an error of a server that went away: it closed the
// connection (it crashed, or a PANIC on a full WAL disk stopped it, or it
// was shut down or restarted), or cannot be reached, or is still starting
// up. A writer may wait and try again. An error the server sent about the
// request itself is not one.
func IsDown(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// admin_shutdown, crash_shutdown, cannot_connect_now; connection
		// exceptions.
		return pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03" || strings.HasPrefix(pe.Code, "08")
	}
	var ne *net.OpError
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// explainDown says what an error of a server that went away (IsDown) means
// for a write, in words a user can act on; other errors are returned as
// they are.
func explainDown(err error) error {
	if err == nil || !IsDown(err) {
		return err
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return fmt.Errorf("the PostgreSQL server is not reachable (it may be down, or starting again after a crash: check its log; a full disk stops it): %w", err)
	}
	return fmt.Errorf("the PostgreSQL server closed the connection during the write (it may have crashed: check its log; a full disk stops it): %w", err)
}
