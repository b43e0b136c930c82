package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/cpid-dev/cpid/reconstruct"
)

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
	stmts   [len(saverSQL) + 1]*sql.Stmt // saverSQL's, then (full rebuild) revisions by revBatch
	args    []any
	rows    int // rows written in the open transaction
	steps   int // transactions committed
	cleared bool

	// A full rebuild in one transaction (book not nil) loads the tables
	// without their indexes (a third of the time, not a whole one) and
	// creates them again in finish: indexes holds their SQL, and book what
	// the indexes would give meanwhile.
	indexes []string
	book    *bulkBook

	// An incremental run (book nil) finishes from the table: the changes
	// and objects it touched.
	changes map[string]bool
	reorder map[reconstruct.ObjectKey]bool
	relabel map[reconstruct.ObjectKey]bool
}

// insertRevision stores a revision; an incremental run replaces what a
// crashed run may have left, a full rebuild writes an empty table.
const insertRevision = ` INTO revisions(event_id, api_group, resource, namespace, name, seq, order_by, attempt,
		stage_ns, writer, writer_is_user, cpid, cpid_origin, cause_event_id, cause_rule, change_id, hop_ns)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// The saver's statements, by index.
const (
	stRevision = iota
	stMergelog
	stSource
	stChange
	stAnomaly
	stSpan
	stRevisions // a full rebuild's revBatch revisions
)

var saverSQL = [...]string{
	`INSERT OR REPLACE` + insertRevision,
	`INSERT OR IGNORE INTO mergelogs(cpid, ts_ns, service, origin, event_id) VALUES (?, ?, ?, ?, ?)`,
	`INSERT INTO mergelog_sources(mergelog_id, pos, source_cpid) VALUES (?, ?, ?)`,
	`INSERT OR REPLACE INTO changes(id, event_id, started_ns, settled_ns, user, verb, api_group, resource,
		subresource, namespace, name, writes, objects)
		SELECT ?, id, ?, stage_ns, username, verb, api_group, resource, subresource, namespace, name, 0, 0
		FROM audit_events WHERE id = ?`,
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
		sv.book = newBulkBook()
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
			if err = resetReconstruction(ctx, tx); err == nil && sv.book != nil {
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
		if sv.stmts[i], err = tx.PrepareContext(ctx, q); err != nil {
			sv.abort()
			return err
		}
	}
	if sv.book != nil {
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
	for ; sv.book != nil && len(ws) >= revBatch; ws = ws[revBatch:] {
		sv.args = sv.args[:0]
		for i := range ws[:revBatch] {
			sv.args = revisionArgs(sv.args, &ws[i])
		}
		if _, err := sv.exec(stRevisions, sv.args...); err != nil {
			return fmt.Errorf("save revisions of events %d to %d: %w", ws[0].EventID, ws[revBatch-1].EventID, err)
		}
		sv.rows += revBatch - 1
	}
	for i := range ws {
		if _, err := sv.exec(stRevision, revisionArgs(sv.args[:0], &ws[i])...); err != nil {
			return fmt.Errorf("save revision of event %d: %w", ws[i].EventID, err)
		}
	}
	for i, x := range out.Writes {
		if sv.book != nil {
			sv.book.add(&out.Writes[i])
		} else if x.ChangeID != "" {
			sv.changes[x.ChangeID] = true
		}
	}
	for k := range out.Reorder {
		sv.reorder[k] = true
	}
	for k := range out.Relabel {
		sv.relabel[k] = true
	}
	for _, m := range out.Mergelogs {
		// Without its unique index, a full rebuild keeps (cpid, origin)
		// unique itself.
		if sv.book != nil && !sv.book.first(m.CPID, m.Origin) {
			continue
		}
		r, err := sv.exec(stMergelog, m.CPID, m.TimeNS, m.Service, string(m.Origin), nullInt64(m.EventID))
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 0 {
			continue
		}
		id, _ := r.LastInsertId()
		for i, sc := range m.Sources {
			if _, err := sv.exec(stSource, id, i, sc); err != nil {
				return err
			}
		}
	}
	for _, c := range out.Changes {
		if _, err := sv.exec(stChange, c.ID, c.StartNS, c.EventID); err != nil {
			return err
		}
		if sv.book == nil {
			sv.changes[c.ID] = true
		}
	}
	for _, a := range out.Anomalies {
		if _, err := sv.exec(stAnomaly, a.Kind, a.EventID, a.Key.Group, a.Key.Resource, a.Key.Namespace, a.Key.Name, a.Detail); err != nil {
			return err
		}
	}
	for _, x := range out.Spans {
		if _, err := sv.exec(stSpan, x.SpanID, x.ParentID, x.CPID, x.Service, x.Name, x.StartNS, x.EndNS,
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
