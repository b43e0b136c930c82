//go:build unix

package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// LockRun takes the database's reconstruct lock (cpid.DerivedStore): an
// exclusive flock(2) on the database file. SQLite's own locks are fcntl(2)
// locks, which flock locks leave alone, so no file is added beside the
// database, and the kernel releases the lock of a process that dies. One
// SQLite file has one writer at a time anyway, so runs of every cluster
// take turns, not only runs of one.
func (s *Store) LockRun(ctx context.Context) (func(), error) {
	f, err := os.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", s.path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing the file releases its lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", s.path, err)
		}
		// Another run holds it: flock has no timeout, so poll.
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// tryLock takes an exclusive flock(2) on f without waiting; busy when
// another process holds it.
func tryLock(f *os.File) (busy bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}
