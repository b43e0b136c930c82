package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

// Watermark is where the last reconstruct stopped. Writes received up to
// CutoffNS are final; later ones were processed provisionally and are
// redone by the next run, which goes on from EngineData, the engine's state
// at the cutoff.
type Watermark struct {
	CutoffNS   int64
	EventID    int64 // the last audit_events.id seen
	LogID      int64 // the last log_records.id seen
	HasState   bool
	EngineData []byte
}

// ReconstructWatermark reads where the last reconstruct stopped.
func (s *Store) ReconstructWatermark(ctx context.Context) (Watermark, error) {
	var w Watermark
	rows, err := s.r.QueryContext(ctx, `SELECT key, value FROM reconstruct_state`)
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
		switch k {
		case "event_id":
			w.EventID, _ = v.(int64)
		case "cutoff_ns":
			w.CutoffNS, _ = v.(int64)
		case "log_id":
			w.LogID, _ = v.(int64)
		case "engine":
			w.EngineData, _ = v.([]byte)
			w.HasState = len(w.EngineData) > 0
		}
	}
	return w, rows.Err()
}

// Late counts what was ingested since the watermark and belongs before its
// cutoff: writes received before it, and mergelog records of instrumented
// controllers logged before it (an audit log ingested before the controller
// logs that explain it). Either would change what is final, so the run
// must rebuild.
func (s *Store) Late(ctx context.Context, w Watermark) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM audit_events WHERE id > ?1 AND received_ns <= ?2 AND `+writeTerms+`) +
		(SELECT count(*) FROM log_records WHERE id > ?3 AND ts_ns <= ?2 AND msg = ?4)`,
		w.EventID, w.CutoffNS, w.LogID, reconstruct.MsgMergelog).Scan(&n)
	return n, err
}

// LatestWrite returns the latest receive time of a write with id <= upToID.
func (s *Store) LatestWrite(ctx context.Context, upToID int64) (int64, error) {
	var ns int64
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(max(received_ns), 0) FROM audit_events WHERE id <= ? AND `+writeTerms,
		upToID).Scan(&ns)
	return ns, err
}

// LastIDs returns the highest audit_events.id and log_records.id stored.
func (s *Store) LastIDs(ctx context.Context) (event, log int64, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT (SELECT COALESCE(max(id), 0) FROM audit_events), (SELECT COALESCE(max(id), 0) FROM log_records)`).Scan(&event, &log)
	return
}

// writeTerms select the writes among audit events: the final stage of a
// create, update, patch, delete or deletecollection. They repeat the WHERE
// of the partial index audit_events_writes word for word (migration 0004).
const writeTerms = `stage IN ('ResponseComplete', 'Panic') AND verb IN ('create', 'update', 'patch', 'delete', 'deletecollection')`

// ignoredTerms leave out the writes the engine ignores (reconstruct.Ignored).
func ignoredTerms() string {
	var res, sub []string
	for k := range reconstruct.Ignored {
		if r, sr, ok := strings.Cut(k, "/"); ok {
			sub = append(sub, fmt.Sprintf(" AND NOT (e.resource = '%s' AND e.subresource = '%s')", r, sr))
		} else {
			res = append(res, "'"+k+"'")
		}
	}
	sort.Strings(res)
	sort.Strings(sub)
	return "e.resource NOT IN (" + strings.Join(res, ", ") + ")" + strings.Join(sub, "")
}

// ScanWrites calls fn for every write event the engine does not ignore
// received after afterNS, with id <= upToID, in the order the apiserver
// received them, then id: a write can only have been caused by writes
// received before it. fn may keep the events it is given.
func (s *Store) ScanWrites(ctx context.Context, afterNS, upToID int64, fn func(*reconstruct.Event) error) error {
	rows, err := s.r.QueryContext(ctx, `SELECT e.id, e.audit_id, e.verb, e.api_group, e.resource,
		e.subresource, e.namespace, e.name, e.uid, e.resource_version, e.username, e.user_agent, COALESCE(e.code, 0),
		e.received_ns, e.stage_ns, COALESCE(e.cpid, ''), e.cpid_ancestors, e.owner_refs,
		CASE WHEN e.resource IN ('pods', 'nodes', 'endpointslices', 'endpoints') THEN b.response_object END, b.request_object,
		e.file_id
		FROM audit_events e LEFT JOIN audit_bodies b ON b.event_id = e.id
		WHERE e.received_ns > ? AND e.id <= ? AND e.`+strings.ReplaceAll(writeTerms, " AND verb", " AND e.verb")+`
		  AND `+ignoredTerms()+`
		ORDER BY e.received_ns, e.id`, afterNS, upToID)
	if err != nil {
		return err
	}
	defer rows.Close()
	families, err := s.fileFamilies(ctx)
	if err != nil {
		return err
	}
	var slab []reconstruct.Event
	var resp, req sql.RawBytes
	for rows.Next() {
		var anc, owners sql.NullString
		var fileID int64
		if len(slab) == 0 {
			slab = make([]reconstruct.Event, 256)
		}
		e := &slab[0]
		slab = slab[1:]
		if err := rows.Scan(&e.ID, &e.AuditID, &e.Verb, &e.APIGroup, &e.Resource, &e.Subresource,
			&e.Namespace, &e.Name, &e.UID, &e.ResourceVersion, &e.Username, &e.UserAgent, &e.Code, &e.ReceivedNS,
			&e.StageNS, &e.CPID, &anc, &owners, &resp, &req, &fileID); err != nil {
			return err
		}
		e.Source = families[fileID]
		if anc.Valid {
			json.Unmarshal([]byte(anc.String), &e.Ancestors)
		}
		if owners.Valid {
			json.Unmarshal([]byte(owners.String), &e.OwnerRefs)
		}
		// Only the kinds whose rules and anomaly checks read the object
		// after the write have it fetched (reconstruct's readBody and
		// transitions): a Deployment's or a ReplicaSet's body is not read.
		if isObjectBodyBytes(e.Subresource, resp) {
			e.Object = bytes.Clone(resp)
		}
		if len(req) > 0 {
			e.Request = bytes.Clone(req)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return rows.Err()
}

// fileFamilies maps files.id to the rotation family of the file (ingest.Family).
func (s *Store) fileFamilies(ctx context.Context) (map[int64]string, error) {
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
		out[id] = ingest.Family(path)
	}
	return out, rows.Err()
}

// isObjectBody reports whether a response body is the written object, not a
// Status (bindings, most deletes) or another kind (a Scale).
func isObjectBody(sub, body string) bool {
	if body == "" || (sub != "" && sub != "status") {
		return false
	}
	return !strings.HasPrefix(body, `{"kind":"Status"`) && !strings.HasPrefix(body, `{"kind":"Scale"`)
}

// isObjectBodyBytes is isObjectBody for a body read as bytes.
func isObjectBodyBytes(sub string, body []byte) bool {
	if len(body) == 0 || (sub != "" && sub != "status") {
		return false
	}
	return !bytes.HasPrefix(body, []byte(`{"kind":"Status"`)) && !bytes.HasPrefix(body, []byte(`{"kind":"Scale"`))
}

// ScanCPIDRecords calls fn for the mergelog and span records (messages
// reconstruct.MsgMergelog and MsgSpan) among the log records with
// afterID < id <= upToID, in id order.
func (s *Store) ScanCPIDRecords(ctx context.Context, afterID, upToID int64, fn func(id, tsNS int64, msg string, fields []byte) error) error {
	rows, err := s.r.QueryContext(ctx, `SELECT id, ts_ns, msg, fields FROM log_records
		WHERE id > ? AND id <= ? AND msg IN (?, ?) ORDER BY id`, afterID, upToID, reconstruct.MsgMergelog, reconstruct.MsgSpan)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, ts int64
		var msg string
		var fields []byte
		if err := rows.Scan(&id, &ts, &msg, &fields); err != nil {
			return err
		}
		if err := fn(id, ts, msg, fields); err != nil {
			return err
		}
	}
	return rows.Err()
}

// ScanMergelogs calls fn for every stored mergelog that is final at the
// cutoff (from a log, or from a write received up to it), oldest first, to
// rebuild the merge graph.
func (s *Store) ScanMergelogs(ctx context.Context, cutoffNS int64, fn func(reconstruct.Mergelog) error) error {
	rows, err := s.r.QueryContext(ctx, `SELECT m.id, m.cpid, m.ts_ns, m.service, m.origin, COALESCE(s.source_cpid, '')
		FROM mergelogs m LEFT JOIN mergelog_sources s ON s.mergelog_id = m.id
		LEFT JOIN audit_events e ON e.id = m.event_id
		WHERE m.event_id IS NULL OR e.received_ns <= ?
		ORDER BY m.id, s.pos`, cutoffNS)
	if err != nil {
		return err
	}
	defer rows.Close()
	var cur reconstruct.Mergelog
	curID := int64(-1)
	for rows.Next() {
		var id int64
		var m reconstruct.Mergelog
		var src string
		if err := rows.Scan(&id, &m.CPID, &m.TimeNS, &m.Service, &m.Origin, &src); err != nil {
			return err
		}
		if id != curID {
			if curID >= 0 {
				if err := fn(cur); err != nil {
					return err
				}
			}
			cur, curID = m, id
		}
		if src != "" {
			cur.Sources = append(cur.Sources, src)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if curID >= 0 {
		return fn(cur)
	}
	return nil
}

// resetReconstruction deletes everything reconstruct derived, for a full rebuild.
func resetReconstruction(ctx context.Context, tx *sql.Tx) error {
	for _, t := range derivedTables {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+t); err != nil {
			return err
		}
	}
	return nil
}

// saver stores a run of the engine while it goes on (Output by Output):
// in one transaction, or with txRows > 0 in transactions of about txRows
// rows, so that another writer (the tailer) waits for one of them, not for
// the whole run. The first transaction first clears what the run replaces:
// everything derived for a full rebuild, what the previous run derived
// provisionally otherwise. The last one (finish) brings the summaries of
// the changes and the numbering of reordered objects up to date and moves
// the watermark: until it commits, a crash leaves the old watermark, and
// the next run clears and redoes what this one stored.
type saver struct {
	st     *Store
	txRows int
	reset  bool  // full rebuild: clear every derived table first
	redoNS int64 // otherwise: clear what was derived from writes received after it

	conn    *sql.Conn
	tx      *sql.Tx
	stmts   [6]*sql.Stmt // revision, mergelog, mergelog source, anomaly, span; bulk: revisions by revBatch
	args    []any
	rows    int // rows written in the open transaction
	steps   int // transactions committed
	cleared bool

	// A full rebuild in one transaction (bulk) loads the tables without
	// their indexes (a third of the time, not a whole one) and creates them
	// again in finish: indexes holds their SQL, seen does the uniqueness of
	// mergelogs meanwhile.
	bulk    bool
	indexes []string
	seen    map[string]bool
	book    *bulkBook

	changes map[string]bool
	reorder map[reconstruct.ObjectKey]bool
	relabel map[reconstruct.ObjectKey]bool
}

var saverSQL = [...]string{
	`INSERT OR REPLACE INTO revisions(event_id, api_group, resource, namespace, name, seq, order_by, attempt,
		stage_ns, writer, writer_is_user, cpid, cpid_origin, cause_event_id, cause_rule, change_id, hop_ns)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	`INSERT OR IGNORE INTO mergelogs(cpid, ts_ns, service, origin, event_id) VALUES (?, ?, ?, ?, ?)`,
	`INSERT INTO mergelog_sources(mergelog_id, pos, source_cpid) VALUES (?, ?, ?)`,
	`INSERT OR IGNORE INTO anomalies(kind, event_id, api_group, resource, namespace, name, detail) VALUES (?, ?, ?, ?, ?, ?, ?)`,
	`INSERT OR IGNORE INTO controller_spans(span_id, parent_id, cpid, service, name, start_ns, end_ns, attrs, log_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
}

// newSaver returns a saver for a full rebuild (reset) or for a run that
// redoes what was derived from writes received after redoNS. A full
// rebuild in one transaction (txRows 0) loads without indexes; in steps,
// the indexes stay (a step must leave a usable database), and a crash
// before the end leaves no watermark: the next run rebuilds again.
func newSaver(st *Store, reset bool, redoNS int64, txRows int) *saver {
	sv := &saver{st: st, reset: reset, redoNS: redoNS, txRows: txRows,
		changes: map[string]bool{}, reorder: map[reconstruct.ObjectKey]bool{}, relabel: map[reconstruct.ObjectKey]bool{}}
	if reset && txRows == 0 {
		sv.bulk, sv.seen, sv.book = true, map[string]bool{}, newBulkBook()
	}
	return sv
}

// derivedTables are the tables reconstruct fills.
var derivedTables = []string{"mergelog_sources", "mergelogs", "revisions", "changes", "anomalies", "controller_spans", "reconstruct_state"}

// dropIndexes drops the indexes of the derived tables that have SQL (not
// those of PRIMARY KEY and inline UNIQUE constraints) and returns it.
func dropIndexes(ctx context.Context, tx *sql.Tx) ([]string, error) {
	q := `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN ('` +
		strings.Join(derivedTables, "', '") + `') ORDER BY name`
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	var names, sqls []string
	for rows.Next() {
		var n, s string
		if err := rows.Scan(&n, &s); err != nil {
			rows.Close()
			return nil, err
		}
		names, sqls = append(names, n), append(sqls, s)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, err := tx.ExecContext(ctx, `DROP INDEX "`+n+`"`); err != nil {
			return nil, err
		}
	}
	return sqls, nil
}

// begin opens a transaction if none is open. It lives until commit or
// abort whatever becomes of ctx (the context of one stage of the run):
// database/sql would roll it back when a context it began with ends.
func (sv *saver) begin(ctx context.Context) error {
	if sv.tx != nil {
		return nil
	}
	// The writer connection, with foreign keys off while it is ours:
	// every row refers to events and records just read, and checking that
	// they exist costs a read of the large audit_events table per row.
	bg := context.WithoutCancel(ctx)
	conn, err := sv.st.w.Conn(bg)
	if err != nil {
		return err
	}
	if _, err := conn.ExecContext(bg, `PRAGMA foreign_keys = OFF`); err != nil {
		conn.Close()
		return err
	}
	tx, err := conn.BeginTx(bg, nil)
	if err != nil {
		conn.ExecContext(bg, `PRAGMA foreign_keys = ON`)
		conn.Close()
		return err
	}
	sv.conn, sv.tx, sv.rows = conn, tx, 0
	if !sv.cleared {
		if sv.reset {
			if err = resetReconstruction(ctx, tx); err == nil && sv.bulk {
				sv.indexes, err = dropIndexes(ctx, tx)
			}
		} else {
			err = deleteProvisional(ctx, tx, sv.redoNS)
		}
		if err != nil {
			sv.abort()
			return err
		}
		sv.cleared = true
	}
	for i, q := range saverSQL {
		if i == 0 && sv.bulk {
			// Every write once, in an empty table.
			q = strings.Replace(q, "INSERT OR REPLACE", "INSERT", 1)
		}
		if sv.stmts[i], err = tx.PrepareContext(ctx, q); err != nil {
			sv.abort()
			return err
		}
	}
	if sv.bulk {
		// revBatch rows a statement: the driver's cost is per statement.
		q := strings.Replace(saverSQL[0], "INSERT OR REPLACE", "INSERT", 1)
		i := strings.LastIndex(q, "(?")
		q += strings.Repeat(", "+q[i:], revBatch-1)
		if sv.stmts[5], err = tx.PrepareContext(ctx, q); err != nil {
			sv.abort()
			return err
		}
	}
	return nil
}

// revBatch is how many revisions a bulk insert statement stores.
const revBatch = 16

// revisionArgs appends the values of a revisions row.
func revisionArgs(args []any, x *reconstruct.Write) []any {
	return append(args, x.EventID, x.Key.Group, x.Key.Resource, x.Key.Namespace, x.Key.Name,
		x.Seq, x.OrderBy, x.Attempt, x.StageNS, x.Writer.Name, x.Writer.User, nullString(x.CPID), nullString(x.CPIDOrigin),
		nullInt64(x.CauseEventID), nullString(x.Rule), nullString(x.ChangeID), nullHop(*x))
}

func (sv *saver) closeStmts() {
	for i, st := range sv.stmts {
		if st != nil {
			st.Close()
			sv.stmts[i] = nil
		}
	}
}

// commit commits the open transaction.
func (sv *saver) commit() error {
	if sv.tx == nil {
		return nil
	}
	sv.closeStmts()
	err := sv.tx.Commit()
	sv.tx = nil
	return errors.Join(err, sv.release())
}

// release gives the writer connection back, foreign keys on.
func (sv *saver) release() error {
	_, err := sv.conn.ExecContext(context.Background(), `PRAGMA foreign_keys = ON`)
	err = errors.Join(err, sv.conn.Close())
	sv.conn = nil
	return err
}

// abort rolls back the open transaction, if any.
func (sv *saver) abort() {
	if sv.tx != nil {
		sv.closeStmts()
		sv.tx.Rollback()
		sv.tx = nil
		sv.release()
	}
}

// exec runs statement i in the open transaction. The context is not
// passed on: the driver watches a cancelable one with a goroutine per
// statement, which costs more than the insert; save checks it per Output.
func (sv *saver) exec(i int, args ...any) (sql.Result, error) {
	sv.rows++
	return sv.stmts[i].ExecContext(context.Background(), args...)
}

// save stores one Output of the engine.
func (sv *saver) save(ctx context.Context, out reconstruct.Output) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := sv.begin(ctx); err != nil {
		return err
	}
	if testHookSave != nil {
		testHookSave()
	}
	ws := out.Writes
	for ; sv.bulk && len(ws) >= revBatch; ws = ws[revBatch:] {
		sv.args = sv.args[:0]
		for i := range ws[:revBatch] {
			sv.args = revisionArgs(sv.args, &ws[i])
		}
		if _, err := sv.exec(5, sv.args...); err != nil {
			return fmt.Errorf("save revisions of events %d to %d: %w", ws[0].EventID, ws[revBatch-1].EventID, err)
		}
		sv.rows += revBatch - 1
	}
	for i := range ws {
		if _, err := sv.exec(0, revisionArgs(sv.args[:0], &ws[i])...); err != nil {
			return fmt.Errorf("save revision of event %d: %w", ws[i].EventID, err)
		}
	}
	for i, x := range out.Writes {
		if x.ChangeID != "" {
			sv.changes[x.ChangeID] = true
		}
		if sv.book != nil {
			sv.book.add(&out.Writes[i])
		}
	}
	for k := range out.Reorder {
		sv.reorder[k] = true
	}
	for k := range out.Relabel {
		sv.relabel[k] = true
	}
	for _, m := range out.Mergelogs {
		if sv.seen != nil {
			k := m.CPID + "\x00" + string(m.Origin)
			if sv.seen[k] {
				continue
			}
			sv.seen[k] = true
		}
		r, err := sv.exec(1, m.CPID, m.TimeNS, m.Service, string(m.Origin), nullInt64(m.EventID))
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 0 {
			continue
		}
		id, _ := r.LastInsertId()
		for i, sc := range m.Sources {
			if _, err := sv.exec(2, id, i, sc); err != nil {
				return err
			}
		}
	}
	for _, c := range out.Changes {
		if _, err := sv.tx.ExecContext(context.Background(), `INSERT OR REPLACE INTO changes(id, event_id, started_ns, settled_ns, user,
			verb, api_group, resource, subresource, namespace, name, writes, objects)
			SELECT ?, id, ?, stage_ns, username, verb, api_group, resource, subresource, namespace, name, 0, 0
			FROM audit_events WHERE id = ?`, c.ID, c.StartNS, c.EventID); err != nil {
			return err
		}
		sv.rows++
		sv.changes[c.ID] = true
	}
	for _, a := range out.Anomalies {
		if _, err := sv.exec(3, a.Kind, a.EventID, a.Key.Group, a.Key.Resource, a.Key.Namespace, a.Key.Name, a.Detail); err != nil {
			return err
		}
	}
	for _, x := range out.Spans {
		if _, err := sv.exec(4, x.SpanID, x.ParentID, x.CPID, x.Service, x.Name, x.StartNS, x.EndNS,
			rawJSON(x.Attrs), x.LogID); err != nil {
			return err
		}
	}
	if sv.txRows > 0 && sv.rows >= sv.txRows {
		if err := sv.commit(); err != nil {
			return err
		}
		sv.steps++
		if testHookStep != nil {
			return testHookStep(sv.steps)
		}
	}
	return nil
}

// testHookStep, set by tests, is called after each step a saver commits;
// an error it returns ends the run there, as a crash would.
var testHookStep func(step int) error

// testHookSave, set by tests, is called as each Output is saved.
var testHookSave func()

// finish creates the indexes a full rebuild dropped, renumbers the
// reordered objects, summarizes the changes the run
// touched, moves the watermark and commits.
func (sv *saver) finish(ctx context.Context, w Watermark) error {
	if err := sv.begin(ctx); err != nil {
		return err
	}
	if sv.book != nil {
		// Before the indexes exist, so that they are built once.
		if err := sv.book.renumber(ctx, sv.tx, sv.reorder, sv.relabel); err != nil {
			return err
		}
		if err := sv.book.summarize(ctx, sv.tx); err != nil {
			return err
		}
	}
	for _, q := range sv.indexes {
		if _, err := sv.tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create index again: %w", err)
		}
	}
	if sv.book == nil {
		if err := orderRevisions(ctx, sv.tx, sv.reorder); err != nil {
			return err
		}
		if err := relabelRevisions(ctx, sv.tx, sv.relabel, sv.reorder); err != nil {
			return err
		}
		if err := summarizeChanges(ctx, sv.tx, sv.changes); err != nil {
			return err
		}
	}
	for k, v := range map[string]any{"event_id": w.EventID, "cutoff_ns": w.CutoffNS, "log_id": w.LogID, "engine": w.EngineData} {
		if _, err := sv.tx.ExecContext(ctx, `INSERT OR REPLACE INTO reconstruct_state(key, value) VALUES (?, ?)`, k, v); err != nil {
			return err
		}
	}
	return sv.commit()
}

// deleteProvisional deletes what was derived from writes received after ns.
func deleteProvisional(ctx context.Context, tx *sql.Tx, ns int64) error {
	for _, q := range []string{
		`DELETE FROM revisions WHERE stage_ns > ?1 AND event_id IN (SELECT id FROM audit_events WHERE received_ns > ?1)`,
		`DELETE FROM mergelog_sources WHERE mergelog_id IN (SELECT m.id FROM mergelogs m JOIN audit_events e ON e.id = m.event_id WHERE e.received_ns > ?1)`,
		`DELETE FROM mergelogs WHERE event_id IN (SELECT id FROM audit_events WHERE received_ns > ?1)`,
		`DELETE FROM changes WHERE started_ns > ?1`,
		`DELETE FROM anomalies WHERE event_id IN (SELECT id FROM audit_events WHERE received_ns > ?1)`,
	} {
		if _, err := tx.ExecContext(ctx, q, ns); err != nil {
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

func nullHop(x reconstruct.Write) any {
	if x.CauseEventID == 0 {
		return nil
	}
	return x.HopNS
}

// summarizeChanges recomputes the summary columns of the given changes from
// their revisions.
func summarizeChanges(ctx context.Context, tx *sql.Tx, ids map[string]bool) error {
	st, err := tx.PrepareContext(ctx, `UPDATE changes SET
		settled_ns = COALESCE((SELECT max(r.stage_ns) FROM revisions r WHERE r.change_id = changes.id AND r.attempt = 0), settled_ns),
		writes = (SELECT count(*) FROM revisions r WHERE r.change_id = changes.id AND r.attempt = 0),
		objects = (SELECT count(*) FROM (SELECT DISTINCT api_group, resource, namespace, name FROM revisions r
		           WHERE r.change_id = changes.id AND r.attempt = 0)),
		slowest_hop_ns = (SELECT max(hop_ns) FROM revisions r WHERE r.change_id = changes.id AND r.attempt = 0),
		slowest_hop_event_id = (SELECT event_id FROM revisions r WHERE r.change_id = changes.id AND r.attempt = 0
		           AND r.hop_ns IS NOT NULL ORDER BY r.hop_ns DESC, r.event_id LIMIT 1)
		WHERE id = ?`)
	if err != nil {
		return err
	}
	defer st.Close()
	for id := range ids {
		if _, err := st.ExecContext(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// relabelRevisions marks the revisions of the given objects (except those
// reordered, which orderRevisions did) as ordered by time.
func relabelRevisions(ctx context.Context, tx *sql.Tx, objects, skip map[reconstruct.ObjectKey]bool) error {
	up, err := tx.PrepareContext(ctx, `UPDATE revisions SET order_by = 'time'
		WHERE resource = ? AND namespace = ? AND name = ? AND api_group = ? AND order_by != 'time'`)
	if err != nil {
		return err
	}
	defer up.Close()
	for k := range objects {
		if skip[k] {
			continue
		}
		if _, err := up.ExecContext(ctx, k.Resource, k.Namespace, k.Name, k.Group); err != nil {
			return err
		}
	}
	return nil
}

// orderRevisions numbers the revisions of each given object, reading them
// back from the table: by resourceVersion (etcd revision) when every one of
// them parses as an integer, by apiserver time otherwise; which was used is
// recorded.
func orderRevisions(ctx context.Context, tx *sql.Tx, objects map[reconstruct.ObjectKey]bool) error {
	type row struct {
		id      int64
		rv      string
		stageNS int64
	}
	up, err := tx.PrepareContext(ctx, `UPDATE revisions SET seq = ?, order_by = ? WHERE event_id = ?`)
	if err != nil {
		return err
	}
	defer up.Close()
	q, err := tx.PrepareContext(ctx, `SELECT r.event_id, e.resource_version, r.stage_ns FROM revisions r
		JOIN audit_events e ON e.id = r.event_id
		WHERE r.api_group = ? AND r.resource = ? AND r.namespace = ? AND r.name = ?`)
	if err != nil {
		return err
	}
	defer q.Close()
	for k := range objects {
		rows, err := q.QueryContext(ctx, k.Group, k.Resource, k.Namespace, k.Name)
		if err != nil {
			return err
		}
		var rs []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.id, &r.rv, &r.stageNS); err != nil {
				rows.Close()
				return err
			}
			rs = append(rs, r)
		}
		rows.Close()
		ids, by := reconstruct.OrderRevisions(len(rs), func(i int) (int64, string, int64) { return rs[i].id, rs[i].rv, rs[i].stageNS })
		for i, id := range ids {
			if _, err := up.ExecContext(ctx, i+1, by, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// Prune deletes CPIDs from the merge graph by the rules of section 3.4.2 of
// the CPID paper (reconstruct.Graph.Prune) under the budget, in one
// transaction, and returns the deleted CPIDs. Revisions keep their CPID;
// a later full reconstruct rebuilds the whole graph.
func (s *Store) Prune(ctx context.Context, b reconstruct.Budget, dryRun bool) ([]string, int, error) {
	g := reconstruct.NewGraph()
	if err := s.ScanMergelogs(ctx, math.MaxInt64, func(m reconstruct.Mergelog) error { return g.Add(m) }); err != nil {
		return nil, 0, err
	}
	before := g.Len()
	removed := g.Prune(b)
	if dryRun || len(removed) == 0 {
		return removed, before, nil
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM mergelog_sources WHERE mergelog_id IN (SELECT id FROM mergelogs WHERE cpid = ?1)`,
			`DELETE FROM mergelog_sources WHERE source_cpid = ?1`,
			`DELETE FROM mergelogs WHERE cpid = ?1`,
		} {
			st, err := tx.PrepareContext(ctx, q)
			if err != nil {
				return err
			}
			for _, c := range removed {
				if _, err := st.ExecContext(ctx, c); err != nil {
					st.Close()
					return err
				}
			}
			st.Close()
		}
		return nil
	})
	return removed, before, err
}

// NewestMergelog returns the time of the newest mergelog, 0 when none.
func (s *Store) NewestMergelog(ctx context.Context) (int64, error) {
	var ns int64
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(max(ts_ns), 0) FROM mergelogs`).Scan(&ns)
	return ns, err
}
