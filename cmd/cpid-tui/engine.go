package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/postgres"
	"github.com/cpid-dev/cpid/present"
	"github.com/cpid-dev/cpid/sqlite"
)

// store is what the commands use of an engine, seen from one cluster.
type store interface {
	cpid.RecordWriter
	cpid.DerivedStore
	cpid.ChangeReader
	cpid.ObjectLister
	cpid.SQLReader
}

// database is an open database of either engine. This file is the only
// place that chooses an engine.
type database struct {
	view     func(cluster string) store
	clusters func(ctx context.Context) ([]string, error)
	close    func() error
	// full reports a store error that waiting may cure (a full disk);
	// down one of a database server that went away (nil: none can).
	full, down func(error) bool
	// finish and abandon end a bulk load (openForLoad); nil otherwise.
	finish  func(context.Context) (cpid.Written, error)
	abandon func() error
}

// defaultCluster is the cluster of records written without --cluster.
const defaultCluster = cpid.DefaultCluster

// isPostgres reports whether --db names a PostgreSQL database.
func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// access is what a command does with its database.
type access int

const (
	// readWrite creates a missing database and migrates an older one.
	readWrite access = iota
	// readOnly opens an existing database of the current schema only,
	// never creating or migrating it; a read-only file opens. SQLite in C
	// where the build has cgo (cpid.Native): a reading command opens the
	// file once, and its queries run about twice as fast (the filter of
	// the terminal UI over ten million events: 11.7 ms a key, 24 with the
	// pure-Go SQLite; docs/SCALE.md).
	readOnly
	// readOnlyPure is readOnly with the pure-Go SQLite whatever the build:
	// cpid-tui sql, whose guard (an authorizer that lets SQLite compile
	// reads only) is that driver's.
	readOnlyPure
	// readWriteNative is readWrite with SQLite in C where the build has
	// cgo (cpid.Native), for a command that opens the database once and
	// reads much of it or writes it all the time: reconstruct, tail.
	readWriteNative
)

// readAccess is the access of the commands that only read: readOnly, but
// in the tests that run a tailer on the pure-Go SQLite in their own
// process and read its file meanwhile (startTail), which set it to
// readOnlyPure as they set tailAccess: one SQLite library for the file in
// the process.
var readAccess = readOnly

// readMode is the access of a command that only reads: readAccess, or
// readOnlyPure for an env that asks for the pure-Go SQLite (pureReads).
func (e *env) readMode() access {
	if e.pureReads {
		return readOnlyPure
	}
	return readAccess
}

// openDatabase opens --db for writing: a postgres:// URL is a PostgreSQL
// database, anything else a SQLite file. Notices go to the process's
// stderr (commands with an env use openStore).
func openDatabase(ctx context.Context, db string) (*database, error) {
	return openStore(ctx, os.Stderr, db, readWrite)
}

// dbNotice tells w what an engine noticed opening the database name (a
// wait for another process creating it, a migration).
func dbNotice(w io.Writer, name string) func(string) {
	return func(s string) { fmt.Fprintf(w, "cpid-tui: database %s: %s\n", name, s) }
}

// existing refuses a SQLite --db that is not there, for the commands that
// work on a database but do not make one (reconstruct, prune): a mistyped
// path would otherwise become an empty database, and the run on it would
// succeed with nothing, where the readers refuse it (sqlite.Open). A
// database another cpid-tui is creating (its PATH.partial locked) is
// waited for, as readers wait; a PATH.partial left by a load that died is
// not a database.
func existing(ctx context.Context, w io.Writer, db string) error {
	if isPostgres(db) {
		return nil
	}
	if err := sqlite.WaitCreation(ctx, db, dbNotice(w, db)); err != nil {
		return fmt.Errorf("open database %s: %w", db, err)
	}
	if _, err := os.Lstat(db); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no database at %s (cpid-tui ingest creates one)", db)
	}
	return nil
}

// openStore opens --db for a command, telling w when the SQLite path is a
// symbolic link: a link is followed, and said so, since the file written
// is not where --db points; a link to nothing is refused, since opening it
// for writing would create a file wherever the link points.
func openStore(ctx context.Context, w io.Writer, db string, a access) (*database, error) {
	notice := func(name string) cpid.OpenOption { return cpid.WithNotice(dbNotice(w, name)) }
	if isPostgres(db) {
		// The DSN may hold a password: the notice does not repeat it.
		opts := []cpid.OpenOption{notice("in PostgreSQL")}
		if a == readOnly || a == readOnlyPure {
			opts = append(opts, cpid.ReadOnly())
		}
		p, err := postgres.Open(ctx, db, opts...)
		if err != nil {
			return nil, err
		}
		return &database{view: func(c string) store { return p.InCluster(c) }, clusters: p.Clusters, close: p.Close, full: postgres.IsFull,
			down: postgres.IsDown}, nil
	}
	if fi, err := os.Lstat(db); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(db)
		if err != nil {
			return nil, fmt.Errorf("--db %s is a symbolic link to nothing (%v): refused, give the file itself", db, err)
		}
		fmt.Fprintf(w, "cpid-tui: --db %s is a symbolic link: opening %s\n", db, target)
	}
	opts := []cpid.OpenOption{notice(db)}
	switch a {
	case readOnly:
		opts = append(opts, cpid.ReadOnly(), cpid.Native())
	case readOnlyPure:
		opts = append(opts, cpid.ReadOnly())
	case readWriteNative:
		opts = append(opts, cpid.Native())
	}
	s, err := sqlite.Open(ctx, db, opts...)
	if err != nil {
		return nil, err
	}
	return &database{view: func(c string) store { return s.InCluster(c) }, clusters: s.Clusters, close: s.Close, full: sqlite.IsFull}, nil
}

// openReader opens --db for a command that only reads it, seen from
// --cluster, which must be a cluster of the database: an unknown one is
// an error naming those it holds, as kubectl fails on an unknown context,
// not an empty listing that would read as "nothing happened".
func (e *env) openReader(ctx context.Context) (*database, error) {
	d, err := openStore(ctx, e.notices(), e.db, e.readMode())
	if err != nil {
		return nil, err
	}
	if e.cluster == "" {
		return d, nil
	}
	cs, err := d.clusters(ctx)
	if err == nil && !slices.Contains(cs, e.cluster) {
		held := "no records, so no cluster (" + e.prog + " ingest stores some)"
		if len(cs) > 0 {
			held = strings.Join(cs, ", ")
		}
		err = fmt.Errorf("cluster %q does not exist: the database holds %s", e.cluster, present.Printable(held))
	}
	if err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// openForLoad opens --db for a load of records (cpid-tui ingest): a SQLite
// file that does not exist yet is created by a bulk load (sqlite.Bulk:
// indexes built at the end, the file moved into place by finish), any
// other database is opened as openStore does.
func openForLoad(ctx context.Context, w io.Writer, db string) (*database, error) {
	if isPostgres(db) {
		return openStore(ctx, w, db, readWrite)
	}
	if _, err := os.Lstat(db); !errors.Is(err, os.ErrNotExist) {
		return openStore(ctx, w, db, readWrite)
	}
	b, err := sqlite.OpenBulk(ctx, db, cpid.WithNotice(dbNotice(w, db)))
	if errors.Is(err, sqlite.ErrExists) {
		return openStore(ctx, w, db, readWrite) // it appeared meanwhile: append
	}
	if err != nil {
		return nil, err
	}
	return &database{view: func(c string) store { return b.InCluster(c) }, clusters: b.Clusters, close: func() error { return nil },
		full: sqlite.IsFull, finish: b.Finish, abandon: b.Abandon}, nil
}

// hintReconstruct tells w to run reconstruct when no cluster of the
// database was ever reconstructed: a reading command then finds nothing,
// which should not look like "no changes happened".
func (d *database) hintReconstruct(ctx context.Context, e *env, db, cluster string) {
	if e.quiet {
		return
	}
	cs, err := d.clustersOf(ctx, cluster)
	if err != nil {
		return
	}
	for _, c := range cs {
		wm, err := d.view(c).Watermark(ctx)
		if err != nil || wm.EventID > 0 || wm.LogID > 0 || wm.HasState {
			return
		}
	}
	where := " --db " + db
	if isPostgres(db) {
		where = "" // the URL may hold a password
	}
	fmt.Fprintf(e.stderr, "%s: nothing was reconstructed in this database yet: run `%s reconstruct%s` (after `%s ingest`)\n", e.prog, e.prog, where, e.prog)
}

// notices is where a command tells what it noticed on the way (a
// symbolic link followed): stderr, nowhere with --quiet.
func (e *env) notices() io.Writer {
	if e.quiet {
		return io.Discard
	}
	return e.stderr
}

// clustersOf returns the cluster named, or every cluster of the database
// (the default one when it has none yet).
func (d *database) clustersOf(ctx context.Context, named string) ([]string, error) {
	if named != "" {
		return []string{named}, nil
	}
	cs, err := d.clusters(ctx)
	if len(cs) == 0 && err == nil {
		cs = []string{defaultCluster}
	}
	return cs, err
}
