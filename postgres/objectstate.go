package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cpid-dev/cpid"
)

// LoadObject returns the saved engine state of the object with that key in
// the view's cluster, nil when none was saved (cpid.DerivedStore).
func (s *Store) LoadObject(ctx context.Context, key string) ([]byte, error) {
	var b []byte
	err := s.pool.QueryRow(ctx, `SELECT state FROM reconstruct_objects WHERE cluster = $1 AND key = $2`, s.own(), key).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return b, err
}

// LoadObjectByUID returns the saved engine state of an object with that
// metadata.uid, nil when none was saved (cpid.DerivedStore).
func (s *Store) LoadObjectByUID(ctx context.Context, uid string) ([]byte, error) {
	var b []byte
	err := s.pool.QueryRow(ctx, `SELECT state FROM reconstruct_objects WHERE cluster = $1 AND uid = $2 AND uid <> '' LIMIT 1`, s.own(), uid).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return b, err
}

// ScanMergelogsOf calls fn for the mergelogs of cpids final at the cutoff,
// in the order they were stored (cpid.DerivedStore).
func (s *Store) ScanMergelogsOf(ctx context.Context, cutoffNS int64, cpids []string, fn func(cpid.Mergelog) error) error {
	if len(cpids) == 0 {
		return nil
	}
	rows, err := s.pool.Query(ctx, `SELECT m.id, m.cpid, m.ts_ns, m.service, m.origin, COALESCE(x.source_cpid, ''), COALESCE(x.pos, 0)
		FROM mergelogs m LEFT JOIN audit_events e ON e.id = m.event_id
		LEFT JOIN mergelog_sources x ON x.mergelog_id = m.id
		WHERE m.cluster = $1 AND m.cpid = ANY($2::text[]) AND (m.event_id IS NULL OR e.received_ns <= $3)`, s.own(), cpids, cutoffNS)
	if err != nil {
		return fmt.Errorf("read mergelogs: %w", err)
	}
	var rs cpid.MergelogsOf
	var r cpid.MergelogRow
	var origin string
	_, err = pgx.ForEachRow(rows, []any{&r.ID, &r.CPID, &r.TimeNS, &r.Service, &origin, &r.Source, &r.Pos}, func() error {
		r.Origin = cpid.Origin(origin)
		rs = append(rs, r)
		return nil
	})
	if err != nil {
		return err
	}
	return rs.Each(fn)
}

// saveObjects stores the states of the objects a run met over those of the
// same keys, in one round trip.
func (d *deriveTx) saveObjects(ctx context.Context, objs []cpid.ObjectState) error {
	if len(objs) == 0 {
		return nil
	}
	keys, uids, states := make([]string, len(objs)), make([]string, len(objs)), make([][]byte, len(objs))
	for i, o := range objs {
		keys[i], uids[i], states[i] = o.Key, o.UID, o.Data
	}
	_, err := d.tx.Exec(ctx, `INSERT INTO reconstruct_objects(cluster, key, uid, state)
		SELECT $1, k, u, s FROM unnest($2::text[], $3::text[], $4::bytea[]) AS t(k, u, s)
		ON CONFLICT (cluster, key) DO UPDATE SET uid = excluded.uid, state = excluded.state`, d.cluster, keys, uids, states)
	return err
}
