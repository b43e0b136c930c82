package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cpid-dev/cpid"
)

// QuerySQL runs query (cpid.SQLReader), which must be one statement that
// reads and calls no server-side function (cpid.ReadStatement), on a
// connection of its own opened with default_transaction_read_only, in a
// READ ONLY transaction that is rolled back, through the extended protocol
// (which takes one statement: a "COMMIT; BEGIN READ WRITE; DELETE ..." the
// check missed would still be refused). Nothing it runs can write, and the
// connection is closed after it, so no setting it changed outlives it.
func (s *Store) QuerySQL(ctx context.Context, query string, fn func(columns []string, values []any) error) error {
	stmt, err := cpid.ReadStatement(query)
	if err != nil {
		return err
	}
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["default_transaction_read_only"] = "on"
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect for sql: %w", err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	rows, err := tx.Query(ctx, stmt)
	if err != nil {
		return err
	}
	defer rows.Close()
	var cols []string
	for _, f := range rows.FieldDescriptions() {
		cols = append(cols, f.Name)
	}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return err
		}
		if err := fn(cols, vals); err != nil {
			return err
		}
	}
	return rows.Err()
}
