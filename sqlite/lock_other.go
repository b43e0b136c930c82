//go:build !unix

package sqlite

import (
	"context"
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
