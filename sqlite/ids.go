package sqlite

import (
	"context"

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
