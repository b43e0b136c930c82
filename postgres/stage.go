package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cpid-dev/cpid/blocks"
)

// stageTables are the staging tables of a session: Write copies a batch's
// records into them and moves the new ones to audit_events and log_records
// with one INSERT ... SELECT each. They are temporary (the session's own,
// never written to the WAL) and emptied at each commit of a transaction
// that used them. Column n is the record's place in the batch: rows are
// moved in that order, so ids number them as they were read.
const stageTables = `
CREATE TEMP TABLE IF NOT EXISTS cpid_stage_audits (
  n BIGINT, hash BYTEA, audit_id TEXT, stage TEXT, level TEXT, verb TEXT, request_uri TEXT, api_group TEXT,
  api_version TEXT, resource TEXT, subresource TEXT, namespace TEXT, name TEXT, uid TEXT, resource_version TEXT,
  username TEXT, user_agent TEXT, source_ips TEXT, code BIGINT, received_ns BIGINT, stage_ns BIGINT, cpid TEXT,
  cpid_ancestors TEXT, owner_refs TEXT, annotations TEXT, redacted BIGINT, file_id BIGINT, line BIGINT, traceparent TEXT
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS cpid_stage_logs (
  n BIGINT, hash BYTEA, ts_ns BIGINT, level TEXT, component TEXT, msg TEXT, cpid TEXT, fields TEXT, file_id BIGINT, line BIGINT
) ON COMMIT DELETE ROWS`

// staged is the key of a connection's custom data that says it has the
// staging tables.
const staged = "cpid.staged"

// withStage runs fn on a connection of the pool that has the staging
// tables: they are created the first time a connection writes, outside any
// transaction so that they last as long as the session (one that rolls
// back keeps them). They were created as each connection opened, for
// every store opened for writing: a few milliseconds of catalog writes
// for each connection of a reconstruct run, or of the terminal UI opened
// for writing, that never write a record.
func (s *Store) withStage(ctx context.Context, fn func(*pgxpool.Conn) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	data := conn.Conn().PgConn().CustomData()
	if data[staged] == nil {
		if _, err := conn.Exec(ctx, stageTables); err != nil {
			return fmt.Errorf("create the staging tables: %w", err)
		}
		data[staged] = true
	}
	return fn(conn)
}

// copyBlockTx is blockTx whose references to bodies are copied (COPY):
// they are new rows of new events, there is nothing to skip.
type copyBlockTx struct {
	blockTx
	buf *copyBuf
}

// Put writes the blocks Pack returned and the references to them.
func (bt copyBlockTx) Put(ctx context.Context, cluster, kind string, bs []*blocks.Block, refs []blocks.Ref) error {
	tx := bt.tx
	for _, b := range bs {
		if b.ID != 0 {
			if _, err := tx.Exec(ctx, `UPDATE body_blocks SET raw_len = $1, data = $2 WHERE id = $3`, len(b.Raw), b.Raw, b.ID); err != nil {
				return fmt.Errorf("store body block: %w", err)
			}
			continue
		}
		if err := tx.QueryRow(ctx, `INSERT INTO body_blocks(cluster, kind, raw_len, data) VALUES ($1, $2, $3, $4) RETURNING id`,
			cluster, kind, len(b.Raw), b.Raw).Scan(&b.ID); err != nil {
			return fmt.Errorf("store body block: %w", err)
		}
	}
	if len(refs) == 0 {
		return nil
	}
	c := bt.buf
	c.header()
	for _, r := range refs {
		c.row(6)
		c.int8(r.EventID)
		c.int8(bs[r.Block].ID)
		c.int8(int64(r.Off))
		for _, n := range r.Len {
			if n < 0 {
				c.null()
			} else {
				c.int8(int64(n))
			}
		}
	}
	if err := c.send(ctx, tx, "audit_body_refs", `event_id, block_id, "offset", request_len, response_len, status_len`); err != nil {
		return fmt.Errorf("store body references: %w", err)
	}
	return nil
}
