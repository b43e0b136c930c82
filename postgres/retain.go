package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// retentionLockClass is the first key of the transaction advisory lock
// between a cluster's writers and Expire (the second is the hash of the
// cluster's name): each batch holds it shared, Expire alone, so that no
// batch is half way between reading the horizon and committing while the
// horizon moves.
const retentionLockClass = 0x63706974 // "cpit"

// errDry ends a dry run's transaction: rolled back.
var errDry = errors.New("dry run")

// Expired is what Expire deleted of one cluster, or would delete.
type Expired struct {
	Audits, Logs int64 // records received (audit) or logged before the time
	Blocks       int64 // body blocks left with no body
}

// Expire deletes the audit events received and the log lines logged
// before beforeNS in the view's cluster (retention, docs/SCALE.md), with
// their bodies, and raises the cluster's horizon (table retention) to
// beforeNS: writers skip older records from then on, as duplicates, so
// that a file read again stores none of them. The derived rows of the
// cluster (changes, revisions, merge graph, anomalies, spans) and its
// reconstruct state are deleted with them: the next reconstruct run of the
// cluster is a full rebuild from the records left, as if they were all
// there ever was. Tail checkpoints stay: tailers go on where they were.
// With dry, it counts and deletes nothing. One transaction, which waits
// for a reconstruct run of the cluster (LockRun) and for the batches being
// written to it.
func (s *Store) Expire(ctx context.Context, beforeNS int64, dry bool) (Expired, error) {
	var out Expired
	cluster := s.own()
	release, err := s.LockRun(ctx)
	if err != nil {
		return out, err
	}
	defer release()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, retentionLockClass, cluster); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM audit_events WHERE cluster = $1 AND received_ns < $2),
			(SELECT count(*) FROM log_records WHERE cluster = $1 AND ts_ns < $2)`, cluster, beforeNS).Scan(&out.Audits, &out.Logs)
		if err != nil {
			return err
		}
		if dry {
			return errDry
		}
		if _, err := tx.Exec(ctx, `INSERT INTO retention(cluster, before_ns) VALUES ($1, $2)
			ON CONFLICT (cluster) DO UPDATE SET before_ns = GREATEST(retention.before_ns, excluded.before_ns)`, cluster, beforeNS); err != nil {
			return err
		}
		if out.Audits == 0 && out.Logs == 0 {
			return nil
		}
		// The derived rows refer to the events (keys) and were derived
		// from them: all of the cluster's go, as a full rebuild deletes
		// them (resetSQL), and without its watermark (reconstruct_state)
		// the next run is a full rebuild.
		for _, q := range append(slices.Clip(resetSQL),
			`DELETE FROM audit_body_refs WHERE event_id IN (SELECT id FROM audit_events WHERE cluster = $1 AND received_ns < $2)`,
			`DELETE FROM audit_events WHERE cluster = $1 AND received_ns < $2`,
			`DELETE FROM log_records WHERE cluster = $1 AND ts_ns < $2`,
		) {
			args := []any{cluster}
			if strings.Contains(q, "$2") {
				args = append(args, beforeNS)
			}
			if _, err := tx.Exec(ctx, q, args...); err != nil {
				return fmt.Errorf("%.40s...: %w", q, err)
			}
		}
		// A block left with no body goes, but the last of each kind: the
		// writers append to it (blocks.Writer keeps its content).
		tag, err := tx.Exec(ctx, `DELETE FROM body_blocks b WHERE b.cluster = $1
			AND b.id < (SELECT max(id) FROM body_blocks l WHERE l.cluster = b.cluster AND l.kind = b.kind)
			AND NOT EXISTS (SELECT 1 FROM audit_body_refs r WHERE r.block_id = b.id)`, cluster)
		out.Blocks = tag.RowsAffected()
		return err
	})
	if err != nil && !errors.Is(err, errDry) {
		return Expired{}, fmt.Errorf("expire cluster %s: %w", cluster, err)
	}
	return out, nil
}

// horizon is the query of a batch's horizon: the time before which its
// cluster's records were expired (0: never), read under the retention
// lock held shared until the batch commits.
const horizon = `SELECT pg_advisory_xact_lock_shared($1, hashtext($2)),
	COALESCE((SELECT before_ns FROM retention WHERE cluster = $2), 0)`
