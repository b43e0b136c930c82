package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Creating a database is one process's job at a time. Every process that
// would create the database at PATH (a bulk load, OpenBulk; any other
// writer, Open) first takes the creation lock, an exclusive flock(2) on
// PATH.partial, then looks again: a database that appeared meanwhile is
// opened, not created. A bulk load holds the lock until its database is
// in place, so ten ingests into one new --db make one bulk load and nine
// appends after it, and a tail or serve started beside them waits too. The
// kernel releases the lock of a process that dies: the next one finds a
// stale PATH.partial and starts again.
//
// The lock file is also the bulk load's database, removed once the load
// is done (or abandoned): a waiter may then hold the lock on a file that
// is no longer at the path, so it checks that the file it locked is the
// one at the path, and locks again when not.

// lockPoll is how often a waiter tries the lock again: flock has no
// timeout, and a blocked flock cannot be cancelled.
const lockPoll = 20 * time.Millisecond

// lockCreation takes the creation lock of the database at final (an
// absolute path), waiting while another process holds it; notice (when
// set) is told once that it waits. The file returned holds the lock until
// it is closed (doneCreating).
func lockCreation(ctx context.Context, final string, notice func(string)) (*os.File, error) {
	partial := final + ".partial"
	told := false
	for {
		f, err := os.OpenFile(partial, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("create database %s: %w", final, err)
		}
		if err := waitLock(ctx, f, func() {
			if !told && notice != nil {
				notice(fmt.Sprintf("another cpid-tui is creating it (%s): waiting", partial))
			}
			told = true
		}); err != nil {
			f.Close()
			return nil, fmt.Errorf("create database %s: lock %s: %w", final, partial, err)
		}
		if sameFile(f, partial) {
			return f, nil
		}
		f.Close() // the holder removed it: lock the file at the path now
	}
}

// doneCreating releases the creation lock lock of the database at final,
// which exists now. The lock file goes: what it may hold (the records of a
// bulk load that died, never acknowledged) is garbage once the database is
// in place, and nobody loads into it while lock is held.
func doneCreating(lock *os.File, final string) {
	partial := final + ".partial"
	if sameFile(lock, partial) {
		for _, side := range []string{"", "-journal", "-wal", "-shm"} {
			os.Remove(partial + side)
		}
	}
	lock.Close()
}

// WaitCreation waits while another process creates the database at path
// (a bulk load, a writer making its schema), creating nothing; a command
// that needs the database to exist looks for it then (cpid-tui
// reconstruct): a PATH.partial that nobody holds, left by a load that
// died, is not one on its way.
func WaitCreation(ctx context.Context, path string, notice func(string)) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return waitCreation(ctx, abs, notice)
}

// waitCreation waits until no process creates the database at final: a
// reader that found no database (one may be on its way), or a file whose
// schema a writer may still be making (it holds the lock until the schema
// is there). It creates nothing: with no PATH.partial, nobody is creating
// it.
func waitCreation(ctx context.Context, final string, notice func(string)) error {
	partial := final + ".partial"
	f, err := os.Open(partial)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	told := false
	return waitLock(ctx, f, func() {
		if !told && notice != nil {
			notice(fmt.Sprintf("another cpid-tui is creating it (%s): waiting", partial))
		}
		told = true
	})
}

// waitLock takes an exclusive flock on f, calling waiting before each wait
// while another process holds it.
func waitLock(ctx context.Context, f *os.File, waiting func()) error {
	for {
		busy, err := tryLock(f)
		if err != nil || !busy {
			return err
		}
		waiting()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}

// sameFile reports whether the open file f is the file at path.
func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}
