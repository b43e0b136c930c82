package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// runLockClass is the first key of the session advisory locks that
// reconstruct runs hold; the second is the hash of the cluster's name.
const runLockClass = 0x63706972 // "cpir"

// LockRun takes the reconstruct lock of the view's cluster
// (cpid.DerivedStore): a session advisory lock held on a connection of its
// own, outside the pool, until release, so runs of one cluster take turns
// across every process and host writing the database, runs of other
// clusters go on, and a waiting run holds none of the pool's connections
// (runs of several clusters in one process would otherwise starve each
// other of them). The server releases the lock of a connection that is
// lost.
func (s *Store) LockRun(ctx context.Context) (func(), error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("lock cluster %s: %w", s.own(), err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext($2))`, runLockClass, s.own()); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("lock cluster %s: %w", s.own(), err)
	}
	// Closing the session releases its locks.
	return func() { conn.Close(context.Background()) }, nil
}
