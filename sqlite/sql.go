package sqlite

import "context"

// QuerySQL runs query on a query-only connection (cpid.SQLReader): a
// statement that writes fails. The bodies view and cpid_body work.
func (s *Store) QuerySQL(ctx context.Context, query string, fn func(columns []string, values []any) error) error {
	rows, err := s.r.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for rows.Next() {
		for i := range vals {
			vals[i] = nil
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if err := fn(cols, vals); err != nil {
			return err
		}
	}
	return rows.Err()
}
