package sqlite

import (
	"context"
	"fmt"

	"github.com/cpid-dev/cpid"
)

// CPIDPrefixes reads cpid_ids, which the triggers of mergelogs and
// mergelog_sources keep (cpid.PrefixReader): the most characters two
// CPIDs next to each other share, from its index, and the CPIDs on either
// side of each id, a seek each. It reads the same snapshot for both.
func (s *Store) CPIDPrefixes(ctx context.Context, ids []string) (cpid.CPIDPrefixes, error) {
	var p cpid.CPIDPrefixes
	err := s.snapshot(ctx, func(db querier) error {
		var n int
		var shared *int
		if err := db.QueryRowContext(ctx, `SELECT (SELECT max(shared) FROM cpid_ids),
			(SELECT count(*) FROM (SELECT 1 FROM cpid_ids LIMIT 2))`).Scan(&shared, &n); err != nil {
			return err
		}
		var ok bool
		if p, ok = cpid.PrefixesOf(shared, n); !ok {
			return nil
		}
		if len(ids) > 0 {
			near, err := column(ctx, db, `SELECT x FROM (
				SELECT (SELECT max(cpid) FROM cpid_ids WHERE cpid < j.value) AS x FROM json_each(?1) j
				UNION ALL SELECT (SELECT min(cpid) FROM cpid_ids WHERE cpid > j.value) FROM json_each(?1) j)
				WHERE x IS NOT NULL`, jsonList(ids))
			if err != nil {
				return err
			}
			p.Near = near
		}
		return nil
	})
	if err != nil {
		return cpid.CPIDPrefixes{}, fmt.Errorf("prefixes of the CPIDs: %w", err)
	}
	return p, nil
}

var _ cpid.PrefixReader = (*Store)(nil)
