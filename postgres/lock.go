package postgres

import (
	"context"
	"fmt"
)

// runLockClass is the first key of the session advisory locks that
// reconstruct runs hold; the second is the hash of the cluster's name.
const runLockClass = 0x63706972 // "cpir"

// LockRun takes the reconstruct lock of the view's cluster
// (cpid.DerivedStore): a session advisory lock held on a connection of its
// own until release, so runs of one cluster take turns across every
// process and host writing the database, and runs of other clusters go on.
// The server releases the lock of a connection that is lost.
func (s *Store) LockRun(ctx context.Context) (func(), error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock cluster %s: %w", s.own(), err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext($2))`, runLockClass, s.own()); err != nil {
		// A canceled wait may leave the connection in an unknown state.
		conn.Conn().Close(context.Background())
		conn.Release()
		return nil, fmt.Errorf("lock cluster %s: %w", s.own(), err)
	}
	return func() {
		if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1, hashtext($2))`, runLockClass, s.own()); err != nil {
			conn.Conn().Close(context.Background())
		}
		conn.Release()
	}, nil
}
