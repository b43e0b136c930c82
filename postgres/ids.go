package postgres

import (
	"context"
	"fmt"

	"github.com/cpid-dev/cpid"
)

var _ cpid.PrefixReader = (*Store)(nil)

// CPIDPrefixes reads cpid_ids, which the triggers of mergelogs and
// mergelog_sources keep (cpid.PrefixReader): the most characters two
// CPIDs next to each other share, from its index, and the CPIDs on either
// side of each id, a seek each, in one snapshot. Reading every CPID
// instead took 1.3 s on 5M events, at every command that lists ids. Two
// rows are counted in key order: the triggers update rows all the time,
// and a sequential scan for two went through pages of dead versions (15
// ms).
func (s *Store) CPIDPrefixes(ctx context.Context, ids []string) (cpid.CPIDPrefixes, error) {
	var p cpid.CPIDPrefixes
	err := s.snapshot(ctx, func(db reader) error {
		var shared *int
		var n int
		if err := db.QueryRow(ctx, `SELECT (SELECT max(shared) FROM cpid_ids),
			(SELECT count(*) FROM (SELECT 1 FROM cpid_ids ORDER BY cpid LIMIT 2) two)`).Scan(&shared, &n); err != nil {
			return err
		}
		var ok bool
		if p, ok = cpid.PrefixesOf(shared, n); !ok {
			return nil
		}
		if len(ids) > 0 {
			near, err := strs(ctx, db, `SELECT x FROM (
				SELECT (SELECT max(cpid) FROM cpid_ids WHERE cpid < i COLLATE "C") AS x FROM unnest($1::text[]) i
				UNION ALL SELECT (SELECT min(cpid) FROM cpid_ids WHERE cpid > i COLLATE "C") FROM unnest($1::text[]) i) n
				WHERE x IS NOT NULL`, ids)
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
