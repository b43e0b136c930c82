package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cpid-dev/cpid"
)

// resetReconstruction deletes everything reconstruct derived in cluster,
// for a full rebuild: the whole tables when the database holds no other
// cluster (SQLite truncates a table DELETEd without WHERE).
func resetReconstruction(ctx context.Context, tx *sql.Tx, cluster string) error {
	var others int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT DISTINCT cluster FROM files WHERE cluster != ?1
		UNION SELECT DISTINCT cluster FROM reconstruct_state WHERE cluster != ?1)`, cluster).Scan(&others); err != nil {
		return err
	}
	for _, t := range derivedTables {
		var err error
		switch {
		case others == 0:
			_, err = tx.ExecContext(ctx, `DELETE FROM `+t)
		case t == "mergelog_sources":
			_, err = tx.ExecContext(ctx, `DELETE FROM mergelog_sources WHERE mergelog_id IN (SELECT id FROM mergelogs WHERE cluster = ?)`, cluster)
		case t == "change_terms":
			_, err = tx.ExecContext(ctx, deleteTermsSQL+`(SELECT rowid FROM changes WHERE cluster = ?)`, cluster)
		default:
			_, err = tx.ExecContext(ctx, `DELETE FROM `+t+` WHERE cluster = ?`, cluster)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// deriveTx stores a reconstruct run (cpid.DeriveTx): in one transaction,
// or in several when the run calls Step. The first transaction first clears
// what the run replaces: everything derived for a full rebuild, what the
// previous run derived provisionally otherwise. Finish moves the watermark:
// until it commits, a crash leaves the old watermark, and the next run
// clears and redoes what this one stored.
type deriveTx struct {
	st      *Store
	cluster string
	reset   bool  // full rebuild: clear every derived table first
	redoNS  int64 // otherwise: clear what was derived from writes received after it
	bulk    bool  // one transaction: the derived tables load without their indexes

	conn    *sql.Conn
	tx      *sql.Tx
	stmts   [len(saverSQL) + 1]*sql.Stmt // saverSQL's, then (bulk) revisions by revBatch
	args    []any
	ids     []int64 // a C batch's rowids (unused)
	steps   int     // transactions committed
	cleared bool
	// indexes holds the SQL of the indexes a bulk load dropped, triggers
	// that of the triggers that keep cpid_ids (rebuilt at the end).
	indexes, triggers []string
	// stale are the changes whose writes an incremental run cleared
	// (deleteProvisional): their postings are stored again at the end,
	// whether the run gives them writes again or not.
	stale []string
}

// insertRevision stores a revision; an incremental run replaces what a
// crashed run may have left, a full rebuild writes an empty table.
const insertRevision = ` INTO revisions(event_id, api_group, resource, namespace, name, seq, order_by, attempt,
		stage_ns, writer, writer_is_user, cpid, cpid_origin, cause_event_id, cause_rule, change_id, hop_ns, cluster,
		explain, explain_detail, confidence)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// The saver's statements prepared in each transaction, by index.
const (
	stRevision = iota
	stAnomaly
	stSpan
	stRevisions // a full rebuild's revBatch revisions
)

var saverSQL = [...]string{
	`INSERT OR REPLACE` + insertRevision,
	`INSERT OR IGNORE INTO anomalies(kind, event_id, api_group, resource, namespace, name, detail, cluster) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
	`INSERT OR IGNORE INTO controller_spans(span_id, parent_id, cpid, service, name, start_ns, end_ns, attrs, log_id, cluster)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
}

// The statements the saver runs by the batch (execRows).
const (
	insertMergelogSQL = `INSERT OR IGNORE INTO mergelogs(cpid, ts_ns, service, origin, event_id, cluster) VALUES (?, ?, ?, ?, ?, ?)`
	insertSourceSQL   = `INSERT INTO mergelog_sources(mergelog_id, pos, source_cpid) VALUES (?, ?, ?)`
	// A change stored again keeps its rowid (an upsert, not a replace):
	// its postings (change_terms) name it by that.
	insertChangeSQL = `INSERT INTO changes(id, event_id, started_ns, settled_ns, user, verb, api_group, resource,
		subresource, namespace, name, writes, objects, cluster, trigger, trigger_detail, traceparent)
		SELECT ?, id, ?, stage_ns, username, verb, api_group, resource, subresource,
			CASE WHEN resource = 'namespaces' AND api_group = '' THEN '' ELSE namespace END, name, 0, 0, cluster, ?, ?, ?
		FROM audit_events WHERE id = ?
		ON CONFLICT (id) DO UPDATE SET event_id = excluded.event_id, started_ns = excluded.started_ns,
			settled_ns = excluded.settled_ns, user = excluded.user, verb = excluded.verb, api_group = excluded.api_group,
			resource = excluded.resource, subresource = excluded.subresource, namespace = excluded.namespace,
			name = excluded.name, writes = excluded.writes, objects = excluded.objects, slowest_hop_ns = NULL,
			slowest_hop_event_id = NULL, cluster = excluded.cluster, trigger = excluded.trigger,
			trigger_detail = excluded.trigger_detail, traceparent = excluded.traceparent` // a Namespace is cluster-scoped (reconstruct.Event.Key)
)

// Derive opens the store of a reconstruct run (cpid.DerivedStore). A bulk
// run loads without indexes; otherwise the indexes stay (a step must leave
// a usable database), and a crash before the end leaves no watermark: the
// next run rebuilds again.
func (s *Store) Derive(ctx context.Context, m cpid.DeriveMode) (cpid.DeriveTx, error) {
	return &deriveTx{st: s, cluster: s.own(), reset: m.Full, redoNS: m.RedoNS, bulk: m.Full && m.Bulk}, nil
}

var _ cpid.DerivedStore = (*Store)(nil)

// derivedTables are the tables reconstruct fills, change_terms before
// changes (a cluster's postings are found by its changes).
var derivedTables = []string{"mergelog_sources", "mergelogs", "revisions", "change_terms", "changes", "anomalies", "controller_spans",
	"reconstruct_state", "reconstruct_objects"}

// provisionalChangesSQL is the changes that deleteProvisional (?1 its
// time, ?2 its cluster) deletes or takes writes from.
var provisionalChangesSQL = `SELECT change_id FROM revisions WHERE stage_ns > ?1 AND cluster = ?2 AND change_id IS NOT NULL
	AND event_id IN (` + writesAfterSQL + `) UNION SELECT id FROM changes WHERE started_ns > ?1 AND cluster = ?2`

// dropIndexes drops the indexes of the derived tables that have SQL (not
// those of PRIMARY KEY and inline UNIQUE constraints) and returns it.
func dropIndexes(ctx context.Context, tx *sql.Tx) ([]string, error) {
	return dropSchema(ctx, tx, "index", "")
}

// dropTriggers drops the triggers of the derived tables that keep cpid_ids
// and returns their SQL: a bulk load counts its CPIDs once at the end
// (fillCPIDIDs), where each row's trigger did three statements.
func dropTriggers(ctx context.Context, tx *sql.Tx) ([]string, error) {
	return dropSchema(ctx, tx, "trigger", ` AND sql LIKE '%cpid_ids%'`)
}

// dropSchema drops the schema objects of a type (index, trigger) of the
// derived tables that have SQL and match cond, and returns their SQL.
func dropSchema(ctx context.Context, tx *sql.Tx, kind, cond string) ([]string, error) {
	q := `SELECT name, sql FROM sqlite_master WHERE type = ? AND sql IS NOT NULL AND tbl_name IN ('` +
		strings.Join(derivedTables, "', '") + `')` + cond + ` ORDER BY name`
	rows, err := tx.QueryContext(ctx, q, kind)
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
		if _, err := tx.ExecContext(ctx, `DROP `+strings.ToUpper(kind)+` "`+n+`"`); err != nil {
			return nil, err
		}
	}
	return sqls, nil
}

// begin opens a transaction if none is open. It lives until commit or
// abort whatever becomes of ctx (the context of one stage of the run):
// database/sql would roll it back when a context it began with ends.
func (sv *deriveTx) begin(ctx context.Context) error {
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
	// The lean settings for a full rebuild: it appends and sorts (the
	// indexes a bulk run builds again), and the ingest's cache of the
	// writer would only hold what it wrote (peak RSS of a full
	// reconstruct of 1M synthetic events: 690 MB with it, 485 MB with the
	// lean one). An incremental run keeps the writer's cache: shrinking it
	// at every step would throw away the pages a tailer writes to.
	settings := []string{`PRAGMA foreign_keys = OFF`}
	if sv.reset {
		settings = append(settings, leanSettings...)
	}
	if err := apply(bg, conn, settings...); err != nil {
		sv.restore(bg, conn)
		conn.Close()
		return err
	}
	tx, err := conn.BeginTx(bg, nil)
	if err != nil {
		sv.restore(bg, conn)
		conn.Close()
		return err
	}
	sv.conn, sv.tx = conn, tx
	if !sv.cleared {
		if sv.reset {
			if sv.bulk {
				// Before the reset, whose deletes they would count
				// one row at a time: Finish fills cpid_ids again.
				sv.triggers, err = dropTriggers(ctx, tx)
			}
			if err == nil {
				err = resetReconstruction(ctx, tx, sv.cluster)
			}
			if err == nil && sv.bulk {
				sv.indexes, err = dropIndexes(ctx, tx)
			}
		} else if sv.stale, err = column(ctx, tx, provisionalChangesSQL, sv.redoNS, sv.cluster); err == nil {
			err = deleteProvisional(ctx, tx, sv.cluster, sv.redoNS)
		}
		if err != nil {
			sv.abort()
			return err
		}
		sv.cleared = true
	}
	for i, q := range saverSQL {
		if sv.stmts[i], err = tx.PrepareContext(ctx, q); err != nil {
			sv.abort()
			return err
		}
	}
	if sv.bulk {
		// Every write once, in an empty table; revBatch rows a statement
		// (the driver's cost is per statement).
		q := `INSERT` + insertRevision
		q += strings.Repeat(", "+q[strings.LastIndex(q, "(?"):], revBatch-1)
		if sv.stmts[stRevisions], err = tx.PrepareContext(ctx, q); err != nil {
			sv.abort()
			return err
		}
	}
	return nil
}

// saveRevisions stores ws: by the batch in SQLite in C (a native store:
// every revision in one call, in the open transaction of the writer's
// connection), else through database/sql, revBatch rows a statement in a
// bulk run.
func (sv *deriveTx) saveRevisions(ws []cpid.Write) error {
	if len(ws) == 0 {
		return nil
	}
	r := newRows(revisionColumns)
	defer r.put()
	for i := range ws {
		revisionRow(r, &ws[i], sv.cluster)
	}
	if b := sv.st.batch; b != nil {
		verb := "INSERT OR REPLACE"
		if sv.bulk {
			verb = "INSERT"
		}
		sv.ids = slices.Grow(sv.ids[:0], len(ws))[:len(ws)]
		if err := b.exec(verb+insertRevision, r, sv.ids); err != nil {
			return atRow(err, func(i int) string { return fmt.Sprintf("save revision of event %d", ws[i].EventID) })
		}
		return nil
	}
	i := 0
	var one []any
	for ; sv.bulk && len(ws)-i >= revBatch; i += revBatch {
		sv.args = sv.args[:0]
		for j := i; j < i+revBatch; j++ {
			one = r.args(j, one)
			sv.args = append(sv.args, one...)
		}
		if _, err := sv.exec(stRevisions, sv.args...); err != nil {
			return fmt.Errorf("save revisions of events %d to %d: %w", ws[i].EventID, ws[i+revBatch-1].EventID, err)
		}
	}
	for ; i < len(ws); i++ {
		if _, err := sv.exec(stRevision, r.args(i, sv.args)...); err != nil {
			return fmt.Errorf("save revision of event %d: %w", ws[i].EventID, err)
		}
	}
	return nil
}

// execBatch runs query for each row of r in the open transaction
// (execRows: by the batch in C on a native store), their rowids unused.
func (sv *deriveTx) execBatch(ctx context.Context, query string, r *rows) error {
	sv.ids = slices.Grow(sv.ids[:0], r.len())[:r.len()]
	return execRows(ctx, sv.tx, sv.st.batch, query, r, sv.ids)
}

// saveMergelogs stores ms and the sources of those that are new (a
// mergelog already stored is left as it is): by the batch in C on a
// native store, as saveRevisions.
func (sv *deriveTx) saveMergelogs(ctx context.Context, ms []cpid.Emitted) error {
	if len(ms) == 0 {
		return nil
	}
	r := newRows(6)
	defer r.put()
	for i := range ms {
		m := &ms[i]
		r.text(m.CPID)
		r.int(m.TimeNS)
		r.text(m.Service)
		r.text(string(m.Origin))
		r.intOrNull(m.EventID)
		r.text(sv.cluster)
	}
	ids := make([]int64, len(ms))
	if err := execRows(ctx, sv.tx, sv.st.batch, insertMergelogSQL, r, ids); err != nil {
		return atRow(err, func(i int) string { return "save mergelog of CPID " + ms[i].CPID })
	}
	src := newRows(3)
	defer src.put()
	for i := range ms {
		if ids[i] == 0 {
			continue
		}
		for j, sc := range ms[i].Sources {
			src.int(ids[i])
			src.int(int64(j))
			src.text(sc)
		}
	}
	if src.len() == 0 {
		return nil
	}
	if err := sv.execBatch(ctx, insertSourceSQL, src); err != nil {
		return fmt.Errorf("save the sources of mergelogs: %w", err)
	}
	return nil
}

// revisionRow appends the values of x's revisions row to r.
func revisionRow(r *rows, x *cpid.Write, cluster string) {
	r.int(x.EventID)
	r.text(x.Key.Group)
	r.text(x.Key.Resource)
	r.text(x.Key.Namespace)
	r.text(x.Key.Name)
	r.int(int64(x.Seq))
	r.text(x.OrderBy)
	r.int(b2i(x.Attempt))
	r.int(x.StageNS)
	r.text(x.Writer.Name)
	r.int(b2i(x.Writer.User))
	r.textOrNull(x.CPID)
	r.textOrNull(x.CPIDOrigin)
	r.intOrNull(x.CauseEventID)
	r.textOrNull(x.Rule)
	r.textOrNull(x.ChangeID)
	if x.CauseEventID != 0 {
		r.int(x.HopNS)
	} else {
		r.null()
	}
	r.text(cluster)
	r.textOrNull(string(x.Explain))
	r.textOrNull(x.ExplainDetail)
	r.textOrNull(string(x.Confidence))
}

// revisionColumns is the number of columns of insertRevision.
const revisionColumns = 21

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// revBatch is how many revisions a bulk insert statement stores.
const revBatch = 16

func (sv *deriveTx) closeStmts() {
	for i, st := range sv.stmts {
		if st != nil {
			st.Close()
			sv.stmts[i] = nil
		}
	}
}

// commit commits the open transaction.
func (sv *deriveTx) commit() error {
	if sv.tx == nil {
		return nil
	}
	sv.closeStmts()
	err := sv.tx.Commit()
	sv.tx = nil
	return errors.Join(err, sv.release())
}

// restore gives conn the writer's settings back, foreign keys on.
func (sv *deriveTx) restore(ctx context.Context, conn *sql.Conn) error {
	settings := []string{`PRAGMA foreign_keys = ON`}
	if sv.reset {
		settings = append(settings, writerSettings...)
	}
	return apply(ctx, conn, settings...)
}

// release gives the writer connection back with its settings.
func (sv *deriveTx) release() error {
	err := sv.restore(context.Background(), sv.conn)
	err = errors.Join(err, sv.conn.Close())
	sv.conn = nil
	return err
}

// abort rolls back the open transaction, if any.
func (sv *deriveTx) abort() {
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
func (sv *deriveTx) exec(i int, args ...any) (sql.Result, error) {
	return sv.stmts[i].ExecContext(context.Background(), args...)
}

// Save stores rows (cpid.DeriveTx).
func (sv *deriveTx) Save(ctx context.Context, out *cpid.Derived) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := sv.begin(ctx); err != nil {
		return err
	}
	if testHookSave != nil {
		testHookSave()
	}
	if err := sv.saveRevisions(out.Writes); err != nil {
		return err
	}
	if err := sv.saveMergelogs(ctx, out.Mergelogs); err != nil {
		return err
	}
	if len(out.Changes) > 0 {
		// By the batch in C on a native store, as the revisions.
		r := newRows(6)
		for _, c := range out.Changes {
			r.text(c.ID)
			r.int(c.StartNS)
			r.text(string(c.Trigger))
			r.text(c.Detail)
			r.text(c.Traceparent)
			r.int(c.EventID)
		}
		err := sv.execBatch(ctx, insertChangeSQL, r)
		r.put()
		if err != nil {
			return atRow(err, func(i int) string { return "save change " + out.Changes[i].ID })
		}
	}
	for _, a := range out.Anomalies {
		if _, err := sv.exec(stAnomaly, a.Kind, a.EventID, a.Key.Group, a.Key.Resource, a.Key.Namespace, a.Key.Name, a.Detail, sv.cluster); err != nil {
			return err
		}
	}
	for _, x := range out.Spans {
		if _, err := sv.exec(stSpan, x.SpanID, x.ParentID, x.CPID, x.Service, x.Name, x.StartNS, x.EndNS,
			cpid.JSONText(x.Attrs), x.LogID, sv.cluster); err != nil {
			return err
		}
	}
	return sv.saveObjects(ctx, out.Objects)
}

// Step commits what is stored so far (cpid.DeriveTx); the next Save opens
// the next transaction.
func (sv *deriveTx) Step(ctx context.Context) error {
	if err := sv.commit(); err != nil {
		return err
	}
	sv.steps++
	if testHookStep != nil {
		return testHookStep(sv.steps)
	}
	return nil
}

// reader is where the run reads back what it stored: after a step, with
// no transaction open and everything committed, the reader pool, so that
// the reads of a live run's end do not hold the write lock a tailer
// waits for; else the open transaction, which holds what is not
// committed yet.
func (sv *deriveTx) reader(ctx context.Context) (interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, error) {
	if sv.tx == nil && sv.cleared && sv.steps > 0 {
		return sv.st.r, nil
	}
	if err := sv.begin(ctx); err != nil {
		return nil, err
	}
	return sv.tx, nil
}

// Revisions reads back the stored writes of an object (cpid.DeriveTx).
func (sv *deriveTx) Revisions(ctx context.Context, k cpid.ObjectKey) ([]cpid.Placed, error) {
	q, err := sv.reader(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, objectRevisionsSQL, k.Group, k.Resource, k.Namespace, k.Name, sv.cluster)
	if err != nil {
		return nil, err
	}
	return placedRows(rows, nil)
}

// objectRevisionsSQL reads an object's writes, by revisions_object.
const objectRevisionsSQL = `SELECT r.event_id, e.resource_version, r.stage_ns, r.seq, r.order_by
	FROM revisions r JOIN audit_events e ON e.id = r.event_id
	WHERE r.api_group = ? AND r.resource = ? AND r.namespace = ? AND r.name = ? AND r.cluster = ?`

// placedRows reads objectRevisionsSQL's rows, appended to out.
func placedRows(rows *sql.Rows, out []cpid.Placed) ([]cpid.Placed, error) {
	defer rows.Close()
	for rows.Next() {
		var p cpid.Placed
		if err := rows.Scan(&p.EventID, &p.ResourceVersion, &p.StageNS, &p.Seq, &p.OrderBy); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// Objects gives the objects what need says of each (cpid.DeriveTx), from
// one read of their keys (objectKeys): those to time order an update each,
// by the batch in C on a native store (reading their writes back took
// 0.7 s of a rebuild of 1M synthetic events, whose 7,302 such objects were
// half of its objects); those whose writes are needed a seek each (a sort
// of every write, joined with its event, took 1.5 s).
func (sv *deriveTx) Objects(ctx context.Context, need func(cpid.ObjectKey) cpid.ObjectNeed, fn func(cpid.ObjectKey, []cpid.Placed) error) error {
	keys, err := sv.objectKeys(ctx, need)
	if err != nil {
		return err
	}
	if ks := keys[cpid.NeedTimeOrder]; len(ks) > 0 {
		r := newRows(5)
		defer r.put()
		for _, k := range ks {
			r.text(k.Group)
			r.text(k.Resource)
			r.text(k.Namespace)
			r.text(k.Name)
			r.text(sv.cluster)
		}
		if err := sv.execBatch(ctx, timeOrderSQL, r); err != nil {
			return err
		}
	}
	if len(keys[cpid.NeedWrites]) == 0 {
		return nil
	}
	st, err := sv.tx.PrepareContext(ctx, objectRevisionsSQL)
	if err != nil {
		return err
	}
	defer st.Close()
	var rs []cpid.Placed
	for _, k := range keys[cpid.NeedWrites] {
		rows, err := st.QueryContext(ctx, k.Group, k.Resource, k.Namespace, k.Name, sv.cluster)
		if err != nil {
			return err
		}
		if rs, err = placedRows(rows, rs[:0]); err != nil {
			return err
		}
		if err := fn(k, rs); err != nil {
			return err
		}
	}
	return nil
}

// timeOrderSQL sets an object's writes to time order, by revisions_object
// (TestObjectKeysIndexUsed).
const timeOrderSQL = `UPDATE revisions SET order_by = 'time'
	WHERE api_group = ? AND resource = ? AND namespace = ? AND name = ? AND cluster = ? AND order_by <> 'time'`

// objectKeys reads the keys of the cluster's objects, by what need says of
// them (NeedNothing's left out). A bulk load's indexes are built first:
// the keys are then one read of revisions_object, without the table, and
// each object a seek.
func (sv *deriveTx) objectKeys(ctx context.Context, need func(cpid.ObjectKey) cpid.ObjectNeed) (map[cpid.ObjectNeed][]cpid.ObjectKey, error) {
	if err := sv.begin(ctx); err != nil {
		return nil, err
	}
	if err := sv.createIndexes(ctx); err != nil {
		return nil, err
	}
	rows, err := sv.tx.QueryContext(ctx, objectKeysSQL, sv.cluster)
	if err != nil {
		return nil, err
	}
	keys := map[cpid.ObjectNeed][]cpid.ObjectKey{}
	for rows.Next() {
		var k cpid.ObjectKey
		if err := rows.Scan(&k.Resource, &k.Namespace, &k.Name, &k.Group); err != nil {
			rows.Close()
			return nil, err
		}
		if n := need(k); n != cpid.NeedNothing {
			keys[n] = append(keys[n], k)
		}
	}
	return keys, errors.Join(rows.Err(), rows.Close())
}

// objectKeysSQL reads the keys of a cluster's objects in the order of
// revisions_object (TestObjectKeysIndexUsed).
const objectKeysSQL = `SELECT DISTINCT resource, namespace, name, api_group FROM revisions WHERE cluster = ?`

// ChangeWrites reads back the stored writes of a change (cpid.DeriveTx):
// the columns a summary reads.
func (sv *deriveTx) ChangeWrites(ctx context.Context, change string) ([]cpid.Write, error) {
	q, err := sv.reader(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, `SELECT event_id, stage_ns, api_group, resource, namespace, name, attempt,
		COALESCE(cause_event_id, 0), COALESCE(hop_ns, 0) FROM revisions WHERE change_id = ?`, change)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []cpid.Write
	for rows.Next() {
		w := cpid.Write{ChangeID: change}
		if err := rows.Scan(&w.EventID, &w.StageNS, &w.Key.Group, &w.Key.Resource, &w.Key.Namespace, &w.Key.Name,
			&w.Attempt, &w.CauseEventID, &w.HopNS); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// Renumber sets the places of writes (cpid.DeriveTx), by event ID (the
// table's key: no index needed).
func (sv *deriveTx) Renumber(ctx context.Context, ps []cpid.Placed) error {
	if len(ps) == 0 {
		return nil
	}
	if err := sv.begin(ctx); err != nil {
		return err
	}
	// By the batch in C on a native store, row by row otherwise.
	r := newRows(3)
	defer r.put()
	for _, p := range ps {
		r.int(int64(p.Seq))
		r.text(p.OrderBy)
		r.int(p.EventID)
	}
	return sv.execBatch(ctx, `UPDATE revisions SET seq = ?, order_by = ? WHERE event_id = ?`, r)
}

// Summarize sets the summaries of changes (cpid.DeriveTx); a change that
// settled at 0 keeps its settled time. Their postings are stored
// again from their writes, but in a bulk load: Finish stores every
// change's at once, when the indexes are back.
func (sv *deriveTx) Summarize(ctx context.Context, cs []cpid.ChangeSummary) error {
	if len(cs) == 0 {
		return nil
	}
	if err := sv.begin(ctx); err != nil {
		return err
	}
	up, err := sv.tx.PrepareContext(ctx, `UPDATE changes SET settled_ns = COALESCE(?, settled_ns), writes = ?, objects = ?,
		slowest_hop_ns = ?, slowest_hop_event_id = ? WHERE id = ?`)
	if err != nil {
		return err
	}
	defer up.Close()
	for _, c := range cs {
		if _, err := up.ExecContext(ctx, nullInt64(c.SettledNS), c.Writes, c.Objects,
			nullInt64If(c.SlowestHopEventID != 0, c.SlowestHopNS), nullInt64(c.SlowestHopEventID), c.ID); err != nil {
			return err
		}
	}
	if sv.bulk {
		return nil
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return refreshSearch(ctx, sv.tx, jsonList(ids))
}

// Abort rolls back the open transaction, if any (cpid.DeriveTx).
func (sv *deriveTx) Abort() { sv.abort() }

// testHookStep, set by tests, is called after each step a saver commits;
// an error it returns ends the run there, as a crash would.
var testHookStep func(step int) error

// testHookSave, set by tests, is called as each Output is saved.
var testHookSave func()

// createIndexes creates the indexes a bulk load dropped, once.
func (sv *deriveTx) createIndexes(ctx context.Context) error {
	for len(sv.indexes) > 0 {
		q := sv.indexes[0]
		if _, err := sv.tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create index again: %w", err)
		}
		// Each sort's memory goes back as it ends, not held by its
		// threads' arenas to the run's end.
		trimCHeap()
		sv.indexes = sv.indexes[1:]
	}
	return nil
}

// Finish creates the indexes a bulk load dropped, moves the watermark and
// commits (cpid.DeriveTx).
func (sv *deriveTx) Finish(ctx context.Context, w cpid.Watermark) error {
	if err := sv.begin(ctx); err != nil {
		return err
	}
	if err := sv.createIndexes(ctx); err != nil {
		return err
	}
	if sv.triggers != nil {
		if err := fillCPIDIDs(ctx, sv.tx, sv.st.batch); err != nil {
			return fmt.Errorf("count the CPIDs of the merge graph: %w", err)
		}
		for _, q := range sv.triggers {
			if _, err := sv.tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("create trigger again: %w", err)
			}
		}
	}
	if sv.bulk {
		if err := fillSearch(ctx, sv.tx, sv.cluster); err != nil {
			return fmt.Errorf("store the postings of the changes: %w", err)
		}
	} else if len(sv.stale) > 0 {
		if err := refreshSearch(ctx, sv.tx, jsonList(sv.stale)); err != nil {
			return fmt.Errorf("store the postings of the changes redone: %w", err)
		}
	}
	for k, v := range w.Fields() {
		if _, err := sv.tx.ExecContext(ctx, `INSERT OR REPLACE INTO reconstruct_state(cluster, key, value) VALUES (?, ?, ?)`,
			sv.cluster, k, v); err != nil {
			return err
		}
	}
	if err := sv.saveObjects(ctx, w.Objects); err != nil {
		return fmt.Errorf("save the objects' states: %w", err)
	}
	return sv.commit()
}
