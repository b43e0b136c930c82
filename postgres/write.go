package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/blocks"
)

// Write stores a batch in one transaction (cpid.RecordWriter). Records
// whose hash is already stored are skipped and counted as duplicates, so
// writing the same batch twice changes nothing, from any number of writers
// at once. The batch's checkpoints are stored in the same transaction. The
// records go to the view's cluster (cpid.DefaultCluster for a view of every
// cluster).
func (s *Store) Write(ctx context.Context, b *cpid.Batch) (cpid.Written, error) {
	var res cpid.Written
	ownA, ownL, err := b.Owners()
	if err != nil {
		return res, err
	}
	cluster := s.own()
	dups := make([]int, len(b.Checkpoints))
	afterCommit := func() {}
	err = s.retry(ctx, func(tx pgx.Tx) error {
		res = cpid.Written{}
		clear(dups)
		files, err := fileIDs(ctx, tx, cluster, b)
		if err != nil {
			return err
		}
		// Each insert says whether it stored the row (RETURNING id);
		// the statements go to the server in one round trip. A row
		// already stored is skipped before the insert, so that it takes no
		// id: ids number rows in the order they were stored, as in SQLite
		// (ON CONFLICT alone would spend one).
		var q pgx.Batch
		for i := range b.Audits {
			a := &b.Audits[i]
			q.Queue(`INSERT INTO audit_events(hash, audit_id, stage, level, verb, request_uri, api_group, api_version,
				resource, subresource, namespace, name, uid, resource_version, username, user_agent, source_ips, code,
				received_ns, stage_ns, cpid, cpid_ancestors, owner_refs, annotations, redacted, file_id, line, cluster, traceparent)
				SELECT $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$26,$27,$28,$29
				WHERE NOT EXISTS (SELECT 1 FROM audit_events WHERE hash = $1)
				ON CONFLICT (hash) DO NOTHING RETURNING id`,
				a.Hash[:], a.AuditID, a.Stage, a.Level, a.Verb, a.RequestURI, a.APIGroup, a.APIVersion,
				a.Resource, a.Subresource, a.Namespace, a.Name, a.UID, a.ResourceVersion, a.Username, a.UserAgent,
				cpid.JSONStrings(a.SourceIPs), orNil(int64(a.Code)), a.ReceivedNS, a.StageNS, orNil(a.CPID), cpid.JSONStrings(a.CPIDAncestors),
				cpid.JSONText(a.OwnerRefs), cpid.JSONText(a.Annotations), flag(a.Redacted), files[a.File], a.Line, cluster, orNil(a.Traceparent))
		}
		for i := range b.Logs {
			l := &b.Logs[i]
			q.Queue(`INSERT INTO log_records(hash, ts_ns, level, component, msg, cpid, fields, file_id, line, cluster)
				SELECT $1,$2,$3,$4,$5,$6,$7,$8,$9,$10 WHERE NOT EXISTS (SELECT 1 FROM log_records WHERE hash = $1)
				ON CONFLICT (hash) DO NOTHING RETURNING id`,
				l.Hash[:], l.TimeNS, l.Level, l.Component, l.Msg, orNil(l.CPID), string(l.Fields), files[l.File], l.Line, cluster)
		}
		br := tx.SendBatch(ctx, &q)
		var bodies []blocks.Body
		for i := range b.Audits {
			a := &b.Audits[i]
			var id int64
			switch err := br.QueryRow().Scan(&id); {
			case err == pgx.ErrNoRows:
				res.AuditDups++
				if ownA != nil {
					dups[ownA[i]]++
				}
				continue
			case err != nil:
				br.Close()
				return fmt.Errorf("insert audit event %s: %w", a.Pos, err)
			}
			res.Audits++
			bodies = append(bodies, blocks.NewBody(id, a.Verb, a.RequestObject, a.ResponseObject, a.ResponseStatus))
		}
		for i := range b.Logs {
			var id int64
			switch err := br.QueryRow().Scan(&id); {
			case err == pgx.ErrNoRows:
				res.LogDups++
				if ownL != nil {
					dups[ownL[i]]++
				}
				continue
			case err != nil:
				br.Close()
				return fmt.Errorf("insert log record %s: %w", b.Logs[i].Pos, err)
			}
			res.Logs++
		}
		if err := br.Close(); err != nil {
			return err
		}
		if afterCommit, err = s.bodies.Write(ctx, blockTx{tx}, cluster, bodies); err != nil {
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

// fileIDs stores the batch's files of cluster and returns their ids.
func fileIDs(ctx context.Context, tx pgx.Tx, cluster string, b *cpid.Batch) (map[string]int64, error) {
	ids := map[string]int64{}
	var paths []string
	for i := range b.Audits {
		if _, ok := ids[b.Audits[i].File]; !ok {
			ids[b.Audits[i].File] = 0
			paths = append(paths, b.Audits[i].File)
		}
	}
	for i := range b.Logs {
		if _, ok := ids[b.Logs[i].File]; !ok {
			ids[b.Logs[i].File] = 0
			paths = append(paths, b.Logs[i].File)
		}
	}
	if len(paths) == 0 {
		return ids, nil
	}
	// Paths stored already are skipped before the insert, so that they
	// take no id (ON CONFLICT alone would spend one): ids number files in
	// the order they were first stored, as in SQLite, however the records
	// were batched.
	if _, err := tx.Exec(ctx, `INSERT INTO files(path, cluster) SELECT p, $2 FROM unnest($1::text[]) WITH ORDINALITY AS u(p, n)
		WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.cluster = $2 AND f.path = u.p) ORDER BY n
		ON CONFLICT (cluster, path) DO NOTHING`, paths, cluster); err != nil {
		return nil, fmt.Errorf("store files: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT path, id FROM files WHERE cluster = $2 AND path = ANY($1)`, paths, cluster)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		var id int64
		if err := rows.Scan(&p, &id); err != nil {
			return nil, err
		}
		ids[p] = id
	}
	return ids, rows.Err()
}

// checkpoints stores the tailer's positions and adds its counters.
func checkpoints(ctx context.Context, tx pgx.Tx, cluster string, cks []cpid.Checkpoint, dups []int) error {
	now := time.Now().UnixNano()
	for i, c := range cks {
		_, err := tx.Exec(ctx, `INSERT INTO tail_checkpoints(cluster, source, file, fingerprint, fingerprint_len, "offset",
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
		if err != nil {
			return fmt.Errorf("store checkpoint of %s: %w", c.Source, err)
		}
	}
	return nil
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
		err := pgx.BeginFunc(ctx, s.pool, fn)
		var pe *pgconn.PgError
		if i < 5 && errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001") {
			continue
		}
		return explainDown(err)
	}
}
