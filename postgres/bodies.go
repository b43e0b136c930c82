package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cpid-dev/cpid/blocks"
)

// openBlock is the last body block of a cluster as this process wrote it.
type openBlock struct {
	id  int64
	raw []byte
}

// writeBodies packs the bodies of the events a transaction stored into the
// cluster's blocks, each kind apart: the last block of a kind, when not
// full, takes them first and is written again. It returns what to run once
// the transaction committed (remember the blocks' content).
func (s *Store) writeBodies(ctx context.Context, tx pgx.Tx, cluster string, bodies []blocks.Body) (after func(), err error) {
	var lasts []func()
	for _, kind := range blocks.Kinds {
		of := blocks.OfKind(bodies, kind)
		if len(of) == 0 {
			continue
		}
		open, err := s.loadOpenBlock(ctx, tx, cluster, kind)
		if err != nil {
			return nil, err
		}
		bs, refs := blocks.Pack(open, of)
		if len(bs) == 0 {
			continue
		}
		if err := storeBlocks(ctx, tx, cluster, kind, bs, refs); err != nil {
			return nil, err
		}
		last := bs[len(bs)-1]
		lasts = append(lasts, func() { s.remember(cluster, kind, last) })
	}
	return func() {
		for _, f := range lasts {
			f()
		}
	}, nil
}

// remember keeps the content of a cluster's last block of kind once the
// transaction that wrote it committed (nil: forget it; kind "": every kind).
func (s *Store) remember(cluster, kind string, last *blocks.Block) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		s.open = map[string]openBlock{}
	}
	if kind == "" {
		for _, k := range blocks.Kinds {
			delete(s.open, cluster+"\x00"+k)
		}
		return
	}
	if last != nil && blocks.Open(int64(len(last.Raw))) {
		s.open[cluster+"\x00"+kind] = openBlock{id: last.ID, raw: last.Raw}
	} else {
		delete(s.open, cluster+"\x00"+kind)
	}
}

// loadOpenBlock returns the cluster's last block of kind when it still
// takes bodies, nil otherwise. The row is locked (FOR UPDATE) until the
// transaction ends, so that writers of one cluster append to it in turn;
// the content this process stored last is reused when the block is
// unchanged since.
func (s *Store) loadOpenBlock(ctx context.Context, tx pgx.Tx, cluster, kind string) (*blocks.Block, error) {
	var id, rawLen int64
	err := tx.QueryRow(ctx, `SELECT id, raw_len FROM body_blocks WHERE cluster = $1 AND kind = $2 ORDER BY id DESC LIMIT 1 FOR UPDATE`,
		cluster, kind).Scan(&id, &rawLen)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the last body block: %w", err)
	case !blocks.Open(rawLen):
		return nil, nil
	}
	raw := make([]byte, 0, blocks.Size)
	s.mu.Lock()
	o, ok := s.open[cluster+"\x00"+kind]
	s.mu.Unlock()
	if ok && o.id == id && int64(len(o.raw)) == rawLen {
		return &blocks.Block{ID: id, Raw: append(raw, o.raw...)}, nil
	}
	var data []byte
	if err := tx.QueryRow(ctx, `SELECT data FROM body_blocks WHERE id = $1`, id).Scan(&data); err != nil {
		return nil, fmt.Errorf("read the last body block: %w", err)
	}
	if int64(len(data)) != rawLen {
		return nil, fmt.Errorf("body block %d: %w: %d bytes, want %d", id, blocks.ErrCorrupt, len(data), rawLen)
	}
	return &blocks.Block{ID: id, Raw: append(raw, data...)}, nil
}

// storeBlocks writes the blocks Pack returned and the references to them.
func storeBlocks(ctx context.Context, tx pgx.Tx, cluster, kind string, bs []*blocks.Block, refs []blocks.Ref) error {
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
	for _, cluster := range clusters {
		open := map[string]*blocks.Block{}
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
			for _, kind := range blocks.Kinds {
				bs, refs := blocks.Pack(open[kind], blocks.OfKind(chunk, kind))
				if len(bs) == 0 {
					continue
				}
				if err := storeBlocks(ctx, tx, cluster, kind, bs, refs); err != nil {
					return fmt.Errorf("pack the bodies of schema v7: %w", err)
				}
				if open[kind] = bs[len(bs)-1]; !blocks.Open(int64(len(open[kind].Raw))) {
					open[kind] = nil
				}
			}
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
