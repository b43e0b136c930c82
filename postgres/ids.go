package postgres

import (
	"context"

	"github.com/cpid-dev/cpid"
)

var _ cpid.PrefixReader = (*Store)(nil)

// CPIDPrefixes reads cpid_ids, which the triggers of mergelogs and
// mergelog_sources keep (cpid.PrefixReader, through cpid.ReadService).
// Reading every CPID instead took 1.3 s on 5M events, at every command
// that lists ids.
func (s *Store) CPIDPrefixes(ctx context.Context, ids []string) (cpid.CPIDPrefixes, error) {
	return cpid.ReadService{Rows: s}.CPIDPrefixes(ctx, ids)
}

// IDStats reads the most characters two neighbouring CPIDs share, from
// cpid_ids' index, and counts two rows at most (cpid.ChangeRows), in key
// order: the triggers update rows all the time, and a sequential scan for
// two went through pages of dead versions (15 ms).
func (r reads) IDStats(ctx context.Context) (shared *int, n int, err error) {
	err = r.db.QueryRow(ctx, `SELECT (SELECT max(shared) FROM cpid_ids),
		(SELECT count(*) FROM (SELECT 1 FROM cpid_ids ORDER BY cpid LIMIT 2) two)`).Scan(&shared, &n)
	return shared, n, err
}

// IDsNear reads the CPIDs on either side of each id, a seek each
// (cpid.ChangeRows).
func (r reads) IDsNear(ctx context.Context, ids []string) ([]string, error) {
	return strs(ctx, r.db, idsNearSQL, ids)
}

// idsNearSQL is IDsNear's query: $1 the ids. OFFSET 0 keeps the condition
// on x out of the union's arms: pushed into them, it ran each seek twice
// (once for the condition, once for the value).
const idsNearSQL = `SELECT x FROM (
	SELECT (SELECT max(cpid) FROM cpid_ids WHERE cpid < i COLLATE "C") AS x FROM unnest($1::text[]) i
	UNION ALL SELECT (SELECT min(cpid) FROM cpid_ids WHERE cpid > i COLLATE "C") FROM unnest($1::text[]) i OFFSET 0) n
	WHERE x IS NOT NULL`
