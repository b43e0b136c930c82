package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/blocks"
)

var _ cpid.DerivedStore = (*Store)(nil)

// writeTerms select the writes among audit events; they repeat the WHERE of
// the partial index audit_events_writes. eWriteTerms are the same of the
// events aliased e.
const writeTerms = `stage IN ('ResponseComplete', 'Panic') AND verb IN ('create', 'update', 'patch', 'delete', 'deletecollection')`

var eWriteTerms = "e." + strings.ReplaceAll(writeTerms, " AND verb", " AND e.verb")

// Watermark reads where the last reconstruct of the view's cluster stopped
// (cpid.DerivedStore).
func (s *Store) Watermark(ctx context.Context) (cpid.Watermark, error) {
	var w cpid.Watermark
	rows, err := s.pool.Query(ctx, `SELECT key, value FROM reconstruct_state WHERE cluster = $1`, s.own())
	if err != nil {
		return w, err
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return w, err
		}
		if err := w.Set(k, v); err != nil {
			return w, err
		}
	}
	return w, rows.Err()
}

// LastIDs returns the highest audit event and log record ids of the view's
// cluster (cpid.DerivedStore).
func (s *Store) LastIDs(ctx context.Context) (event, log int64, err error) {
	err = s.pool.QueryRow(ctx, `SELECT
		COALESCE((SELECT max(id) FROM audit_events WHERE cluster = $1), 0),
		COALESCE((SELECT max(id) FROM log_records WHERE cluster = $1), 0)`, s.own()).Scan(&event, &log)
	return
}

// Late counts what was stored after the watermark and belongs before its
// cutoff (cpid.DerivedStore).
func (s *Store) Late(ctx context.Context, w cpid.Watermark, msg string) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, lateSQL, w.EventID, w.CutoffNS, w.LogID, msg, s.own()).Scan(&n)
	return n, err
}

// lateSQL counts the writes and log lines of a cluster ($5) stored after
// the ids $1 and $3 and received before the cutoff $2.
const lateSQL = `SELECT
	(SELECT count(*) FROM audit_events WHERE id > $1 AND received_ns <= $2 AND ` + writeTerms + ` AND cluster = $5) +
	(SELECT count(*) FROM log_records WHERE id > $3 AND ts_ns <= $2 AND msg = $4 AND cluster = $5)`

// LatestWrite returns the latest receive time of a write with id at most
// upToID (cpid.DerivedStore).
func (s *Store) LatestWrite(ctx context.Context, upToID int64) (int64, error) {
	var ns int64
	err := s.pool.QueryRow(ctx, latestWriteSQL, upToID, s.own()).Scan(&ns)
	return ns, err
}

// latestWriteSQL is the newest write of a cluster ($2) with id at most $1:
// down audit_events_writes from the cluster's newest (migration 0020).
const latestWriteSQL = `SELECT COALESCE(max(received_ns), 0) FROM audit_events
	WHERE id <= $1 AND ` + writeTerms + ` AND cluster = $2`

// ScanWrites calls fn for the writes q selects, in the order the apiserver
// received them, then id (cpid.DerivedStore). Bodies are cut from their
// blocks here, not through the view audit_bodies: the view detoasts the
// whole compressed block for each body it cuts (a block holds a hundred
// bodies or more), where consecutive writes share a block, fetched once
// (blockCache).
func (s *Store) ScanWrites(ctx context.Context, q cpid.WriteScan, fn func(*cpid.WriteEvent) error) error {
	var plain, pairs []string
	for _, r := range q.Ignored {
		if _, _, ok := strings.Cut(r, "/"); ok {
			pairs = append(pairs, r)
		} else {
			plain = append(plain, r)
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT e.id, e.audit_id, e.verb, e.api_group, e.resource, e.subresource,
		e.namespace, e.name, e.uid, e.resource_version, e.username, e.user_agent, COALESCE(e.code, 0),
		e.received_ns, e.stage_ns, COALESCE(e.cpid, ''), e.cpid_ancestors, COALESCE(e.traceparent, ''), e.owner_refs,
		CASE WHEN strpos(e.annotations, 'apiserver.latency.k8s.io/') > 0 THEN e.annotations END,
		e.resource = ANY($6), r.block_id, r."offset", r.request_len, r.response_len, f.path
		FROM audit_events e LEFT JOIN audit_body_refs r ON r.event_id = e.id JOIN files f ON f.id = e.file_id
		WHERE e.received_ns > $1 AND e.id <= $2 AND e.cluster = $3
		  AND e.stage IN ('ResponseComplete', 'Panic') AND e.verb IN ('create', 'update', 'patch', 'delete', 'deletecollection')
		  AND NOT e.resource = ANY($4) AND NOT (e.resource || '/' || e.subresource) = ANY($5)
		ORDER BY e.received_ns, e.id`, q.AfterNS, q.UpToID, s.own(), plain, pairs, q.Bodies)
	if err != nil {
		return err
	}
	defer rows.Close()
	var bc blockCache
	for rows.Next() {
		e := new(cpid.WriteEvent)
		var anc, owners, latency *string
		var wantResp bool
		var block, off, reqLen, respLen *int64
		if err := rows.Scan(&e.ID, &e.AuditID, &e.Verb, &e.APIGroup, &e.Resource, &e.Subresource,
			&e.Namespace, &e.Name, &e.UID, &e.ResourceVersion, &e.Username, &e.UserAgent, &e.Code, &e.ReceivedNS,
			&e.StageNS, &e.CPID, &anc, &e.Traceparent, &owners, &latency, &wantResp, &block, &off, &reqLen, &respLen,
			&e.File); err != nil {
			return err
		}
		e.Ancestors, e.OwnerRefs, e.Latency = raw(anc), raw(owners), raw(latency)
		if block != nil && (reqLen != nil || wantResp && respLen != nil) {
			data, err := bc.get(ctx, s.pool, *block)
			if err != nil {
				return err
			}
			lens := [3]int64{-1, -1, -1}
			if reqLen != nil {
				lens[0] = *reqLen
			}
			if respLen != nil {
				lens[1] = *respLen
			}
			// Copies: an event outlives the block's place in the cache.
			if b := blocks.Part(data, *off, lens, 0); len(b) > 0 {
				e.Request = bytes.Clone(b)
			}
			if b := blocks.Part(data, *off, lens, 1); wantResp && len(b) > 0 {
				e.Response = bytes.Clone(b)
			}
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return rows.Err()
}

// blockCache holds the last few body blocks a scan read: the writes come
// in receive order, close to the order their bodies were packed, so
// consecutive writes mostly share a block.
type blockCache struct {
	ids  [4]int64
	data [4][]byte
	next int
}

// get returns the content of block id, read from the database (on a
// connection of the pool, beside the scan's) when it is not cached.
func (c *blockCache) get(ctx context.Context, pool *pgxpool.Pool, id int64) ([]byte, error) {
	for i, x := range c.ids {
		if x == id && c.data[i] != nil {
			return c.data[i], nil
		}
	}
	var data []byte
	if err := pool.QueryRow(ctx, `SELECT data FROM body_blocks WHERE id = $1`, id).Scan(&data); err != nil {
		return nil, fmt.Errorf("read body block %d: %w", id, err)
	}
	c.ids[c.next], c.data[c.next] = id, data
	c.next = (c.next + 1) % len(c.ids)
	return data, nil
}

func raw(s *string) json.RawMessage {
	if s == nil || *s == "" {
		return nil
	}
	return json.RawMessage(*s)
}

// ScanLogs calls fn for the log records of the view's cluster with
// afterID < id <= upToID whose message is one of msgs (cpid.DerivedStore).
func (s *Store) ScanLogs(ctx context.Context, afterID, upToID int64, msgs []string, fn func(cpid.LogEntry) error) error {
	rows, err := s.pool.Query(ctx, `SELECT id, ts_ns, msg, fields FROM log_records
		WHERE id > $1 AND id <= $2 AND cluster = $3 AND msg = ANY($4) ORDER BY id`, afterID, upToID, s.own(), msgs)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r cpid.LogEntry
		var fields string
		if err := rows.Scan(&r.ID, &r.TimeNS, &r.Msg, &fields); err != nil {
			return err
		}
		r.Fields = []byte(fields)
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// ScanMergelogs calls fn for every mergelog of the view's cluster that is
// final at the cutoff, oldest first (cpid.DerivedStore).
func (s *Store) ScanMergelogs(ctx context.Context, cutoffNS int64, fn func(cpid.Mergelog) error) error {
	rows, err := s.pool.Query(ctx, `SELECT m.id, m.cpid, m.ts_ns, m.service, m.origin, COALESCE(x.source_cpid, '')
		FROM mergelogs m LEFT JOIN mergelog_sources x ON x.mergelog_id = m.id
		LEFT JOIN audit_events e ON e.id = m.event_id
		WHERE m.cluster = $1 AND (m.event_id IS NULL OR e.received_ns <= $2)
		ORDER BY m.id, x.pos`, s.own(), cutoffNS)
	if err != nil {
		return err
	}
	var mr cpid.MergelogRows
	var id int64
	var m cpid.Mergelog
	var origin, src string
	_, err = pgx.ForEachRow(rows, []any{&id, &m.CPID, &m.TimeNS, &m.Service, &origin, &src}, func() error {
		m.Origin = cpid.Origin(origin)
		if done, ok := mr.Add(id, m, src); ok {
			return fn(done)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if last, ok := mr.Last(); ok {
		return fn(last)
	}
	return nil
}

// DeleteMergelogs deletes the mergelogs of cpids in the view's cluster and
// their edges, in one transaction (cpid.DerivedStore).
func (s *Store) DeleteMergelogs(ctx context.Context, cpids []string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, q := range []string{
			`DELETE FROM mergelog_sources WHERE mergelog_id IN (SELECT id FROM mergelogs WHERE cpid = ANY($1) AND cluster = $2)`,
			`DELETE FROM mergelog_sources WHERE source_cpid = ANY($1) AND mergelog_id IN (SELECT id FROM mergelogs WHERE cluster = $2)`,
			`DELETE FROM mergelogs WHERE cpid = ANY($1) AND cluster = $2`,
		} {
			if _, err := tx.Exec(ctx, q, cpids, s.own()); err != nil {
				return err
			}
		}
		return nil
	})
}

// Derive opens the store of a reconstruct run (cpid.DerivedStore). The
// indexes stay in every mode: PostgreSQL loads into indexed tables well,
// and other clusters' readers keep them.
func (s *Store) Derive(ctx context.Context, m cpid.DeriveMode) (cpid.DeriveTx, error) {
	return &deriveTx{s: s, cluster: s.own(), reset: m.Full, redoNS: m.RedoNS}, nil
}

// deriveTx stores a reconstruct run (cpid.DeriveTx), in one transaction or
// in the steps the run asks for. The first transaction first deletes what
// the run replaces.
type deriveTx struct {
	s       *Store
	cluster string
	reset   bool
	redoNS  int64
	tx      pgx.Tx
	cleared bool
}

func (d *deriveTx) begin(ctx context.Context) error {
	if d.tx != nil {
		return nil
	}
	tx, err := d.s.pool.Begin(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	d.tx = tx
	if d.cleared {
		return nil
	}
	var qs []string
	if d.reset {
		qs = resetSQL
	} else {
		qs = redoSQL
	}
	// stale are the changes whose writes an incremental run deletes
	// (redoSQL's first statement gives them): their postings are stored
	// again from the writes they keep, whether the run gives them writes
	// again (Summarize stores them once more) or not.
	var stale []string
	for i, q := range qs {
		args := []any{d.cluster}
		if strings.Contains(q, "$2") {
			args = append(args, d.redoNS)
		}
		var err error
		if !d.reset && i == 0 {
			err = tx.QueryRow(ctx, q, args...).Scan(&stale)
		} else {
			_, err = tx.Exec(ctx, q, args...)
		}
		if err != nil {
			d.Abort()
			return err
		}
	}
	if err := refreshTerms(ctx, tx, stale); err != nil {
		d.Abort()
		return err
	}
	d.cleared = true
	return nil
}

// Save stores rows (cpid.DeriveTx).
func (d *deriveTx) Save(ctx context.Context, out *cpid.Derived) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := d.begin(ctx); err != nil {
		return err
	}
	if d.reset {
		// A full rebuild cleared the cluster's revisions first: every row
		// is new, so they go in with COPY, the bulk path.
		rows := make([][]any, len(out.Writes))
		for i := range out.Writes {
			rows[i] = revisionRow(&out.Writes[i], d.cluster)
		}
		if _, err := d.tx.CopyFrom(ctx, pgx.Identifier{"revisions"}, revisionColumns, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("copy revisions: %w", err)
		}
	} else if len(out.Writes) > 0 {
		if err := upsertRevisions(ctx, d.tx, out.Writes, d.cluster); err != nil {
			return err
		}
	}
	if len(out.Changes) > 0 {
		if err := upsertChanges(ctx, d.tx, out.Changes); err != nil {
			return err
		}
	}
	var b pgx.Batch
	for _, a := range out.Anomalies {
		b.Queue(`INSERT INTO anomalies(kind, event_id, api_group, resource, namespace, name, detail, cluster)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8) ON CONFLICT (kind, event_id) DO NOTHING`,
			a.Kind, a.EventID, a.Key.Group, a.Key.Resource, a.Key.Namespace, a.Key.Name, a.Detail, d.cluster)
	}
	for _, x := range out.Spans {
		b.Queue(`INSERT INTO controller_spans(span_id, parent_id, cpid, service, name, start_ns, end_ns, attrs, log_id, cluster)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10) ON CONFLICT (span_id) DO NOTHING`,
			x.SpanID, x.ParentID, x.CPID, x.Service, x.Name, x.StartNS, x.EndNS, cpid.JSONText(x.Attrs), x.LogID, d.cluster)
	}
	if b.Len() > 0 {
		if err := d.tx.SendBatch(ctx, &b).Close(); err != nil {
			return err
		}
	}
	if len(out.Mergelogs) > 0 {
		if err := insertMergelogs(ctx, d.tx, out.Mergelogs, d.cluster); err != nil {
			return err
		}
	}
	return d.saveObjects(ctx, out.Objects)
}

// Step commits what is stored so far (cpid.DeriveTx).
func (d *deriveTx) Step(ctx context.Context) error {
	if d.tx == nil {
		return nil
	}
	err := d.tx.Commit(context.WithoutCancel(ctx))
	d.tx = nil
	return err
}

// Revisions reads back the stored writes of an object (cpid.DeriveTx).
func (d *deriveTx) Revisions(ctx context.Context, k cpid.ObjectKey) ([]cpid.Placed, error) {
	if err := d.begin(ctx); err != nil {
		return nil, err
	}
	rows, err := d.tx.Query(ctx, `SELECT r.event_id, e.resource_version, r.stage_ns, r.seq, r.order_by
		FROM revisions r JOIN audit_events e ON e.id = r.event_id
		WHERE r.api_group = $1 AND r.resource = $2 AND r.namespace = $3 AND r.name = $4 AND r.cluster = $5`,
		k.Group, k.Resource, k.Namespace, k.Name, d.cluster)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (cpid.Placed, error) {
		var p cpid.Placed
		err := r.Scan(&p.EventID, &p.ResourceVersion, &p.StageNS, &p.Seq, &p.OrderBy)
		return p, err
	})
}

// ChangeWrites reads back the stored writes of a change (cpid.DeriveTx).
func (d *deriveTx) ChangeWrites(ctx context.Context, change string) ([]cpid.Write, error) {
	if err := d.begin(ctx); err != nil {
		return nil, err
	}
	rows, err := d.tx.Query(ctx, `SELECT event_id, stage_ns, api_group, resource, namespace, name, attempt <> 0,
		COALESCE(cause_event_id, 0), COALESCE(hop_ns, 0) FROM revisions WHERE change_id = $1`, change)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (cpid.Write, error) {
		w := cpid.Write{ChangeID: change}
		err := r.Scan(&w.EventID, &w.StageNS, &w.Key.Group, &w.Key.Resource, &w.Key.Namespace, &w.Key.Name,
			&w.Attempt, &w.CauseEventID, &w.HopNS)
		return w, err
	})
}

// Renumber sets the places of writes (cpid.DeriveTx).
func (d *deriveTx) Renumber(ctx context.Context, ps []cpid.Placed) error {
	if len(ps) == 0 {
		return nil
	}
	if err := d.begin(ctx); err != nil {
		return err
	}
	return renumber(ctx, d.tx, ps)
}

// Summarize sets the summaries of changes (cpid.DeriveTx); a change that
// settled at 0 keeps its settled time.
func (d *deriveTx) Summarize(ctx context.Context, cs []cpid.ChangeSummary) error {
	if len(cs) == 0 {
		return nil
	}
	if err := d.begin(ctx); err != nil {
		return err
	}
	if err := summarize(ctx, d.tx, cs); err != nil {
		return err
	}
	if d.reset {
		// A full rebuild stores every change's postings at once, at
		// the end (Finish).
		return nil
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return refreshTerms(ctx, d.tx, ids)
}

// Finish stores the watermark and commits (cpid.DeriveTx).
func (d *deriveTx) Finish(ctx context.Context, w cpid.Watermark) error {
	if err := d.begin(ctx); err != nil {
		return err
	}
	for k, v := range w.Fields() {
		// The column is bytea: the numbers as their decimal text.
		if n, ok := v.(int64); ok {
			v = fmt.Append(nil, n)
		}
		if _, err := d.tx.Exec(ctx, `INSERT INTO reconstruct_state(cluster, key, value) VALUES ($1, $2, $3)
			ON CONFLICT (cluster, key) DO UPDATE SET value = excluded.value`, d.cluster, k, v); err != nil {
			return err
		}
	}
	if err := d.saveObjects(ctx, w.Objects); err != nil {
		return fmt.Errorf("save the objects' states: %w", err)
	}
	if d.reset {
		if err := fillTerms(ctx, d.tx, d.cluster); err != nil {
			return err
		}
	}
	if err := d.Step(ctx); err != nil {
		return err
	}
	if d.reset {
		// A full rebuild replaced the cluster's derived rows: their
		// statistics are those of before (none, on a database loaded just
		// now) until autovacuum analyzes them, a minute or more later. On
		// ten million events, right after a load, query sli took 397 ms
		// and the merge DAG's origins 175 ms a key, 18 and 0.6 once
		// analyzed.
		if _, err := d.s.pool.Exec(ctx, analyzeSQL); err != nil {
			return fmt.Errorf("analyze the derived tables: %w", err)
		}
	}
	return nil
}

// analyzeSQL gathers the planner's statistics of the tables a full
// rebuild fills and of the events it read.
const analyzeSQL = `ANALYZE audit_events, revisions, changes, mergelogs, mergelog_sources, cpid_ids, search_terms,
	change_terms, reconstruct_objects, anomalies`

// Abort rolls back what was not committed (cpid.DeriveTx).
func (d *deriveTx) Abort() {
	if d.tx != nil {
		d.tx.Rollback(context.Background())
		d.tx = nil
	}
}

// redoSQL deletes what an incremental run of a cluster ($1) redoes: the
// rows derived from the writes received after the last run's cutoff ($2).
// The first gives the changes of the writes it deletes (begin stores
// their postings again).
var redoSQL = []string{
	`WITH gone AS (DELETE FROM revisions WHERE stage_ns > $2 AND cluster = $1
			AND event_id IN (SELECT id FROM audit_events WHERE received_ns > $2) RETURNING change_id)
		SELECT ARRAY(SELECT DISTINCT change_id FROM gone WHERE change_id IS NOT NULL)`,
	// A mergelog's event is the write that showed it, of its cluster:
	// writeTerms and the cluster let the scan of the events after the
	// cutoff go through audit_events_writes (migration 0020: by cluster,
	// then time), where it read the whole table.
	`DELETE FROM mergelog_sources WHERE mergelog_id IN (SELECT m.id FROM mergelogs m JOIN audit_events e ON e.id = m.event_id
		   WHERE e.received_ns > $2 AND m.cluster = $1 AND e.cluster = $1 AND ` + eWriteTerms + `)`,
	`DELETE FROM mergelogs WHERE cluster = $1 AND event_id IN (SELECT id FROM audit_events WHERE received_ns > $2 AND ` + writeTerms + `
		AND cluster = $1)`,
	fmt.Sprintf(deleteTermsSQL, `started_ns > $2 AND cluster = $1`),
	`DELETE FROM changes WHERE started_ns > $2 AND cluster = $1`,
	`DELETE FROM anomalies WHERE cluster = $1 AND event_id IN (SELECT id FROM audit_events WHERE received_ns > $2)`,
}

// resetSQL deletes everything reconstruct derived and keeps for a cluster
// ($1): a full rebuild's start, and what expiring its records does (the
// derived rows refer to the events).
var resetSQL = []string{
	`DELETE FROM mergelog_sources WHERE mergelog_id IN (SELECT id FROM mergelogs WHERE cluster = $1)`,
	`DELETE FROM mergelogs WHERE cluster = $1`,
	`DELETE FROM revisions WHERE cluster = $1`,
	fmt.Sprintf(deleteTermsSQL, `cluster = $1`),
	`DELETE FROM changes WHERE cluster = $1`,
	`DELETE FROM anomalies WHERE cluster = $1`,
	`DELETE FROM controller_spans WHERE cluster = $1`,
	`DELETE FROM reconstruct_state WHERE cluster = $1`,
	`DELETE FROM reconstruct_objects WHERE cluster = $1`,
}

// ScanEvidence calls fn for the informer starts and leader election lease
// writes q selects (cpid.DerivedStore), in time order.
func (s *Store) ScanEvidence(ctx context.Context, q cpid.EvidenceScan, fn func(cpid.Evidence) error) error {
	if q.Throttles {
		return s.scanThrottles(ctx, q, fn)
	}
	marks := q.StartMarkers
	if marks == nil {
		marks = []string{}
	}
	leases := q.Leases
	if leases == nil {
		leases = []string{}
	}
	at := q.AtNS
	if at == 0 {
		at = math.MaxInt64
	}
	acquired := q.AcquiredMsgs
	if acquired == nil {
		acquired = []string{}
	}
	rows, err := s.pool.Query(ctx, evidenceSQL, q.AfterNS, q.UpToID, s.own(), marks, q.LeaseNamespace, leases, at, q.Program,
		q.UpToLogID, acquired)
	if err != nil {
		return fmt.Errorf("scan evidence: %w", err)
	}
	var ev cpid.Evidence
	_, err = pgx.ForEachRow(rows, []any{&ev.Kind, &ev.AtNS, &ev.UserAgent, &ev.Resource, &ev.Lease, &ev.Holder, &ev.Code, &ev.File}, func() error {
		return fn(ev)
	})
	return err
}

// evidenceSQL reads a cluster's ($3) evidence received in ($1, $7], up to
// the ids $2 and $9: its programs' initial lists and watches (a process
// starting, by audit_events_reads: cluster, then time), its leader
// election leases' writes, and the controllers' "acquired lease" lines.
var evidenceSQL = `SELECT 'start', e.received_ns, e.user_agent, e.resource, '', '', COALESCE(e.code, 0), ''
	FROM audit_events e WHERE e.received_ns > $1 AND e.received_ns <= $7 AND e.id <= $2 AND e.cluster = $3
	  AND e.verb IN ('list', 'watch') AND e.stage IN ('ResponseStarted', 'ResponseComplete')
	  AND strpos(e.user_agent, $8) = 1
	  AND EXISTS (SELECT 1 FROM unnest($4::text[]) m WHERE strpos(e.request_uri, m) > 0)
	UNION ALL
	SELECT 'lease', e.stage_ns, e.user_agent, e.resource, e.name,
	  COALESCE(b.response_object::json -> 'spec' ->> 'holderIdentity', ''), COALESCE(e.code, 0), ''
	FROM audit_events e LEFT JOIN audit_bodies b ON b.event_id = e.id
	WHERE e.received_ns > $1 AND e.received_ns <= $7 AND e.id <= $2 AND e.cluster = $3
	  AND ` + eWriteTerms + `
	  AND e.resource = 'leases' AND e.namespace = $5 AND e.name = ANY($6)
	UNION ALL
	SELECT 'acquired', l.ts_ns, '', '', COALESCE(l.fields::json ->> 'lock', ''), l.msg, 0, f.path
	FROM log_records l JOIN files f ON f.id = l.file_id
	WHERE l.ts_ns > $1 AND l.ts_ns <= $7 AND l.id <= $9 AND l.cluster = $3 AND l.msg = ANY($10)
	ORDER BY 2`

// scanThrottles is ScanEvidence of the throttle log lines.
func (s *Store) scanThrottles(ctx context.Context, q cpid.EvidenceScan, fn func(cpid.Evidence) error) error {
	at := q.AtNS
	if at == 0 {
		at = math.MaxInt64
	}
	rows, err := s.pool.Query(ctx, `SELECT l.ts_ns, COALESCE(l.fields::json ->> 'verb', ''), COALESCE(l.fields::json ->> 'URL', ''),
		  COALESCE(l.fields::json ->> 'delay', ''), f.path
		FROM log_records l JOIN files f ON f.id = l.file_id
		WHERE l.ts_ns > $1 AND l.ts_ns <= $2 AND l.id <= $3 AND l.cluster = $4 AND l.msg = $5
		ORDER BY l.ts_ns, l.id`, q.AfterNS, at, q.UpToLogID, s.own(), q.ThrottleMsg)
	if err != nil {
		return fmt.Errorf("scan evidence: %w", err)
	}
	ev := cpid.Evidence{Kind: "throttle"}
	_, err = pgx.ForEachRow(rows, []any{&ev.AtNS, &ev.Verb, &ev.URL, &ev.Delay, &ev.File}, func() error {
		return fn(ev)
	})
	return err
}

// revisionColumns are the columns of a revision row, in revisionRow's order.
var revisionColumns = []string{"event_id", "api_group", "resource", "namespace", "name", "seq", "order_by", "attempt",
	"stage_ns", "writer", "writer_is_user", "cpid", "cpid_origin", "cause_event_id", "cause_rule", "change_id", "hop_ns",
	"cluster", "explain", "explain_detail", "confidence"}

// revisionRow is a write as a revisions row.
func revisionRow(x *cpid.Write, cluster string) []any {
	var hop any
	if x.CauseEventID != 0 {
		hop = x.HopNS
	}
	return []any{x.EventID, x.Key.Group, x.Key.Resource, x.Key.Namespace, x.Key.Name, int64(x.Seq), x.OrderBy, flag(x.Attempt),
		x.StageNS, x.Writer.Name, flag(x.Writer.User), orNil(x.CPID), orNil(x.CPIDOrigin), orNil(x.CauseEventID),
		orNil(x.Rule), orNil(x.ChangeID), hop, cluster, orNil(string(x.Explain)), orNil(x.ExplainDetail),
		orNil(string(x.Confidence))}
}
