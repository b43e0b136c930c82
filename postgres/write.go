package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/blocks"
)

// Write stores a batch in one transaction (cpid.RecordWriter). Records
// whose hash is already stored are skipped and counted as duplicates, so
// writing the same batch twice changes nothing, from any number of writers
// at once. The batch's checkpoints are stored in the same transaction. The
// records go to the view's cluster (cpid.DefaultCluster for a view of every
// cluster).
//
// The new records are copied (COPY) into the session's staging tables
// (stage.go) and moved from there by one INSERT ... SELECT per table, in
// the batch's order: a batch costs a dozen round trips and statements,
// whatever its size.
func (s *Store) Write(ctx context.Context, b *cpid.Batch) (cpid.Written, error) {
	var res cpid.Written
	ownA, ownL, err := b.Owners()
	if err != nil {
		return res, err
	}
	cluster := s.own()
	dups := make([]int, len(b.Checkpoints))
	afterCommit := func() {}
	var buf copyBuf
	err = s.retry(ctx, func(tx pgx.Tx) error {
		res = cpid.Written{}
		clear(dups)
		files, aNew, lNew, err := lookUp(ctx, tx, cluster, b)
		if err != nil {
			return err
		}
		ids, err := storeAudits(ctx, tx, &buf, cluster, b.Audits, aNew, files)
		if err != nil {
			return err
		}
		var bodies []blocks.Body
		for i := range b.Audits {
			a := &b.Audits[i]
			if ids[i] == 0 {
				res.AuditDups++
				if ownA != nil {
					dups[ownA[i]]++
				}
				continue
			}
			res.Audits++
			bodies = append(bodies, blocks.NewBody(ids[i], a.Verb, a.RequestObject, a.ResponseObject, a.ResponseStatus))
		}
		stored, err := storeLogs(ctx, tx, &buf, cluster, b.Logs, lNew, files)
		if err != nil {
			return err
		}
		for i := range b.Logs {
			if !stored[i] {
				res.LogDups++
				if ownL != nil {
					dups[ownL[i]]++
				}
				continue
			}
			res.Logs++
		}
		if afterCommit, err = s.bodies.Write(ctx, copyBlockTx{blockTx{tx}, &buf}, cluster, bodies); err != nil {
			return err
		}
		return checkpoints(ctx, tx, cluster, b.Checkpoints, dups)
	})
	if err != nil {
		s.bodies.Forget(cluster)
		return cpid.Written{}, err
	}
	afterCommit()
	return res, nil
}

// lookUp stores the batch's files of cluster and returns their ids, and
// which records of the batch are new: the first of each hash, when the
// hash is not stored yet and the record is not older than the cluster's
// horizon (retain.go). One round trip.
func lookUp(ctx context.Context, tx pgx.Tx, cluster string, b *cpid.Batch) (files map[string]int64, audits, logs []bool, err error) {
	files = map[string]int64{}
	var paths []string
	for i := range b.Audits {
		if _, ok := files[b.Audits[i].File]; !ok {
			files[b.Audits[i].File] = 0
			paths = append(paths, b.Audits[i].File)
		}
	}
	for i := range b.Logs {
		if _, ok := files[b.Logs[i].File]; !ok {
			files[b.Logs[i].File] = 0
			paths = append(paths, b.Logs[i].File)
		}
	}
	audits, aHashes := firsts(len(b.Audits), func(i int) [16]byte { return b.Audits[i].Hash })
	logs, lHashes := firsts(len(b.Logs), func(i int) [16]byte { return b.Logs[i].Hash })
	var q pgx.Batch
	// Records older than the cluster's horizon were expired (Expire):
	// skipped as duplicates.
	var before int64
	q.Queue(horizon, retentionLockClass, cluster).QueryRow(func(row pgx.Row) error { return row.Scan(nil, &before) })
	if len(paths) > 0 {
		// Paths stored already are skipped before the insert, so that
		// they take no id (ON CONFLICT alone would spend one): ids number
		// files in the order they were first stored, as in SQLite,
		// however the records were batched.
		q.Queue(`WITH added AS (INSERT INTO files(path, cluster) SELECT p, $2 FROM unnest($1::text[]) WITH ORDINALITY AS u(p, n)
			WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.cluster = $2 AND f.path = u.p) ORDER BY n
			ON CONFLICT (cluster, path) DO NOTHING RETURNING path, id)
			SELECT path, id FROM added UNION ALL SELECT path, id FROM files WHERE cluster = $2 AND path = ANY($1)`, paths, cluster).
			Query(func(rows pgx.Rows) error {
				var p string
				var id int64
				_, err := pgx.ForEachRow(rows, []any{&p, &id}, func() error {
					files[p] = id
					return nil
				})
				if err != nil {
					return fmt.Errorf("store files: %w", err)
				}
				return nil
			})
	}
	// A record already stored is skipped before the insert, so that it
	// takes no id: ids number rows in the order they were stored, as in
	// SQLite (ON CONFLICT alone would spend one).
	stored := func(table string, hashes map[[16]byte]int, isNew []bool) {
		if len(hashes) == 0 {
			return
		}
		list := make([][]byte, 0, len(hashes))
		for h := range hashes {
			list = append(list, h[:])
		}
		q.Queue(`SELECT hash FROM `+table+` WHERE hash = ANY($1)`, list).Query(func(rows pgx.Rows) error {
			var h []byte
			_, err := pgx.ForEachRow(rows, []any{&h}, func() error {
				if i, ok := hashes[[16]byte(h)]; ok {
					isNew[i] = false
				}
				return nil
			})
			return err
		})
	}
	stored("audit_events", aHashes, audits)
	stored("log_records", lHashes, logs)
	if err := tx.SendBatch(ctx, &q).Close(); err != nil {
		return nil, nil, nil, err
	}
	if before != 0 {
		for i := range b.Audits {
			audits[i] = audits[i] && b.Audits[i].ReceivedNS >= before
		}
		for i := range b.Logs {
			logs[i] = logs[i] && b.Logs[i].TimeNS >= before
		}
	}
	return files, audits, logs, nil
}

// firsts marks the first record of each hash among n, and returns the
// index of each hash's first.
func firsts(n int, hash func(int) [16]byte) ([]bool, map[[16]byte]int) {
	isNew := make([]bool, n)
	index := make(map[[16]byte]int, n)
	for i := range n {
		h := hash(i)
		if _, ok := index[h]; !ok {
			index[h] = i
			isNew[i] = true
		}
	}
	return isNew, index
}

// auditWriteColumns are the columns of audit_events a batch fills, but cluster.
const auditWriteColumns = `hash, audit_id, stage, level, verb, request_uri, api_group, api_version, resource, subresource, namespace,
	name, uid, resource_version, username, user_agent, source_ips, code, received_ns, stage_ns, cpid, cpid_ancestors, owner_refs,
	annotations, redacted, file_id, line, traceparent`

// storeAudits stores the new audit events (isNew) of cluster, in order,
// and returns the id of each event of the batch, 0 for one not stored.
func storeAudits(ctx context.Context, tx pgx.Tx, buf *copyBuf, cluster string, as []cpid.Audit, isNew []bool, files map[string]int64) ([]int64, error) {
	ids := make([]int64, len(as))
	index := map[[16]byte]int{}
	buf.header()
	for i := range as {
		if !isNew[i] {
			continue
		}
		a := &as[i]
		index[a.Hash] = i
		buf.row(29)
		buf.int8(int64(i))
		buf.bytes(a.Hash[:])
		for _, s := range []string{a.AuditID, a.Stage, a.Level, a.Verb, a.RequestURI, a.APIGroup, a.APIVersion, a.Resource,
			a.Subresource, a.Namespace, a.Name, a.UID, a.ResourceVersion, a.Username, a.UserAgent} {
			buf.text(s)
		}
		buf.strings(a.SourceIPs)
		buf.int8OrNull(int64(a.Code))
		buf.int8(a.ReceivedNS)
		buf.int8(a.StageNS)
		buf.textOrNull(a.CPID)
		buf.strings(a.CPIDAncestors)
		buf.json(a.OwnerRefs)
		buf.json(a.Annotations)
		buf.int8(flag(a.Redacted))
		buf.int8(files[a.File])
		buf.int8(int64(a.Line))
		buf.textOrNull(a.Traceparent)
	}
	if len(index) == 0 {
		return ids, nil
	}
	if err := buf.send(ctx, tx, "cpid_stage_audits", "n, "+auditWriteColumns); err != nil {
		return nil, err
	}
	// ON CONFLICT skips what another writer stored since lookUp.
	rows, err := tx.Query(ctx, `INSERT INTO audit_events(`+auditWriteColumns+`, cluster)
		SELECT `+auditWriteColumns+`, $1 FROM cpid_stage_audits ORDER BY n
		ON CONFLICT (hash) DO NOTHING RETURNING id, hash`, cluster)
	if err != nil {
		return nil, fmt.Errorf("insert audit events: %w", err)
	}
	var id int64
	var h []byte
	_, err = pgx.ForEachRow(rows, []any{&id, &h}, func() error {
		ids[index[[16]byte(h)]] = id
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("insert audit events: %w", err)
	}
	return ids, nil
}

// logWriteColumns are the columns of log_records a batch fills, but cluster.
const logWriteColumns = `hash, ts_ns, level, component, msg, cpid, fields, file_id, line`

// storeLogs stores the new log records (isNew) of cluster, in order, and
// returns which records of the batch it stored.
func storeLogs(ctx context.Context, tx pgx.Tx, buf *copyBuf, cluster string, ls []cpid.Log, isNew []bool, files map[string]int64) ([]bool, error) {
	stored := make([]bool, len(ls))
	index := map[[16]byte]int{}
	buf.header()
	for i := range ls {
		if !isNew[i] {
			continue
		}
		l := &ls[i]
		index[l.Hash] = i
		buf.row(10)
		buf.int8(int64(i))
		buf.bytes(l.Hash[:])
		buf.int8(l.TimeNS)
		buf.text(l.Level)
		buf.text(l.Component)
		buf.text(l.Msg)
		buf.textOrNull(l.CPID)
		buf.bytes(l.Fields)
		buf.int8(files[l.File])
		buf.int8(int64(l.Line))
	}
	if len(index) == 0 {
		return stored, nil
	}
	if err := buf.send(ctx, tx, "cpid_stage_logs", "n, "+logWriteColumns); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `INSERT INTO log_records(`+logWriteColumns+`, cluster)
		SELECT `+logWriteColumns+`, $1 FROM cpid_stage_logs ORDER BY n
		ON CONFLICT (hash) DO NOTHING RETURNING hash`, cluster)
	if err != nil {
		return nil, fmt.Errorf("insert log records: %w", err)
	}
	var h []byte
	_, err = pgx.ForEachRow(rows, []any{&h}, func() error {
		stored[index[[16]byte(h)]] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("insert log records: %w", err)
	}
	return stored, nil
}

// checkpoints stores the tailer's positions and adds its counters, in one
// round trip.
func checkpoints(ctx context.Context, tx pgx.Tx, cluster string, cks []cpid.Checkpoint, dups []int) error {
	now := time.Now().UnixNano()
	var q pgx.Batch
	for i, c := range cks {
		q.Queue(`INSERT INTO tail_checkpoints(cluster, source, file, fingerprint, fingerprint_len, "offset",
			line, device, inode, lines, records, dups, bad, possible_loss, newest_ns, committed_ns)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16)
			ON CONFLICT (cluster, source) DO UPDATE SET file = excluded.file, fingerprint = excluded.fingerprint,
			fingerprint_len = excluded.fingerprint_len, "offset" = excluded."offset", line = excluded.line,
			device = excluded.device, inode = excluded.inode,
			lines = tail_checkpoints.lines + excluded.lines, records = tail_checkpoints.records + excluded.records,
			dups = tail_checkpoints.dups + excluded.dups, bad = tail_checkpoints.bad + excluded.bad,
			possible_loss = tail_checkpoints.possible_loss + excluded.possible_loss,
			newest_ns = GREATEST(tail_checkpoints.newest_ns, excluded.newest_ns), committed_ns = excluded.committed_ns`,
			cluster, c.Source, c.File, c.Fingerprint[:], c.FingerprintLen, c.Offset, c.Line, int64(c.Device), int64(c.Inode),
			c.Lines, c.Audits+c.Logs-dups[i], dups[i], c.Bad, c.PossibleLoss, c.NewestNS, now)
	}
	if q.Len() == 0 {
		return nil
	}
	br := tx.SendBatch(ctx, &q)
	for _, c := range cks {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return fmt.Errorf("store checkpoint of %s: %w", c.Source, err)
		}
	}
	return br.Close()
}

// orNil is v, or NULL for its zero value.
func orNil[T comparable](v T) any {
	var zero T
	if v == zero {
		return nil
	}
	return v
}

// flag is a bool as the 0/1 integer of the schema.
func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// retry runs fn in a transaction, again when the server ended it for a
// deadlock or a serialization failure: writers storing the same records at
// once (a bundle ingested twice in parallel) wait on each other's keys. A
// server that went away is said in words (explainDown); the caller may
// wait and try again (IsDown).
func (s *Store) retry(ctx context.Context, fn func(pgx.Tx) error) error {
	for i := 0; ; i++ {
		err := s.withStage(ctx, func(conn *pgxpool.Conn) error { return pgx.BeginFunc(ctx, conn, fn) })
		var pe *pgconn.PgError
		if i < 5 && errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001") {
			continue
		}
		return explainDown(err)
	}
}
