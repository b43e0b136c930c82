package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/cpid-dev/cpid"
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
	indexes []index  // put off to Finish
}

// index is a CREATE INDEX statement and the index's name.
type index struct{ name, sql string }

// ErrExists is OpenBulk's error when a database is at the path already.
var ErrExists = errors.New("a database is there already")

// OpenBulk starts the bulk load of a new database at path. While another
// process creates it, OpenBulk waits (telling the OpenOption's Notice); a
// database that is there, or appeared meanwhile, is ErrExists: open it
// with Open and append.
func OpenBulk(ctx context.Context, path string, opts ...cpid.OpenOption) (*Bulk, error) {
	final, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(final); err == nil {
		return nil, fmt.Errorf("open database %s: %w", path, ErrExists)
	}
	lock, err := lockCreation(ctx, final, cpid.Options(opts...).Notice)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(final); err == nil {
		doneCreating(lock, final)
		return nil, fmt.Errorf("open database %s: %w", path, ErrExists)
	}
	partial := final + ".partial"
	// What is there is a load that died: start again.
	if err := lock.Truncate(0); err != nil {
		lock.Close()
		return nil, fmt.Errorf("create database %s: %w", path, err)
	}
	for _, side := range []string{"-journal", "-wal", "-shm"} {
		os.Remove(partial + side)
	}
	w, batch, err := openBulkDB(partial)
	if err != nil {
		lock.Close()
		return nil, err
	}
	b := &Bulk{Store: &Store{conns: &conns{path: partial, w: w, r: w, fileIDs: map[string]int64{}, batch: batch}}, final: final, lock: lock}
	fail := func(err error) (*Bulk, error) {
		b.Abandon()
		return nil, fmt.Errorf("create database %s: %w", path, err)
	}
	if err := b.migrate(ctx); err != nil {
		return fail(err)
	}
	// Every index of the records is built at the end, by a sort, the
	// content hashes' first. Measured on a million synthetic events with
	// SQLite in C: keeping the hashes' unique index up during the load
	// (random inserts, past the page cache) cost 5 s of 15; keeping the
	// time-ordered ones up cost more in the writer than their sort.
	rows, err := w.QueryContext(ctx, `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL
		AND tbl_name IN ('audit_events', 'log_records') ORDER BY sql NOT LIKE 'CREATE UNIQUE%', name`)
	if err != nil {
		return fail(err)
	}
	for rows.Next() {
		var name, q string
		if err := rows.Scan(&name, &q); err != nil {
			rows.Close()
			return fail(err)
		}
		b.indexes = append(b.indexes, index{name, q})
	}
	if err := rows.Close(); err != nil {
		return fail(err)
	}
	for _, ix := range b.indexes {
		if _, err := w.ExecContext(ctx, `DROP INDEX `+ix.name); err != nil {
			return fail(err)
		}
	}
	return b, nil
}

// openBulkDB opens the one connection of a bulk load: SQLite in C, its
// inserts by the batch, where the build has cgo; else the pure-Go SQLite
// of every other connection.
func openBulkDB(path string) (*sql.DB, *batchExec, error) {
	if haveC {
		return openC(bulkDSN(path))
	}
	w, err := sql.Open("sqlite", bulkDSN(path))
	if err != nil {
		return nil, nil, err
	}
	return oneConn(w), nil, nil
}

// bulkDSN is the URI of the bulk writer: the rollback journal in memory
// (a failed transaction still rolls back; a crash loses the file, which
// is thrown away), no fsync, the file locked for this connection alone.
func bulkDSN(path string) string {
	return fileURI(path, nil,
		"journal_mode(MEMORY)", "synchronous(OFF)", "locking_mode(EXCLUSIVE)",
		// No foreign key checks: every id the load writes comes from a row
		// it inserted just before (files, audit events, body blocks), and
		// each check is a B-tree search per row (measured: 0.4 s of 8.6 on
		// a million events). TestBulkDuplicates checks the result.
		"foreign_keys(OFF)",
		// The index builds of Finish sort in temporary files, not in
		// memory: memory stays the same whatever the size of the database.
		// Helper threads sort runs while this one reads the table (two:
		// 2.2 s less on a million events than none; four, even on two
		// cores, keep both busy: 0.25 s less than two).
		"temp_store(FILE)", "threads(4)",
		// Pages of 16 KiB: fewer B-tree pages to balance and write, and
		// the body blocks in fewer overflow pages (measured: 1.3 µs an
		// event less than 4 KiB). Set before cache_size, which counts its
		// pages with the page size at the time.
		"page_size(16384)",
		// 1 MiB of page cache: the load only appends (no index is kept
		// up), and the sorts of Finish make runs of the cache's size, so
		// small runs are more of them for the helper threads, each in the
		// processor's cache (measured on a million events, all indexes:
		// 2.33 s with 8 MiB and two threads, 2.08 s with 1 MiB and four;
		// the whole ingest 0.4 s less).
		"cache_size(-1024)")
}

// Finish builds the indexes put off, makes the file a WAL database like
// any other, writes it to disk and moves it to the path OpenBulk was
// given. It never replaces a database that appeared there meanwhile.
// The load kept no unique index: the records whose content hash came
// twice (the same file given twice, overlapping copies) are removed here,
// the first one kept, and counted in the duplicates it returns.
func (b *Bulk) Finish(ctx context.Context) (dups cpid.Written, err error) {
	// The records removed were stored as new by Write: Audits and Logs
	// are negative, the duplicates positive, for the caller's Add.
	defer func() { dups.Audits, dups.Logs = -dups.AuditDups, -dups.LogDups }()
	// The load's buffers are garbage now: give them back before SQLite
	// sorts, so that the two do not add up.
	debug.FreeOSMemory()
	err = b.tx(ctx, func(tx *sql.Tx) error {
		for _, ix := range b.indexes {
			_, err := tx.ExecContext(ctx, ix.sql)
			if table, ok := hashIndexes[ix.name]; ok && isConstraint(err) {
				var n int
				if n, err = dedupe(ctx, tx, table); err == nil {
					_, err = tx.ExecContext(ctx, ix.sql)
				}
				if table == "audit_events" {
					dups.AuditDups = n
				} else {
					dups.LogDups = n
				}
			}
			if err != nil {
				return fmt.Errorf("%s: %w", ix.name, err)
			}
		}
		return nil
	})
	if err == nil {
		_, err = b.w.ExecContext(ctx, `PRAGMA journal_mode = WAL`)
	}
	if b.batch != nil {
		b.batch.close()
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
			return cpid.Written{}, fmt.Errorf("a database appeared at %s while this ingest created one: it is left alone, and this one is %s", b.final, b.path)
		}
	}
	if err != nil {
		b.lock.Close()
		return cpid.Written{}, fmt.Errorf("finish database %s (%s is left as it is): %w", b.final, b.path, err)
	}
	os.Remove(b.path)
	for _, side := range []string{"-wal", "-shm"} {
		os.Remove(b.path + side)
	}
	err = syncFile(filepath.Dir(b.final))
	b.lock.Close()
	return dups, err
}

// hashIndexes are the unique indexes of the content hashes, by name, and
// their tables.
var hashIndexes = map[string]string{"audit_events_hash": "audit_events", "log_records_hash": "log_records"}

// dedupe removes the records of table whose hash an earlier record has
// (and an event's body references), and says how many it removed.
func dedupe(ctx context.Context, tx *sql.Tx, table string) (int, error) {
	stmts := []string{
		`CREATE TEMP TABLE cpid_dups AS SELECT id FROM
			(SELECT id, hash, lag(hash) OVER (ORDER BY hash, id) AS prev FROM ` + table + `) WHERE hash = prev`,
		`DELETE FROM audit_body_refs WHERE event_id IN (SELECT id FROM temp.cpid_dups)`,
		`DELETE FROM ` + table + ` WHERE id IN (SELECT id FROM temp.cpid_dups)`,
		`DROP TABLE temp.cpid_dups`,
	}
	if table != "audit_events" {
		stmts = slices.Delete(stmts, 1, 2)
	}
	var n int64
	for _, q := range stmts {
		r, err := tx.ExecContext(ctx, q)
		if err != nil {
			return 0, fmt.Errorf("remove the duplicates of %s: %w", table, err)
		}
		if strings.HasPrefix(q, "DELETE FROM "+table) {
			n, _ = r.RowsAffected()
		}
	}
	return int(n), nil
}

// Abandon throws the partial database away.
func (b *Bulk) Abandon() error {
	if b.batch != nil {
		b.batch.close()
	}
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
