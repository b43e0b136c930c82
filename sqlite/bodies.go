package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"unsafe"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/blocks"
	sqlite3 "modernc.org/sqlite"
)

// bodyCache holds the blocks cpid_body decompressed last: the rows of a
// scan in id order take their bodies from a few blocks in turn.
var bodyCache = blocks.NewCache(16)

func init() {
	// cpid_body(data, offset, len) is the text of len bytes at offset in
	// the decompressed content of the body block data; NULL when len is.
	// The view audit_bodies reads every body through it.
	sqlite3.MustRegisterFunction("cpid_body", &sqlite3.FunctionImpl{
		NArgs:         3,
		Deterministic: true,
		VolatileArgs:  true, // data is hashed and decompressed, never kept
		Scalar: func(_ *sqlite3.FunctionContext, args []driver.Value) (driver.Value, error) {
			return cpidBody(args)
		},
	})
}

// cpidBody is cpid_body(data, offset, len), for either SQLite.
func cpidBody(args []driver.Value) (driver.Value, error) {
	if args[0] == nil || args[1] == nil || args[2] == nil {
		return nil, nil
	}
	data, ok := args[0].([]byte)
	off, ok1 := args[1].(int64)
	n, ok2 := args[2].(int64)
	if !ok || !ok1 || !ok2 {
		return nil, fmt.Errorf("cpid_body(data BLOB, offset INTEGER, len INTEGER): wrong argument types %T, %T, %T",
			args[0], args[1], args[2])
	}
	raw, err := bodyCache.Raw(data)
	if err != nil {
		return nil, err
	}
	if off < 0 || n < 0 || off+n > int64(len(raw)) {
		return nil, fmt.Errorf("cpid_body: %d bytes at %d are outside the block's %d", n, off, len(raw))
	}
	if n == 0 {
		return "", nil
	}
	// The cached content is never modified: the driver copies
	// the string into SQLite.
	return unsafe.String(&raw[off], n), nil
}

// blockTx is the SQL of blocks.Tx in one of the writer's transactions.
type blockTx struct {
	tx    *sql.Tx
	batch *batchExec // the store's, if any
}

func (b blockTx) Last(ctx context.Context, cluster, kind string) (id, rawLen int64, ok bool, err error) {
	err = b.tx.QueryRowContext(ctx, `SELECT id, raw_len FROM body_blocks WHERE cluster = ? AND kind = ? ORDER BY id DESC LIMIT 1`,
		cluster, kind).Scan(&id, &rawLen)
	if err == sql.ErrNoRows {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("read the last body block: %w", err)
	}
	return id, rawLen, true, nil
}

func (b blockTx) Content(ctx context.Context, id, rawLen int64) ([]byte, error) {
	return readBlock(ctx, b.tx, id, nil)
}

// readBlock reads block id and decompresses it into buf.
func readBlock(ctx context.Context, db querier, id int64, buf []byte) ([]byte, error) {
	var data []byte
	var rawLen int64
	if err := db.QueryRowContext(ctx, `SELECT data, raw_len FROM body_blocks WHERE id = ?`, id).Scan(&data, &rawLen); err != nil {
		return nil, fmt.Errorf("read body block %d: %w", id, err)
	}
	raw, err := blocks.Decompress(buf, data, rawLen)
	if err != nil {
		return nil, fmt.Errorf("body block %d: %w", id, err)
	}
	return raw, nil
}

// Put writes the blocks Pack returned (inserting new ones, updating the
// open one it grew) and the references to them.
func (bt blockTx) Put(ctx context.Context, cluster, kind string, bs []*blocks.Block, refs []blocks.Ref) error {
	tx := bt.tx
	var buf []byte
	for _, b := range bs {
		buf = blocks.Compress(buf[:0], b.Raw)
		if b.ID != 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE body_blocks SET raw_len = ?, data = ? WHERE id = ?`, len(b.Raw), buf, b.ID); err != nil {
				return fmt.Errorf("store body block: %w", err)
			}
			continue
		}
		r, err := tx.ExecContext(ctx, `INSERT INTO body_blocks(cluster, kind, raw_len, data) VALUES (?, ?, ?, ?)`, cluster, kind, len(b.Raw), buf)
		if err != nil {
			return fmt.Errorf("store body block: %w", err)
		}
		if b.ID, err = r.LastInsertId(); err != nil {
			return err
		}
	}
	r := newRows(6)
	defer r.put()
	for _, ref := range refs {
		r.int(ref.EventID)
		r.int(bs[ref.Block].ID)
		r.int(int64(ref.Off))
		for _, n := range ref.Len {
			if n < 0 {
				r.null()
			} else {
				r.int(int64(n))
			}
		}
	}
	err := execRows(ctx, tx, bt.batch, `INSERT INTO audit_body_refs(event_id, block_id, offset, request_len, response_len, status_len)
		VALUES (?, ?, ?, ?, ?, ?)`, r, make([]int64, len(refs)))
	var re *rowError
	if errors.As(err, &re) {
		return fmt.Errorf("store body of event %d: %w", refs[re.row].EventID, re.err)
	}
	return err
}

// packLegacyBodies moves the bodies of a database older than schema v8
// (table audit_bodies_v7, one row of JSON text per event) into blocks, in
// event order, and drops the old table. It runs in migration 0008's
// transaction.
func packLegacyBodies(ctx context.Context, tx *sql.Tx) error {
	// Each cluster's bodies go to its own blocks, in event order; a chunk
	// of rows at a time bounds memory.
	clusters, err := column(ctx, tx, `SELECT DISTINCT e.cluster FROM audit_bodies_v7 b JOIN audit_events e ON e.id = b.event_id ORDER BY 1`)
	if err != nil {
		return err
	}
	var w blocks.Writer
	for _, cluster := range clusters {
		after := int64(0)
		for {
			rows, err := tx.QueryContext(ctx, `SELECT b.event_id, e.verb, b.request_object, b.response_object, b.response_status
				FROM audit_bodies_v7 b JOIN audit_events e ON e.id = b.event_id
				WHERE e.cluster = ? AND b.event_id > ? ORDER BY b.event_id LIMIT 2000`, cluster, after)
			if err != nil {
				return err
			}
			var chunk []blocks.Body
			for rows.Next() {
				var id int64
				var verb string
				var req, resp, st sql.NullString
				if err := rows.Scan(&id, &verb, &req, &resp, &st); err != nil {
					rows.Close()
					return err
				}
				chunk = append(chunk, blocks.NewBody(id, verb, nullBytes(req), nullBytes(resp), nullBytes(st)))
				after = id
			}
			if err := rows.Close(); err != nil {
				return err
			}
			if len(chunk) == 0 {
				break
			}
			committed, err := w.Write(ctx, blockTx{tx: tx}, cluster, chunk)
			if err != nil {
				return fmt.Errorf("pack the bodies of schema v7: %w", err)
			}
			committed() // the same transaction goes on: its blocks are as stored
		}
	}
	_, err = tx.ExecContext(ctx, `DROP TABLE audit_bodies_v7`)
	return err
}

func nullBytes(s sql.NullString) []byte {
	if !s.Valid {
		return nil
	}
	return []byte(s.String)
}

// blockReaderOf decompresses the blocks a scan reads, keeping the last few:
// a scan in stored order reads one block for many rows in turn.
type blockReaderOf struct {
	s       *Store
	entries []cachedBlock // most recent last
}

type cachedBlock struct {
	id  int64
	raw []byte
}

func (s *Store) blockReader() *blockReaderOf { return &blockReaderOf{s: s} }

// raw returns the decompressed content of block id. The slice is shared:
// copy what is kept.
func (r *blockReaderOf) raw(ctx context.Context, id int64) ([]byte, error) {
	for i := len(r.entries) - 1; i >= 0; i-- {
		if r.entries[i].id == id {
			return r.entries[i].raw, nil
		}
	}
	var buf []byte
	if len(r.entries) >= 4 {
		buf = r.entries[0].raw[:0]
		r.entries = append(r.entries[:0], r.entries[1:]...)
	}
	raw, err := readBlock(ctx, r.s.r, id, buf)
	if err != nil {
		return nil, err
	}
	r.entries = append(r.entries, cachedBlock{id, raw})
	return raw, nil
}

// backfillTraceparents gives the events stored before schema v9 the
// traceparent their bodies carry (migration 9). Only bodies that mention
// the annotation are decoded.
func backfillTraceparents(ctx context.Context, tx *sql.Tx) error {
	like := "%" + cpid.KeyTraceparent + "%"
	rows, err := tx.QueryContext(ctx, `SELECT event_id, request_object, response_object FROM audit_bodies
		WHERE request_object LIKE ? OR response_object LIKE ? ORDER BY event_id`, like, like)
	if err != nil {
		return err
	}
	type found struct {
		id int64
		tp string
	}
	var all []found
	for rows.Next() {
		var id int64
		var req, resp sql.NullString
		if err := rows.Scan(&id, &req, &resp); err != nil {
			rows.Close()
			return err
		}
		if tp := cpid.TraceparentOfBodies(nullBytes(req), nullBytes(resp)); tp != "" {
			all = append(all, found{id, tp})
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, f := range all {
		if _, err := tx.ExecContext(ctx, `UPDATE audit_events SET traceparent = ? WHERE id = ?`, f.tp, f.id); err != nil {
			return fmt.Errorf("backfill traceparents: %w", err)
		}
	}
	return nil
}
