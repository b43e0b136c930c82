//go:build !unix

package sqlite

import (
	"context"
	"os"
	"sync"
)

// runLock stands for flock where there is none: runs of this process take
// turns; runs of several processes are not kept apart.
var runLock sync.Mutex

// LockRun takes the process's reconstruct lock (cpid.DerivedStore).
func (s *Store) LockRun(ctx context.Context) (func(), error) {
	runLock.Lock()
	return runLock.Unlock, nil
}

// tryLock cannot lock a file here: a bulk load is not kept apart from
// another process's.
func tryLock(*os.File) (busy bool, err error) { return false, nil }
