package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// Bulk is a new database being loaded in one go: cpid-tui ingest into a
// --db that does not exist yet. The records go to a file beside it
// (PATH.partial), written with no journal on disk, no fsync and no indexes
// but the keys (the content hashes that skip duplicates); Finish builds the
// indexes, turns the file to WAL mode and moves it into place. A crash
// before that leaves only PATH.partial, which the next OpenBulk removes:
// never half a database at PATH. Writes are the Store's, so duplicates,
// batches and ids are as in any other database.
type Bulk struct {
	*Store
	final   string
	lock    *os.File // flock(2)ed while the load runs
	indexes []string // the CREATE INDEX statements put off to Finish
}

// ErrExists is OpenBulk's error when a database is at the path already.
var ErrExists = errors.New("a database is there already")

// OpenBulk starts the bulk load of a new database at path.
func OpenBulk(ctx context.Context, path string) (*Bulk, error) {
	final, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(final); err == nil {
		return nil, fmt.Errorf("open database %s: %w", path, ErrExists)
	}
	partial := final + ".partial"
	lock, err := os.OpenFile(partial, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create database %s: %w", path, err)
	}
	if busy, err := tryLock(lock); err != nil || busy {
		lock.Close()
		if busy {
			return nil, fmt.Errorf("create database %s: another cpid-tui ingest is creating it (%s)", path, partial)
		}
		return nil, fmt.Errorf("create database %s: lock %s: %w", path, partial, err)
	}
	// What is there is a load that died: start again.
	if err := lock.Truncate(0); err != nil {
		lock.Close()
		return nil, fmt.Errorf("create database %s: %w", path, err)
	}
	for _, side := range []string{"-journal", "-wal", "-shm"} {
		os.Remove(partial + side)
	}
	w, err := sql.Open("sqlite", bulkDSN(partial))
	if err != nil {
		lock.Close()
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	b := &Bulk{Store: &Store{conns: &conns{path: partial, w: w, r: w, fileIDs: map[string]int64{}}}, final: final, lock: lock}
	fail := func(err error) (*Bulk, error) {
		b.Abandon()
		return nil, fmt.Errorf("create database %s: %w", path, err)
	}
	if err := b.migrate(ctx); err != nil {
		return fail(err)
	}
	// Every index but the keys is built at the end, by a sort: measured on
	// 300k events, keeping the time-ordered ones up during the load cost
	// 0.9 s more in the writer than the 0.6 s their sort takes.
	rows, err := w.QueryContext(ctx, `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL
		AND tbl_name IN ('audit_events', 'log_records') AND sql NOT LIKE 'CREATE UNIQUE%' ORDER BY name`)
	if err != nil {
		return fail(err)
	}
	var names []string
	for rows.Next() {
		var name, q string
		if err := rows.Scan(&name, &q); err != nil {
			rows.Close()
			return fail(err)
		}
		names = append(names, name)
		b.indexes = append(b.indexes, q)
	}
	if err := rows.Close(); err != nil {
		return fail(err)
	}
	for _, n := range names {
		if _, err := w.ExecContext(ctx, `DROP INDEX `+n); err != nil {
			return fail(err)
		}
	}
	return b, nil
}

// bulkDSN is the URI of the bulk writer: the rollback journal in memory
// (a failed transaction still rolls back; a crash loses the file, which
// is thrown away), no fsync, the file locked for this connection alone.
func bulkDSN(path string) string {
	return fileURI(path, nil,
		"journal_mode(MEMORY)", "synchronous(OFF)", "locking_mode(EXCLUSIVE)", "foreign_keys(ON)",
		// The index builds of Finish sort in temporary files, not in
		// memory: memory stays the same whatever the size of the database.
		"temp_store(FILE)", "threads(0)",
		// 32 MiB of page cache: the only index kept up in random order
		// is the content hashes' (about 26 MB for a million events).
		"cache_size(-32768)")
}

// Finish builds the indexes put off, makes the file a WAL database like
// any other, writes it to disk and moves it to the path OpenBulk was
// given. It never replaces a database that appeared there meanwhile.
func (b *Bulk) Finish(ctx context.Context) error {
	// The load's buffers are garbage now: give them back before SQLite
	// sorts, so that the two do not add up.
	debug.FreeOSMemory()
	err := b.tx(ctx, func(tx *sql.Tx) error {
		for _, q := range b.indexes {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", strings.Fields(q)[2], err)
			}
		}
		return nil
	})
	if err == nil {
		_, err = b.w.ExecContext(ctx, `PRAGMA journal_mode = WAL`)
	}
	if cerr := b.w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncFile(b.path)
	}
	if err == nil {
		// A link, not a rename: it fails when a file is at the path.
		if err = os.Link(b.path, b.final); errors.Is(err, os.ErrExist) {
			b.lock.Close()
			return fmt.Errorf("a database appeared at %s while this ingest created one: it is left alone, and this one is %s", b.final, b.path)
		}
	}
	if err != nil {
		b.lock.Close()
		return fmt.Errorf("finish database %s (%s is left as it is): %w", b.final, b.path, err)
	}
	os.Remove(b.path)
	for _, side := range []string{"-wal", "-shm"} {
		os.Remove(b.path + side)
	}
	err = syncFile(filepath.Dir(b.final))
	b.lock.Close()
	return err
}

// Abandon throws the partial database away.
func (b *Bulk) Abandon() error {
	b.w.Close()
	for _, side := range []string{"", "-journal", "-wal", "-shm"} {
		os.Remove(b.path + side)
	}
	return b.lock.Close()
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
