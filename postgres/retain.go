package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// retentionLockClass is the first key of the transaction advisory lock
// between a cluster's writers and Expire (the second is the hash of the
// cluster's name): each batch holds it shared, Expire alone, so that no
// batch is half way between reading the horizon and committing while the
// horizon moves.
const retentionLockClass = 0x63706974 // "cpit"

// Expired is what Expire deleted of one cluster, or would delete.
type Expired struct {
	Audits, Logs int64 // records received (audit) or logged before the time
	Blocks       int64 // body blocks left with no body
}

// ExpireBatch is how many records Expire deletes in one transaction.
const ExpireBatch = 20000

// Expire deletes the audit events received and the log lines logged
// before beforeNS in the view's cluster (retention, docs/SCALE.md), with
// their bodies, and raises the cluster's horizon (table retention) to
// beforeNS: writers skip older records from then on, as duplicates, so
// that a file read again stores none of them. The derived rows of the
// cluster (changes, revisions, merge graph, anomalies, spans) and its
// reconstruct state are deleted with them: the next reconstruct run of the
// cluster is a full rebuild from the records left, as if they were all
// there ever was. Tail checkpoints stay: tailers go on where they were.
// With dry, it counts and deletes nothing.
//
// It holds the cluster's reconstruct lock (LockRun) throughout, and its
// writers only while the horizon moves (a transaction of its own, which
// waits for the batches being written): the records go after, ExpireBatch
// at a time, each batch its own transaction, while the writers go on
// (they store nothing older than the horizon). An expiry stopped half way
// leaves the horizon moved and the derived rows gone: run it again to
// delete the rest.
func (s *Store) Expire(ctx context.Context, beforeNS int64, dry bool) (Expired, error) {
	return s.expire(ctx, beforeNS, dry, ExpireBatch, nil)
}

// expire is Expire in batches of batch records; between, when not nil, is
// called after each batch committed (tests: a writer goes on meanwhile).
func (s *Store) expire(ctx context.Context, beforeNS int64, dry bool, batch int, between func(table string, deleted int64) error) (Expired, error) {
	var out Expired
	cluster := s.own()
	fail := func(err error) (Expired, error) {
		return Expired{}, fmt.Errorf("expire cluster %s: %w", cluster, err)
	}
	release, err := s.LockRun(ctx)
	if err != nil {
		return out, err
	}
	defer release()
	if !dry {
		// The horizon first, under the retention lock taken alone: the
		// batches being written commit first, the next ones read the new
		// horizon. No record older than it is stored from then on, so
		// the records counted below are all there will be.
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, retentionLockClass, cluster); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO retention(cluster, before_ns) VALUES ($1, $2)
				ON CONFLICT (cluster) DO UPDATE SET before_ns = GREATEST(retention.before_ns, excluded.before_ns)`, cluster, beforeNS)
			return err
		})
		if err != nil {
			return fail(err)
		}
	}
	// One read of each table (no index on the cluster and the time: it
	// would cost every write) counts the records and bounds their ids.
	var audits, logs [3]int64 // count, first id - 1, last id
	err = s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM audit_events WHERE cluster = $1 AND received_ns < $2),
		(SELECT COALESCE(min(id) - 1, 0) FROM audit_events WHERE cluster = $1 AND received_ns < $2),
		(SELECT COALESCE(max(id), 0) FROM audit_events WHERE cluster = $1 AND received_ns < $2)`, cluster, beforeNS).
		Scan(&audits[0], &audits[1], &audits[2])
	if err == nil {
		err = s.pool.QueryRow(ctx, `SELECT count(*), COALESCE(min(id) - 1, 0), COALESCE(max(id), 0)
			FROM log_records WHERE cluster = $1 AND ts_ns < $2`, cluster, beforeNS).Scan(&logs[0], &logs[1], &logs[2])
	}
	if err != nil {
		return fail(err)
	}
	if dry || audits[0] == 0 && logs[0] == 0 {
		return Expired{Audits: audits[0], Logs: logs[0]}, nil
	}
	// The derived rows refer to the events (keys) and were derived from
	// them: all of the cluster's go, as a full rebuild deletes them
	// (resetSQL), and without its watermark (reconstruct_state) the next
	// run is a full rebuild. One transaction, which holds no lock a
	// writer takes; no run derives new ones meanwhile (LockRun).
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, q := range resetSQL {
			if _, err := tx.Exec(ctx, q, cluster); err != nil {
				return fmt.Errorf("%.40s...: %w", q, err)
			}
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	// The records, in batches in the order of their ids, each with its
	// bodies' references.
	for _, t := range []struct {
		table string
		span  [3]int64
		q     string
		n     *int64
	}{
		{"audit_events", audits, `WITH doomed AS (SELECT id FROM audit_events
				WHERE id > $3 AND id <= $4 AND cluster = $1 AND received_ns < $2 ORDER BY id LIMIT $5),
			refs AS (DELETE FROM audit_body_refs WHERE event_id IN (SELECT id FROM doomed)),
			gone AS (DELETE FROM audit_events WHERE id IN (SELECT id FROM doomed) RETURNING id)
			SELECT count(*), COALESCE(max(id), 0) FROM gone`, &out.Audits},
		{"log_records", logs, `WITH doomed AS (SELECT id FROM log_records
				WHERE id > $3 AND id <= $4 AND cluster = $1 AND ts_ns < $2 ORDER BY id LIMIT $5),
			gone AS (DELETE FROM log_records WHERE id IN (SELECT id FROM doomed) RETURNING id)
			SELECT count(*), COALESCE(max(id), 0) FROM gone`, &out.Logs},
	} {
		after, last := t.span[1], t.span[2]
		for after < last {
			var n int64
			if err := s.pool.QueryRow(ctx, t.q, cluster, beforeNS, after, last, batch).Scan(&n, &after); err != nil {
				return fail(fmt.Errorf("delete from %s: %w", t.table, err))
			}
			if n == 0 {
				break
			}
			*t.n += n
			if between != nil {
				if err := between(t.table, n); err != nil {
					return fail(err)
				}
			}
		}
	}
	// A block left with no body goes, but the last of each kind: the
	// writers append to it (blocks.Writer keeps its content). Under the
	// retention lock taken alone: a writer in flight may be filling the
	// last block and starting the next, which this transaction would not
	// see; its references to the block it filled would not be seen either.
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, retentionLockClass, cluster); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM body_blocks b WHERE b.cluster = $1
			AND b.id < (SELECT max(id) FROM body_blocks l WHERE l.cluster = b.cluster AND l.kind = b.kind)
			AND NOT EXISTS (SELECT 1 FROM audit_body_refs r WHERE r.block_id = b.id)`, cluster)
		out.Blocks = tag.RowsAffected()
		return err
	})
	if err != nil {
		return fail(err)
	}
	return out, nil
}

// horizon is the query of a batch's horizon: the time before which its
// cluster's records were expired (0: never), read under the retention
// lock held shared until the batch commits.
const horizon = `SELECT pg_advisory_xact_lock_shared($1, hashtext($2)),
	COALESCE((SELECT before_ns FROM retention WHERE cluster = $2), 0)`
