package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cpid-dev/cpid"
)

// objectSQL and objectByUIDSQL read an object's saved state by its key
// (the primary key) and by its uid (reconstruct_objects_uid).
const (
	objectSQL      = `SELECT state FROM reconstruct_objects WHERE cluster = ? AND key = ?`
	objectByUIDSQL = `SELECT state FROM reconstruct_objects WHERE uid = ? AND uid != '' AND cluster = ? LIMIT 1`
)

// LoadObject returns the saved engine state of the object with that key in
// the view's cluster, nil when none was saved (cpid.DerivedStore).
func (s *Store) LoadObject(ctx context.Context, key string) ([]byte, error) {
	var b []byte
	err := s.r.QueryRowContext(ctx, objectSQL, s.own(), key).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return b, err
}

// LoadObjectByUID returns the saved engine state of an object with that
// metadata.uid, nil when none was saved (cpid.DerivedStore).
func (s *Store) LoadObjectByUID(ctx context.Context, uid string) ([]byte, error) {
	var b []byte
	err := s.r.QueryRowContext(ctx, objectByUIDSQL, uid, s.own()).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return b, err
}

// mergelogsOfSQL reads the mergelogs final at a cutoff of some CPIDs (the
// IN list, %s) down the mergelogs' (cluster, cpid, origin) index and the
// sources' primary key. It has no ORDER BY: SQLite sorted in a temporary
// b-tree, a few hundred µs a call where the rows are a handful, sorted
// in Go (MergelogsOf).
const mergelogsOfSQL = `SELECT m.id, m.cpid, m.ts_ns, m.service, m.origin, COALESCE(s.source_cpid, ''), COALESCE(s.pos, 0)
	FROM mergelogs m LEFT JOIN audit_events e ON e.id = m.event_id
	LEFT JOIN mergelog_sources s ON s.mergelog_id = m.id
	WHERE m.cluster = ? AND m.cpid IN (%s) AND (m.event_id IS NULL OR e.received_ns <= ?)`

// ScanMergelogsOf calls fn for the mergelogs of cpids final at the cutoff,
// in the order they were stored (cpid.DerivedStore).
func (s *Store) ScanMergelogsOf(ctx context.Context, cutoffNS int64, cpids []string, fn func(cpid.Mergelog) error) error {
	var rs cpid.MergelogsOf
	for part := range slices.Chunk(cpids, 500) {
		args := make([]any, 0, len(part)+2)
		args = append(args, s.own())
		for _, c := range part {
			args = append(args, c)
		}
		args = append(args, cutoffNS)
		q := fmt.Sprintf(mergelogsOfSQL, strings.TrimSuffix(strings.Repeat("?, ", len(part)), ", "))
		rows, err := s.r.QueryContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("read mergelogs: %w", err)
		}
		for rows.Next() {
			var r cpid.MergelogRow
			if err := rows.Scan(&r.ID, &r.CPID, &r.TimeNS, &r.Service, &r.Origin, &r.Source, &r.Pos); err != nil {
				rows.Close()
				return err
			}
			rs = append(rs, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return rs.Each(fn)
}

// saveObjects stores the states of the objects a run met over those of the
// same keys, by the batch in C on a native store.
func (sv *deriveTx) saveObjects(ctx context.Context, objs []cpid.ObjectState) error {
	if len(objs) == 0 {
		return nil
	}
	r := newRows(4)
	defer r.put()
	for _, o := range objs {
		r.text(sv.cluster)
		r.text(o.Key)
		r.text(o.UID)
		r.blob(o.Data)
	}
	return sv.execBatch(ctx, `INSERT OR REPLACE INTO reconstruct_objects(cluster, key, uid, state) VALUES (?, ?, ?, ?)`, r)
}
