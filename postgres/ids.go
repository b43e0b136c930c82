package postgres

import (
	"context"
	"fmt"

	"github.com/cpid-dev/cpid"
)

var _ cpid.PrefixReader = (*Store)(nil)

// CPIDPrefixes reads cpid_ids, which the triggers of mergelogs and
// mergelog_sources keep (cpid.PrefixReader): what cpid.ReadService's
// CPIDPrefixes reads, in one statement (cpidPrefixesSQL) where it ran two
// in a read transaction (BEGIN, IDStats, IDsNear, COMMIT: four round
// trips and two statements planned, 1.7 of a history's 9.5 ms of
// statements on ten million events, against 1.0). Reading every CPID
// instead took 1.3 s on 5M events, at every command that lists ids.
func (s *Store) CPIDPrefixes(ctx context.Context, ids []string) (cpid.CPIDPrefixes, error) {
	if ids == nil {
		ids = []string{} // unnest of an empty array, not of NULL
	}
	var shared *int
	var n int
	var near []string
	if err := s.pool.QueryRow(ctx, cpidPrefixesSQL, ids).Scan(&shared, &n, &near); err != nil {
		return cpid.CPIDPrefixes{}, fmt.Errorf("prefixes of the CPIDs: %w", err)
	}
	p, ok := cpid.PrefixesOf(shared, n)
	if ok && len(ids) > 0 {
		p.Near = near
	}
	return p, nil
}

// cpidPrefixesSQL is CPIDPrefixes' query: $1 the ids. It reads the ids'
// neighbours whether they are needed or not (not when two neighbouring
// CPIDs share cpid.CPIDSharedCap characters or more: no database here
// has had such CPIDs), a statement where asking first made two.
var cpidPrefixesSQL = `SELECT (SELECT max(shared) FROM cpid_ids),
	(SELECT count(*) FROM (SELECT 1 FROM cpid_ids ORDER BY cpid LIMIT 2) two),
	ARRAY(` + idsNearSQL + `)`

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

// idsNearSQL is IDsNear's query: $1 the ids, each sought once however
// many times it is given (a history's 200 writes name a few dozen
// changes). OFFSET 0 keeps the condition on x out of the union's arms:
// pushed into them, it ran each seek twice (once for the condition, once
// for the value).
const idsNearSQL = `WITH ids(i) AS (SELECT DISTINCT i FROM unnest($1::text[]) i)
	SELECT x FROM (
	SELECT (SELECT max(cpid) FROM cpid_ids WHERE cpid < i COLLATE "C") AS x FROM ids
	UNION ALL SELECT (SELECT min(cpid) FROM cpid_ids WHERE cpid > i COLLATE "C") FROM ids OFFSET 0) n
	WHERE x IS NOT NULL`
