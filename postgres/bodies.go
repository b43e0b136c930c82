package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/blocks"
)

// blockTx is the SQL of blocks.Tx in one transaction.
type blockTx struct{ tx pgx.Tx }

// Last locks the row (FOR UPDATE) until the transaction ends: writers of
// one cluster append to its open block in turn.
func (b blockTx) Last(ctx context.Context, cluster, kind string) (id, rawLen int64, ok bool, err error) {
	err = b.tx.QueryRow(ctx, `SELECT id, raw_len FROM body_blocks WHERE cluster = $1 AND kind = $2 ORDER BY id DESC LIMIT 1 FOR UPDATE`,
		cluster, kind).Scan(&id, &rawLen)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("read the last body block: %w", err)
	}
	return id, rawLen, true, nil
}

// Content reads a block: stored as it is, the server compresses it.
func (b blockTx) Content(ctx context.Context, id, rawLen int64) ([]byte, error) {
	var data []byte
	if err := b.tx.QueryRow(ctx, `SELECT data FROM body_blocks WHERE id = $1`, id).Scan(&data); err != nil {
		return nil, fmt.Errorf("read body block %d: %w", id, err)
	}
	if int64(len(data)) != rawLen {
		return nil, fmt.Errorf("body block %d: %w: %d bytes, want %d", id, blocks.ErrCorrupt, len(data), rawLen)
	}
	return data, nil
}

// Put writes the blocks Pack returned and the references to them.
func (bt blockTx) Put(ctx context.Context, cluster, kind string, bs []*blocks.Block, refs []blocks.Ref) error {
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
	n := len(refs)
	ev, blk, off := make([]int64, n), make([]int64, n), make([]int64, n)
	lens := [3][]*int64{make([]*int64, n), make([]*int64, n), make([]*int64, n)}
	for i, r := range refs {
		ev[i], blk[i], off[i] = r.EventID, bs[r.Block].ID, int64(r.Off)
		for j := range 3 {
			if r.Len[j] >= 0 {
				v := int64(r.Len[j])
				lens[j][i] = &v
			}
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO audit_body_refs(event_id, block_id, "offset", request_len, response_len, status_len)
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[])`,
		ev, blk, off, lens[0], lens[1], lens[2]); err != nil {
		return fmt.Errorf("store body references: %w", err)
	}
	return nil
}

// packLegacyBodies moves the bodies of schema v7 (table audit_bodies_v7)
// into blocks, each cluster's in event order, and drops the old table. It
// runs in migration 0003's transaction.
func packLegacyBodies(ctx context.Context, tx pgx.Tx) error {
	clusters, err := pgx.CollectRows(mustQuery(ctx, tx, `SELECT DISTINCT e.cluster FROM audit_bodies_v7 b
		JOIN audit_events e ON e.id = b.event_id ORDER BY 1`), pgx.RowTo[string])
	if err != nil {
		return err
	}
	var w blocks.Writer
	for _, cluster := range clusters {
		after := int64(0)
		for {
			rows, err := tx.Query(ctx, `SELECT b.event_id, e.verb, b.request_object, b.response_object, b.response_status
				FROM audit_bodies_v7 b JOIN audit_events e ON e.id = b.event_id
				WHERE e.cluster = $1 AND b.event_id > $2 ORDER BY b.event_id LIMIT 2000`, cluster, after)
			if err != nil {
				return err
			}
			var chunk []blocks.Body
			for rows.Next() {
				var id int64
				var verb string
				var req, resp, st *string
				if err := rows.Scan(&id, &verb, &req, &resp, &st); err != nil {
					rows.Close()
					return err
				}
				chunk = append(chunk, blocks.NewBody(id, verb, strBytes(req), strBytes(resp), strBytes(st)))
				after = id
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if len(chunk) == 0 {
				break
			}
			committed, err := w.Write(ctx, blockTx{tx}, cluster, chunk)
			if err != nil {
				return fmt.Errorf("pack the bodies of schema v7: %w", err)
			}
			committed() // the same transaction goes on: its blocks are as stored
		}
	}
	_, err = tx.Exec(ctx, `DROP TABLE audit_bodies_v7`)
	return err
}

func strBytes(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

// mustQuery is tx.Query whose error CollectRows reports.
func mustQuery(ctx context.Context, tx pgx.Tx, q string) pgx.Rows {
	rows, _ := tx.Query(ctx, q)
	return rows
}

// backfillTraceparents gives the events stored before schema v9 the
// traceparent their bodies carry (migration 4). Only bodies that mention
// the annotation are decoded.
func backfillTraceparents(ctx context.Context, tx pgx.Tx) error {
	like := "%" + cpid.KeyTraceparent + "%"
	rows, err := tx.Query(ctx, `SELECT event_id, request_object, response_object FROM audit_bodies
		WHERE request_object LIKE $1 OR response_object LIKE $1 ORDER BY event_id`, like)
	if err != nil {
		return err
	}
	var ids []int64
	var tps []string
	for rows.Next() {
		var id int64
		var req, resp *string
		if err := rows.Scan(&id, &req, &resp); err != nil {
			rows.Close()
			return err
		}
		if tp := cpid.TraceparentOfBodies(strBytes(req), strBytes(resp)); tp != "" {
			ids, tps = append(ids, id), append(tps, tp)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE audit_events e SET traceparent = v.tp
		FROM unnest($1::bigint[], $2::text[]) AS v(id, tp) WHERE e.id = v.id`, ids, tps)
	return err
}
