package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/cpid-dev/cpid"
)

// Watermark reads where the last reconstruct stopped (cpid.DerivedStore).
func (s *Store) Watermark(ctx context.Context) (cpid.Watermark, error) {
	var w cpid.Watermark
	rows, err := s.r.QueryContext(ctx, `SELECT key, value FROM reconstruct_state WHERE cluster = ?`, s.own())
	if err != nil {
		return w, err
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v any
		if err := rows.Scan(&k, &v); err != nil {
			return w, err
		}
		if err := w.Set(k, v); err != nil {
			return w, err
		}
	}
	return w, rows.Err()
}

// Late counts what was ingested since the watermark and belongs before its
// cutoff (cpid.DerivedStore): writes received before it, and log records of

// lateSQL counts the writes and records stored since the last run
// (ids past its own) that are older than its cutoff. Only the new rows
// are read, by id: the unary + keeps SQLite off the index of the writes
// by cluster and time, which would read every write of the cluster older
// than the cutoff (the whole table, run after run).
var lateSQL = `SELECT
	(SELECT count(*) FROM audit_events WHERE id > ?1 AND +received_ns <= ?2 AND ` + writeTerms("") + ` AND +cluster = ?5) +
	(SELECT count(*) FROM log_records WHERE id > ?3 AND +ts_ns <= ?2 AND msg = ?4 AND cluster = ?5)`

// latestWriteSQL is the time of the newest write up to an id: down the
// writes' index from the newest, to the first that matches (max() with
// these terms, or the id's range, would read every write).
var latestWriteSQL = `SELECT received_ns FROM audit_events WHERE +id <= ? AND ` + writeTerms("") + `
	AND cluster = ? ORDER BY received_ns DESC LIMIT 1`

// message msg logged before it.
func (s *Store) Late(ctx context.Context, w cpid.Watermark, msg string) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, lateSQL, w.EventID, w.CutoffNS, w.LogID, msg, s.own()).Scan(&n)
	return n, err
}

// LatestWrite returns the latest receive time of a write with id <= upToID.
func (s *Store) LatestWrite(ctx context.Context, upToID int64) (int64, error) {
	var ns int64
	err := s.r.QueryRowContext(ctx, latestWriteSQL, upToID, s.own()).Scan(&ns)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return ns, err
}

// LastIDs returns the highest audit_events.id and log_records.id of the
// view's cluster.
func (s *Store) LastIDs(ctx context.Context) (event, log int64, err error) {
	// Newest first by rowid, stopping at the first of the cluster: as fast
	// as max(id) when one cluster writes, and no index on cluster needed.
	err = s.r.QueryRowContext(ctx, `SELECT
		COALESCE((SELECT id FROM audit_events WHERE cluster = ?1 ORDER BY id DESC LIMIT 1), 0),
		COALESCE((SELECT id FROM log_records WHERE cluster = ?1 ORDER BY id DESC LIMIT 1), 0)`, s.own()).Scan(&event, &log)
	return
}

// writeTerms select the writes among audit events: the final stage of a
// create, update, patch, delete or deletecollection. They repeat the WHERE
// of the partial index audit_events_writes word for word (migration 0011),
// with the columns of table alias e when it is given.
func writeTerms(e string) string {
	if e != "" {
		e += "."
	}
	return e + `stage IN ('ResponseComplete', 'Panic') AND (` +
		e + `verb = 'create' OR ` + e + `verb = 'update' OR ` + e + `verb = 'patch' OR ` +
		e + `verb = 'delete' OR ` + e + `verb = 'deletecollection')`
}

// ScanWrites calls fn for the writes q selects (cpid.DerivedStore), in the
// order the apiserver received them, then id. fn may keep the events.
func (s *Store) ScanWrites(ctx context.Context, q cpid.WriteScan, fn func(*cpid.WriteEvent) error) error {
	args := []any{q.AfterNS, q.UpToID, s.own()}
	var ignore strings.Builder
	var plain []string
	for _, r := range q.Ignored {
		if res, sub, ok := strings.Cut(r, "/"); ok {
			ignore.WriteString(" AND NOT (e.resource = ? AND e.subresource = ?)")
			args = append(args, res, sub)
		} else {
			plain = append(plain, r)
		}
	}
	if len(plain) > 0 {
		ignore.WriteString(" AND e.resource NOT IN (" + placeholders(len(plain)) + ")")
		for _, r := range plain {
			args = append(args, r)
		}
	}
	// Bodies are read from their blocks here, not through the view: rows
	// come in the order they were stored, so consecutive rows share a
	// block, decompressed once (blockReader).
	bodies := "0"
	if len(q.Bodies) > 0 {
		bodies = "e.resource IN (" + placeholders(len(q.Bodies)) + ")"
		bargs := make([]any, len(q.Bodies))
		for i, r := range q.Bodies {
			bargs[i] = r
		}
		args = append(bargs, args...)
	}
	query := `SELECT e.id, e.audit_id, e.verb, e.api_group, e.resource,
		e.subresource, e.namespace, e.name, e.uid, e.resource_version, e.username, e.user_agent, COALESCE(e.code, 0),
		e.received_ns, e.stage_ns, COALESCE(e.cpid, ''), e.cpid_ancestors, COALESCE(e.traceparent, ''), e.owner_refs,
		CASE WHEN instr(e.annotations, 'apiserver.latency.k8s.io/') > 0 THEN e.annotations END,
		` + bodies + `, r.block_id, r.offset, r.request_len, r.response_len, e.file_id
		FROM audit_events e LEFT JOIN audit_body_refs r ON r.event_id = e.id
		WHERE e.received_ns > ? AND e.id <= ? AND e.cluster = ? AND ` + writeTerms("e") + ignore.String() + `
		ORDER BY e.received_ns, e.id`
	if s.native {
		return s.scanWritesC(ctx, query, args, fn)
	}
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	paths, err := s.filePaths(ctx)
	if err != nil {
		return err
	}
	var slab []cpid.WriteEvent
	var owners, latency sql.RawBytes
	blocks := s.blockReader()
	for rows.Next() {
		var anc sql.NullString
		var fileID int64
		var wantResp bool
		var block, off, reqLen, respLen sql.NullInt64
		if len(slab) == 0 {
			slab = make([]cpid.WriteEvent, 256)
		}
		e := &slab[0]
		slab = slab[1:]
		if err := rows.Scan(&e.ID, &e.AuditID, &e.Verb, &e.APIGroup, &e.Resource, &e.Subresource,
			&e.Namespace, &e.Name, &e.UID, &e.ResourceVersion, &e.Username, &e.UserAgent, &e.Code, &e.ReceivedNS,
			&e.StageNS, &e.CPID, &anc, &e.Traceparent, &owners, &latency, &wantResp, &block, &off, &reqLen, &respLen, &fileID); err != nil {
			return err
		}
		e.File = paths[fileID]
		if anc.Valid {
			e.Ancestors = json.RawMessage(anc.String)
		}
		if len(owners) > 0 {
			e.OwnerRefs = bytes.Clone(owners)
		}
		if len(latency) > 0 {
			e.Latency = bytes.Clone(latency)
		}
		if block.Valid && (reqLen.Valid || wantResp && respLen.Valid) {
			lens := [3]int64{-1, -1, -1}
			if reqLen.Valid {
				lens[0] = reqLen.Int64
			}
			if respLen.Valid {
				lens[1] = respLen.Int64
			}
			if err := attachBodies(ctx, blocks, e, block.Int64, off.Int64, lens, wantResp); err != nil {
				return err
			}
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return rows.Err()
}

// scanThrottles is ScanEvidence of the throttle log lines.
func (s *Store) scanThrottles(ctx context.Context, q cpid.EvidenceScan, fn func(cpid.Evidence) error) error {
	at := q.AtNS
	if at == 0 {
		at = math.MaxInt64
	}
	rows, err := s.r.QueryContext(ctx, `SELECT l.ts_ns, COALESCE(l.fields ->> '$.verb', ''), COALESCE(l.fields ->> '$.URL', ''),
		  COALESCE(l.fields ->> '$.delay', ''), f.path
		FROM log_records l JOIN files f ON f.id = l.file_id
		WHERE l.ts_ns > ? AND l.ts_ns <= ? AND l.id <= ? AND l.cluster = ? AND l.msg = ?
		ORDER BY l.ts_ns, l.id`, q.AfterNS, at, q.UpToLogID, s.own(), q.ThrottleMsg)
	if err != nil {
		return fmt.Errorf("scan evidence: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		ev := cpid.Evidence{Kind: "throttle"}
		if err := rows.Scan(&ev.AtNS, &ev.Verb, &ev.URL, &ev.Delay, &ev.File); err != nil {
			return err
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	return rows.Err()
}

// filePaths maps files.id to files.path.
func (s *Store) filePaths(ctx context.Context) (map[int64]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, path FROM files`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var path string
		if err := rows.Scan(&id, &path); err != nil {
			return nil, err
		}
		out[id] = path
	}
	return out, rows.Err()
}

// ScanLogs calls fn for the log records with afterID < id <= upToID whose
// message is one of msgs, in id order (cpid.DerivedStore).
func (s *Store) ScanLogs(ctx context.Context, afterID, upToID int64, msgs []string, fn func(cpid.LogEntry) error) error {
	args := []any{afterID, upToID, s.own()}
	for _, m := range msgs {
		args = append(args, m)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, ts_ns, msg, fields FROM log_records
		WHERE id > ? AND id <= ? AND cluster = ? AND msg IN (`+placeholders(len(msgs))+`) ORDER BY id`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r cpid.LogEntry
		if err := rows.Scan(&r.ID, &r.TimeNS, &r.Msg, &r.Fields); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// ScanMergelogs calls fn for every stored mergelog that is final at the
// cutoff (from a log, or from a write received up to it), oldest first, to
// rebuild the merge graph.
func (s *Store) ScanMergelogs(ctx context.Context, cutoffNS int64, fn func(cpid.Mergelog) error) error {
	rows, err := s.r.QueryContext(ctx, `SELECT m.id, m.cpid, m.ts_ns, m.service, m.origin, COALESCE(s.source_cpid, '')
		FROM mergelogs m LEFT JOIN mergelog_sources s ON s.mergelog_id = m.id
		LEFT JOIN audit_events e ON e.id = m.event_id
		WHERE +m.cluster = ? AND (m.event_id IS NULL OR e.received_ns <= ?)
		ORDER BY m.id, s.pos`, s.own(), cutoffNS) // +: in the table's order, not sorted again
	if err != nil {
		return err
	}
	defer rows.Close()
	var mr cpid.MergelogRows
	for rows.Next() {
		var id int64
		var m cpid.Mergelog
		var src string
		if err := rows.Scan(&id, &m.CPID, &m.TimeNS, &m.Service, &m.Origin, &src); err != nil {
			return err
		}
		if done, ok := mr.Add(id, m, src); ok {
			if err := fn(done); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if last, ok := mr.Last(); ok {
		return fn(last)
	}
	return nil
}

// deleteProvisional deletes what was derived in cluster from writes

// provisionalSQL deletes what a run derived from the writes received
// after a time. The derived rows name writes only (the engine reads
// nothing else), so the writes received after it are found down the
// writes' index (writeTerms): without its terms the subquery reads every
// event of the table, run after run. Their mergelogs are found by event
// (mergelogs_event, migration 0017); the unary + keeps SQLite off
// mergelogs_cpid_origin, whose cluster would read every mergelog.
var provisionalSQL = []string{
	`DELETE FROM revisions WHERE stage_ns > ?1 AND cluster = ?2 AND event_id IN (` + writesAfterSQL + `)`,
	`DELETE FROM mergelog_sources WHERE mergelog_id IN (SELECT id FROM mergelogs WHERE +cluster = ?2
	   AND event_id IN (` + writesAfterSQL + `))`,
	`DELETE FROM mergelogs WHERE +cluster = ?2 AND event_id IN (` + writesAfterSQL + `)`,
	deleteTermsSQL + `(SELECT rowid FROM changes WHERE started_ns > ?1 AND cluster = ?2)`,
	`DELETE FROM changes WHERE started_ns > ?1 AND cluster = ?2`,
	`DELETE FROM anomalies WHERE cluster = ?2 AND event_id IN (` + writesAfterSQL + `)`,
}

// writesAfterSQL is the ids of the writes of cluster ?2 received after
// ?1 (audit_events_writes: by cluster, then time).
var writesAfterSQL = `SELECT id FROM audit_events WHERE received_ns > ?1 AND ` + writeTerms("") + ` AND cluster = ?2`

// received after ns.
func deleteProvisional(ctx context.Context, tx *sql.Tx, cluster string, ns int64) error {
	for _, q := range provisionalSQL {
		if _, err := tx.ExecContext(ctx, q, ns, cluster); err != nil {
			return err
		}
	}
	return nil
}

func nullInt64(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}

// nullInt64If is n, or NULL when ok is false.
func nullInt64If(ok bool, n int64) any {
	if !ok {
		return nil
	}
	return n
}

// DeleteMergelogs deletes the mergelogs of cpids and their edges, in one
// transaction (cpid.DerivedStore). Revisions keep their CPID.
func (s *Store) DeleteMergelogs(ctx context.Context, cpids []string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM mergelog_sources WHERE mergelog_id IN (SELECT id FROM mergelogs WHERE cpid = ?1 AND cluster = ?2)`,
			`DELETE FROM mergelog_sources WHERE source_cpid = ?1 AND mergelog_id IN (SELECT id FROM mergelogs WHERE cluster = ?2)`,
			`DELETE FROM mergelogs WHERE cpid = ?1 AND cluster = ?2`,
		} {
			st, err := tx.PrepareContext(ctx, q)
			if err != nil {
				return err
			}
			for _, c := range cpids {
				if _, err := st.ExecContext(ctx, c, s.own()); err != nil {
					st.Close()
					return err
				}
			}
			st.Close()
		}
		return nil
	})
}

// NewestMergelog returns the time of the newest mergelog, 0 when none.
func (s *Store) NewestMergelog(ctx context.Context) (int64, error) {
	var ns int64
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(max(ts_ns), 0) FROM mergelogs WHERE ?1 = '' OR cluster = ?1`, s.cluster).Scan(&ns)
	return ns, err
}

// ScanEvidence calls fn for the informer starts and leader election lease
// writes q selects (cpid.DerivedStore), in time order.
func (s *Store) ScanEvidence(ctx context.Context, q cpid.EvidenceScan, fn func(cpid.Evidence) error) error {
	if q.Throttles {
		return s.scanThrottles(ctx, q, fn)
	}
	var marks []string
	at := q.AtNS
	if at == 0 {
		at = math.MaxInt64
	}
	args := []any{q.AfterNS, at, q.UpToID, s.own(), q.Program}
	for _, m := range q.StartMarkers {
		marks = append(marks, "instr(e.request_uri, ?) > 0")
		args = append(args, m)
	}
	if len(marks) == 0 {
		marks = []string{"0"}
	}
	args = append(args, q.AfterNS, at, q.UpToID, s.own(), q.LeaseNamespace)
	for _, l := range q.Leases {
		args = append(args, l)
	}
	leases := "NULL"
	if len(q.Leases) > 0 {
		leases = placeholders(len(q.Leases))
	}
	args = append(args, q.AfterNS, at, q.UpToLogID, s.own())
	for _, m := range q.AcquiredMsgs {
		args = append(args, m)
	}
	acquired := "NULL"
	if len(q.AcquiredMsgs) > 0 {
		acquired = placeholders(len(q.AcquiredMsgs))
	}
	query := `SELECT 'start', e.received_ns, e.user_agent, e.resource, '', '', COALESCE(e.code, 0), ''
		FROM audit_events e WHERE e.received_ns > ? AND e.received_ns <= ? AND e.id <= ? AND e.cluster = ?
		  AND e.verb IN ('list', 'watch') AND e.stage IN ('ResponseStarted', 'ResponseComplete')
		  AND instr(e.user_agent, ?) = 1 AND (` + strings.Join(marks, " OR ") + `)
		UNION ALL
		SELECT 'lease', e.stage_ns, e.user_agent, e.resource, e.name, COALESCE(b.response_object ->> '$.spec.holderIdentity', ''), COALESCE(e.code, 0), ''
		FROM audit_events e LEFT JOIN audit_bodies b ON b.event_id = e.id
		WHERE e.received_ns > ? AND e.received_ns <= ? AND e.id <= ? AND e.cluster = ? AND ` + writeTerms("e") + `
		  AND e.resource = 'leases' AND e.namespace = ? AND e.name IN (` + leases + `)
		UNION ALL
		SELECT 'acquired', l.ts_ns, '', '', COALESCE(l.fields ->> '$.lock', ''), l.msg, 0, f.path
		FROM log_records l JOIN files f ON f.id = l.file_id
		WHERE l.ts_ns > ? AND l.ts_ns <= ? AND l.id <= ? AND l.cluster = ? AND l.msg IN (` + acquired + `)
		ORDER BY 2`
	if s.native {
		// By the batch in C: a busy bundle's initial lists are hundreds
		// of thousands of rows (1M synthetic events: 180,000, read in
		// 1.0-1.4 s of the engine's time row by row).
		in := interner{}
		err := scanC(ctx, s.r, query, args, func(b *rows) error {
			for r := range b.len() {
				v := b.vals[r*b.ncol : (r+1)*b.ncol : (r+1)*b.ncol]
				if len(v) != 8 {
					return errColumns
				}
				ev := cpid.Evidence{Kind: in.of(b.bytesAt(v[0])), AtNS: v[1].i, UserAgent: in.of(b.bytesAt(v[2])),
					Resource: in.of(b.bytesAt(v[3])), Lease: in.of(b.bytesAt(v[4])), Holder: in.of(b.bytesAt(v[5])),
					Code: int(v[6].i), File: in.of(b.bytesAt(v[7]))}
				if err := fn(ev); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("scan evidence: %w", err)
		}
		return nil
	}
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("scan evidence: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ev cpid.Evidence
		if err := rows.Scan(&ev.Kind, &ev.AtNS, &ev.UserAgent, &ev.Resource, &ev.Lease, &ev.Holder, &ev.Code, &ev.File); err != nil {
			return err
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	return rows.Err()
}
