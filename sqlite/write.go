package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/blocks"
)

const insertAudit = `INSERT OR IGNORE INTO audit_events(
	hash, audit_id, stage, level, verb, request_uri, api_group, api_version, resource, subresource,
	namespace, name, uid, resource_version, username, user_agent, source_ips, code, received_ns, stage_ns,
	cpid, cpid_ancestors, owner_refs, annotations, redacted, file_id, line, cluster, traceparent)
VALUES (?,?,?,?,?,?,?,?,?,?, ?,?,?,?,?,?,?,?,?,?, ?,?,?,?,?,?,?,?,?)`

// auditColumns is the number of values insertAudit takes.
const auditColumns = 29

const insertLog = `INSERT OR IGNORE INTO log_records(hash, ts_ns, level, component, msg, cpid, fields, file_id, line, cluster)
VALUES (?,?,?,?,?,?,?,?,?,?)`

// logColumns is the number of values insertLog takes.
const logColumns = 10

// upsertCheckpoint sets a tailed source's position and adds its counters.
const upsertCheckpoint = `INSERT INTO tail_checkpoints(cluster, source, file, fingerprint, fingerprint_len, offset, line,
	device, inode, lines, records, dups, bad, possible_loss, newest_ns, committed_ns)
VALUES (?,?,?,?,?,?,?, ?,?,?,?,?,?,?,?,?)
ON CONFLICT(cluster, source) DO UPDATE SET file = excluded.file, fingerprint = excluded.fingerprint,
	fingerprint_len = excluded.fingerprint_len, offset = excluded.offset, line = excluded.line,
	device = excluded.device, inode = excluded.inode,
	lines = lines + excluded.lines, records = records + excluded.records, dups = dups + excluded.dups,
	bad = bad + excluded.bad, possible_loss = possible_loss + excluded.possible_loss,
	newest_ns = max(newest_ns, excluded.newest_ns), committed_ns = excluded.committed_ns`

// Write stores a batch in one transaction (cpid.RecordWriter). Records
// whose hash is already stored are skipped and counted as duplicates, so
// writing the same batch twice changes nothing. It is safe for concurrent
// use: transactions queue for the one writer connection. Records go to the
// view's cluster (cpid.DefaultCluster for a view of every cluster). The
// batch's checkpoints are stored in the same transaction, with the
// duplicates among the records each covers.
func (s *Store) Write(ctx context.Context, b *cpid.Batch) (cpid.Written, error) {
	var res cpid.Written
	newFiles := map[string]int64{}
	ownA, ownL, err := b.Owners()
	if err != nil {
		return res, err
	}
	dups := make([]int, len(b.Checkpoints))
	// The statements run without the caller's context: the driver watches
	// a cancelable one with a goroutine per statement, which costs more
	// than an insert. A batch is short; the transaction still ends with ctx.
	stmtCtx := context.WithoutCancel(ctx)
	cluster := s.own()
	afterCommit := func() {}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		fileID := func(path string) (int64, error) {
			key := cluster + "\x00" + path
			s.mu.Lock()
			id, ok := s.fileIDs[key]
			s.mu.Unlock()
			if ok {
				return id, nil
			}
			if id, ok := newFiles[key]; ok {
				return id, nil
			}
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO files(path, cluster) VALUES (?, ?)`, path, cluster); err != nil {
				return 0, err
			}
			if err := tx.QueryRowContext(ctx, `SELECT id FROM files WHERE cluster = ? AND path = ?`, cluster, path).Scan(&id); err != nil {
				return 0, err
			}
			newFiles[key] = id
			return id, nil
		}
		if len(b.Audits) > 0 {
			r := newRows(auditColumns)
			defer r.put()
			for i := range b.Audits {
				a := &b.Audits[i]
				fid, err := fileID(a.File)
				if err != nil {
					return err
				}
				r.blob(a.Hash[:])
				r.text(a.AuditID)
				r.text(a.Stage)
				r.text(a.Level)
				r.text(a.Verb)
				r.text(a.RequestURI)
				r.text(a.APIGroup)
				r.text(a.APIVersion)
				r.text(a.Resource)
				r.text(a.Subresource)
				r.text(a.Namespace)
				r.text(a.Name)
				r.text(a.UID)
				r.text(a.ResourceVersion)
				r.text(a.Username)
				r.text(a.UserAgent)
				r.jsonStrings(a.SourceIPs)
				r.intOrNull(int64(a.Code))
				r.int(a.ReceivedNS)
				r.int(a.StageNS)
				r.textOrNull(a.CPID)
				r.jsonStrings(a.CPIDAncestors)
				r.jsonText(a.OwnerRefs)
				r.jsonText(a.Annotations)
				r.int(boolInt(a.Redacted))
				r.int(fid)
				r.int(int64(a.Line))
				r.text(cluster)
				r.textOrNull(a.Traceparent)
			}
			ids := make([]int64, len(b.Audits))
			if err := execRows(stmtCtx, tx, s.batch, insertAudit, r, ids); err != nil {
				var re *rowError
				if errors.As(err, &re) {
					return fmt.Errorf("insert audit event %s: %w", b.Audits[re.row].Pos, re.err)
				}
				return err
			}
			var bodies []blocks.Body
			for i, id := range ids {
				a := &b.Audits[i]
				if id == 0 {
					res.AuditDups++
					if ownA != nil {
						dups[ownA[i]]++
					}
					continue
				}
				res.Audits++
				if a.RequestObject == nil && a.ResponseObject == nil && a.ResponseStatus == nil {
					continue
				}
				bodies = append(bodies, blocks.NewBody(id, a.Verb, a.RequestObject, a.ResponseObject, a.ResponseStatus))
			}
			if afterCommit, err = s.bodies.Write(stmtCtx, blockTx{tx, s.batch}, cluster, bodies); err != nil {
				return err
			}
		}
		if len(b.Logs) > 0 {
			r := newRows(logColumns)
			defer r.put()
			for i := range b.Logs {
				l := &b.Logs[i]
				fid, err := fileID(l.File)
				if err != nil {
					return err
				}
				r.blob(l.Hash[:])
				r.int(l.TimeNS)
				r.text(l.Level)
				r.text(l.Component)
				r.text(l.Msg)
				r.textOrNull(l.CPID)
				r.jsonText(l.Fields)
				r.int(fid)
				r.int(int64(l.Line))
				r.text(cluster)
			}
			ids := make([]int64, len(b.Logs))
			if err := execRows(stmtCtx, tx, s.batch, insertLog, r, ids); err != nil {
				var re *rowError
				if errors.As(err, &re) {
					return fmt.Errorf("insert log record %s: %w", b.Logs[re.row].Pos, re.err)
				}
				return err
			}
			for i, id := range ids {
				if id != 0 {
					res.Logs++
					continue
				}
				res.LogDups++
				if ownL != nil {
					dups[ownL[i]]++
				}
			}
		}
		return writeCheckpoints(ctx, tx, cluster, b.Checkpoints, dups)
	})
	if err != nil {
		s.bodies.Forget(cluster)
		return cpid.Written{}, err
	}
	afterCommit()
	s.mu.Lock()
	for p, id := range newFiles {
		s.fileIDs[p] = id
	}
	s.mu.Unlock()
	return res, nil
}

// writeCheckpoints stores the tailer's positions and adds its counters.
func writeCheckpoints(ctx context.Context, tx *sql.Tx, cluster string, cks []cpid.Checkpoint, dups []int) error {
	if len(cks) == 0 {
		return nil
	}
	now := time.Now().UnixNano()
	for i, c := range cks {
		_, err := tx.ExecContext(ctx, upsertCheckpoint, cluster, c.Source, c.File, c.Fingerprint[:], c.FingerprintLen,
			c.Offset, c.Line, int64(c.Device), int64(c.Inode), c.Lines, c.Audits+c.Logs-dups[i], dups[i],
			c.Bad, c.PossibleLoss, c.NewestNS, now)
		if err != nil {
			return fmt.Errorf("store checkpoint of %s: %w", c.Source, err)
		}
	}
	return nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
