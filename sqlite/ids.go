package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/cpid-dev/cpid"
)

// CPIDPrefixes reads cpid_ids, which the triggers of mergelogs and
// mergelog_sources keep (cpid.PrefixReader, through cpid.ReadService).
func (s *Store) CPIDPrefixes(ctx context.Context, ids []string) (cpid.CPIDPrefixes, error) {
	return cpid.ReadService{Rows: s}.CPIDPrefixes(ctx, ids)
}

var _ cpid.PrefixReader = (*Store)(nil)

// IDStats reads the most characters two neighbouring CPIDs share, from
// cpid_ids' index, and counts two rows at most (cpid.ChangeRows).
func (r reads) IDStats(ctx context.Context) (shared *int, n int, err error) {
	err = r.db.QueryRowContext(ctx, idStatsSQL).Scan(&shared, &n)
	return shared, n, err
}

// idStatsSQL and idsNearSQL are IDStats' and IDsNear's statements
// (TestCPIDPrefixesIndexUsed).
const (
	idStatsSQL = `SELECT (SELECT max(shared) FROM cpid_ids),
		(SELECT count(*) FROM (SELECT 1 FROM cpid_ids LIMIT 2))`
	idsNearSQL = `SELECT x FROM (
		SELECT (SELECT max(cpid) FROM cpid_ids WHERE cpid < j.value) AS x FROM json_each(?1) j
		UNION ALL SELECT (SELECT min(cpid) FROM cpid_ids WHERE cpid > j.value) FROM json_each(?1) j)
		WHERE x IS NOT NULL`
)

// IDsNear reads the CPIDs on either side of each id, a seek each
// (cpid.ChangeRows).
func (r reads) IDsNear(ctx context.Context, ids []string) ([]string, error) {
	return column(ctx, r.db, idsNearSQL, jsonList(ids))
}

// fillCPIDIDs fills cpid_ids again from the merge graph of every cluster,
// as its triggers would have row by row: for a bulk load, which drops them
// (dropTriggers). One sorted read of the CPIDs and their counts; what each
// shares with the next is counted in Go (cpid.CPIDShared).
func fillCPIDIDs(ctx context.Context, tx *sql.Tx, batch *batchExec) error {
	rows, err := tx.QueryContext(ctx, `SELECT cpid, count(*) FROM
		(SELECT cpid FROM mergelogs UNION ALL SELECT source_cpid FROM mergelog_sources) GROUP BY cpid ORDER BY cpid`)
	if err != nil {
		return err
	}
	var ids []string
	var refs []int64
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return err
		}
		ids, refs = append(ids, id), append(refs, n)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM cpid_ids`); err != nil {
		return err
	}
	const piece = 4096
	r := newRows(3)
	defer r.put()
	out := make([]int64, piece)
	for lo := 0; lo < len(ids); lo += piece {
		r.reset(3)
		hi := min(lo+piece, len(ids))
		for i := lo; i < hi; i++ {
			shared := 0
			if i+1 < len(ids) {
				shared = cpid.CPIDShared(ids[i], ids[i+1])
			}
			r.text(ids[i])
			r.int(refs[i])
			r.int(int64(shared))
		}
		if err := execRows(ctx, tx, batch, `INSERT INTO cpid_ids(cpid, refs, shared) VALUES (?, ?, ?)`, r, out[:hi-lo]); err != nil {
			return err
		}
	}
	return nil
}
