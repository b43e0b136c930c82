package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cpid-dev/cpid"
)

// This file holds the read queries of the terminal UI (cpid-tui browse).
// Each is bounded: a page, one change, or one object, never the whole
// database.

// DataVersion reads the fingerprint. Every part is an index lookup.
func (s *Store) DataVersion(ctx context.Context) (cpid.DataVersion, error) {
	var v cpid.DataVersion
	// reconstruct_state.value is a BLOB column holding integers for these
	// keys; CAST keeps the scan type stable.
	err := s.r.QueryRowContext(ctx, `SELECT
		(SELECT COALESCE(max(id), 0) FROM audit_events),
		(SELECT COALESCE(max(id), 0) FROM log_records),
		(SELECT COALESCE(max(stage_ns), 0) FROM audit_events),
		COALESCE((SELECT max(CAST(value AS INTEGER)) FROM reconstruct_state WHERE key = ?2 AND (?1 = '' OR cluster = ?1)), 0),
		COALESCE((SELECT max(CAST(value AS INTEGER)) FROM reconstruct_state WHERE key = ?3 AND (?1 = '' OR cluster = ?1)), 0)`,
		s.cluster, cpid.WatermarkEventID, cpid.WatermarkCutoffNS).
		Scan(&v.Events, &v.Logs, &v.NewestNS, &v.Reconstructed, &v.CutoffNS)
	if err != nil {
		return v, fmt.Errorf("data version: %w", err)
	}
	return v, nil
}

// CountChanges counts the changes that Changes lists for the same filter
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) CountChanges(ctx context.Context, filter string) (int, error) {
	return cpid.ReadService{Rows: s}.CountChanges(ctx, filter)
}

// changeFilter is the WHERE clause of a ChangeQuery's filters within the
// view's cluster, for a page of the changes or (page false) their count.
func (s *Store) changeFilter(q cpid.ChangeQuery, page bool) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, a ...any) { conds, args = append(conds, cond), append(args, a...) }
	if s.cluster != "" {
		add(`c.cluster = ?`, s.cluster)
	}
	if q.Filter != "" {
		cond, a := filterCond(q.Filter, page)
		add(cond, a...)
	}
	if q.IDPrefix != "" {
		// A range of the primary key, not substr(): the ids that start
		// with it come from the index, not every change's (12.8 -> 0.1 ms
		// at 56,818 changes). char(1114111) sorts after every character.
		add(`c.id >= ? AND c.id < ? || char(1114111)`, q.IDPrefix, q.IDPrefix)
	}
	if q.SinceNS != 0 {
		add(`c.started_ns >= ?`, q.SinceNS)
	}
	if q.UntilNS != 0 {
		add(`c.started_ns < ?`, q.UntilNS)
	}
	if q.Namespace != "" {
		add(`c.namespace = ?`, q.Namespace)
	}
	if k := q.Kind; k != nil {
		add(`c.resource IN (`+placeholders(len(k.Resources))+`)`, strArgs(k.Resources)...)
		if !k.AnyGroup {
			add(`c.api_group = ?`, k.Group)
		}
	}
	if q.User != "" {
		add(`instr(lower(c.user), ?) > 0`, q.User)
	}
	if q.Writer != "" {
		add(`c.id IN (SELECT change_id FROM revisions WHERE change_id IS NOT NULL AND instr(lower(writer), ?) > 0)`, q.Writer)
	}
	if q.MinDurationNS != 0 {
		add(`c.settled_ns - c.started_ns >= ?`, q.MinDurationNS)
	}
	if q.Trigger != "" {
		add(`c.trigger = ?`, string(q.Trigger))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return "WHERE " + strings.Join(conds, " AND "), args
}

// Changes lists root changes, one page (cpid.ChangeReader, through
// cpid.ReadService).
func (s *Store) Changes(ctx context.Context, q cpid.ChangeQuery) ([]cpid.ChangeRow, error) {
	return cpid.ReadService{Rows: s}.Changes(ctx, q)
}

// ChangesByID returns the changes with these ids, newest first
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) ChangesByID(ctx context.Context, ids []string) ([]cpid.ChangeRow, error) {
	return cpid.ReadService{Rows: s}.ChangesByID(ctx, ids)
}

// ChangesCarrying returns the ids of the changes that have a write carrying
// one of these CPIDs (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) ChangesCarrying(ctx context.Context, cpids []string) ([]string, error) {
	return cpid.ReadService{Rows: s}.ChangesCarrying(ctx, cpids)
}

// LinkedChanges returns the changes, other than change, that a CPID is
// linked to through the merge DAG (cpid.ChangeReader, through
// cpid.ReadService).
func (s *Store) LinkedChanges(ctx context.Context, change, cid string, ancestors bool) ([]cpid.ChangeRow, error) {
	return cpid.ReadService{Rows: s}.LinkedChanges(ctx, change, cid, ancestors)
}

// ChangeGraph reads the CPIDs, merges and objects of a change
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) ChangeGraph(ctx context.Context, change string) (cpid.ChangeGraph, error) {
	return cpid.ReadService{Rows: s}.ChangeGraph(ctx, change)
}

// ChangeLogs returns, in time order, at most limit log lines of a change
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) ChangeLogs(ctx context.Context, change string, limit int) (cpid.ChangeLogSet, error) {
	return cpid.ReadService{Rows: s}.ChangeLogs(ctx, change, limit)
}

// ChangeSpans returns the controller spans of a change's CPIDs, by start
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) ChangeSpans(ctx context.Context, change string) ([]cpid.ChangeSpan, error) {
	return cpid.ReadService{Rows: s}.ChangeSpans(ctx, change)
}

// Pool returns the change reads on the read pool (cpid.RowReader).
func (s *Store) Pool() cpid.ChangeRows { return reads{s.r, s} }

// Snapshot calls fn with the change reads in one read-only transaction
// (cpid.RowReader).
func (s *Store) Snapshot(ctx context.Context, fn func(cpid.ChangeRows) error) error {
	return s.snapshot(ctx, func(db querier) error { return fn(reads{db, s}) })
}

// reads are the change reads (cpid.ChangeRows) of a view (s) on the
// read pool or in a read transaction: each runs one statement.
type reads struct {
	db querier
	s  *Store
}

// ChangeExists reports whether the change is stored.
func (r reads) ChangeExists(ctx context.Context, change string) (bool, error) {
	var n int
	err := r.db.QueryRowContext(ctx, `SELECT count(*) FROM changes WHERE id = ?`, change).Scan(&n)
	return n > 0, err
}

// changeOrders are the ORDER BY of each of cpid.ChangeSorts.
var changeOrders = map[string]string{"time": "c.started_ns DESC", "duration": "(c.settled_ns - c.started_ns) DESC", "size": "c.writes DESC"}

// ChangePage returns the ids of a page of changes: from the changes table
// alone, so that a deep page or a sort by duration does not join and
// decode every row it sorts or skips.
func (r reads) ChangePage(ctx context.Context, q cpid.ChangeQuery) ([]string, error) {
	query, args := r.s.changePageSQL(q)
	return column(ctx, r.db, query, args...)
}

// changePageSQL is ChangePage's query. A filter's gate is its LIMIT: 0
// when it fails, and SQLite reads no change.
func (s *Store) changePageSQL(q cpid.ChangeQuery) (string, []any) {
	where, args := s.changeFilter(q, true)
	gate, gargs := changeGate(q)
	return `SELECT c.id FROM changes c ` + where + ` ORDER BY ` + changeOrders[q.Sort] + `, c.id
		LIMIT CASE WHEN ` + gate + ` THEN ? ELSE 0 END OFFSET ?`, slices.Concat(args, gargs, []any{q.Limit, q.Offset})
}

// ChangeCount counts the changes q's filters keep.
func (r reads) ChangeCount(ctx context.Context, q cpid.ChangeQuery) (int, error) {
	query, args := r.s.changeCountSQL(q)
	var n int
	err := r.db.QueryRowContext(ctx, query, args...).Scan(&n)
	return n, err
}

// changeCountSQL is ChangeCount's query: none counted, and no change
// read, when a filter's gate fails.
func (s *Store) changeCountSQL(q cpid.ChangeQuery) (string, []any) {
	where, args := s.changeFilter(q, false)
	gate, gargs := changeGate(q)
	return `SELECT CASE WHEN ` + gate + ` THEN (SELECT count(*) FROM changes c ` + where + `) ELSE 0 END`, slices.Concat(gargs, args)
}

// changeGate is what q's changes are read under: filterGate of its filter.
func changeGate(q cpid.ChangeQuery) (string, []any) {
	if q.Filter == "" {
		return `TRUE`, nil
	}
	return filterGate(q.Filter)
}

// ChangeRowsByID reads cpid.ChangeColumns. The body of a change's first
// write is looked up only for a resource that is no built-in one (a
// subquery in the CASE): joined, it was for every change (200 changes, a
// page of the terminal UI: 3.2 -> 1.7 ms at ten million events).
func (r reads) ChangeRowsByID(ctx context.Context, ids []string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, r.db, `SELECT c.id, c.started_ns, c.settled_ns, c.user, e.user_agent, c.verb,
		COALESCE(CASE WHEN c.subresource = '' AND c.resource NOT IN (`+cpid.BuiltinResourcesSQL+`)
			THEN (SELECT NULLIF(b.response_object ->> '$.kind', 'Status') FROM audit_bodies b WHERE b.event_id = c.event_id) END, ''),
		c.api_group, c.resource, c.subresource,
		c.namespace, c.name, c.writes, c.objects, COALESCE(c.slowest_hop_ns, 0), c.cluster, c.trigger, c.trigger_detail, c.traceparent
		FROM changes c JOIN audit_events e ON e.id = c.event_id
		WHERE c.id IN `+inJSON+` ORDER BY c.started_ns DESC, c.id`, []any{jsonList(ids)}, row)
}

// LinkedIDs returns the change ids of the writes carrying a CPID linked
// to cid in the merge DAG.
func (r reads) LinkedIDs(ctx context.Context, cid string, up bool) ([]string, error) {
	walk := descendants("g", "?")
	if up {
		walk = ancestorsOf("g", "?")
	}
	// No condition on change_id: the planner would scan revisions_change
	// rather than look up the few CPIDs.
	return column(ctx, r.db, walk+`
		SELECT DISTINCT COALESCE(change_id, '') FROM revisions WHERE cpid IN (SELECT cpid FROM g)`, cid)
}

// CarryingIDs returns the change ids of the writes carrying these CPIDs.
func (r reads) CarryingIDs(ctx context.Context, cpids []string) ([]string, error) {
	// No condition on change_id: the planner would scan revisions_change.
	return column(ctx, r.db, `SELECT DISTINCT COALESCE(change_id, '') FROM revisions
		WHERE cpid IN `+inJSON+` ORDER BY 1`, jsonList(cpids))
}

// GraphObjectRows reads cpid.GraphObjectColumns.
func (r reads) GraphObjectRows(ctx context.Context, change string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, r.db, `SELECT r.cpid, COALESCE(min(r.cpid_origin), ''), r.api_group, r.resource, r.namespace,
		r.name, r.writer, sum(r.attempt = 0), sum(r.attempt), min(r.stage_ns)
		FROM revisions r WHERE r.change_id = ? AND r.cpid IS NOT NULL
		GROUP BY r.cpid, r.api_group, r.resource, r.namespace, r.name, r.writer
		ORDER BY min(r.stage_ns), r.event_id`, []any{change}, row)
}

// MergeRows reads cpid.MergeColumns.
func (r reads) MergeRows(ctx context.Context, cpids []string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, r.db, `SELECT m.id, m.cpid, m.origin, m.service, m.ts_ns, COALESCE(x.source_cpid, '')
		FROM mergelogs m LEFT JOIN mergelog_sources x ON x.mergelog_id = m.id
		WHERE m.cpid IN `+inJSON+` ORDER BY m.ts_ns, m.id, x.pos`, []any{jsonList(cpids)}, row)
}

// CarrierRows reads the CPIDs and the changes of the writes carrying them.
func (r reads) CarrierRows(ctx context.Context, cpids []string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, r.db, `SELECT DISTINCT cpid, COALESCE(change_id, '') FROM revisions
		WHERE cpid IN `+inJSON+` ORDER BY cpid, 2`, []any{jsonList(cpids)}, row)
}

// ChangeWindowRow reads the start, the end and the cluster of a change.
func (r reads) ChangeWindowRow(ctx context.Context, change string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, r.db, `SELECT started_ns, settled_ns, cluster FROM changes WHERE id = ?`, []any{change}, row)
}

// ChangeWriters returns the writers of a change that are no user.
func (r reads) ChangeWriters(ctx context.Context, change string) ([]string, error) {
	return column(ctx, r.db, `SELECT writer FROM revisions WHERE change_id = ? AND writer_is_user = 0
		GROUP BY writer ORDER BY min(stage_ns)`, change)
}

// relatedCPIDs is the WITH clause of the CPIDs related to a change (its
// first argument, twice): its root's and those descending from it, and
// those its writes carry, as the table rel(cpid).
var relatedCPIDs = descendants("rel", "? UNION SELECT cpid FROM revisions WHERE change_id = ? AND cpid IS NOT NULL")

// LogRows reads cpid.LogColumns for the lines of q.
func (r reads) LogRows(ctx context.Context, q cpid.LogQuery, row func(cpid.RowScan) error) error {
	// A line of the window is the change's if it carries one of its
	// CPIDs, or if its process is a writer's or logged one of its CPIDs.
	procs := []string{`l.file_id IN (SELECT file_id FROM log_records WHERE cpid IN (SELECT cpid FROM rel))`}
	args := []any{q.Change, q.Change, q.FromNS, q.ToNS, q.Cluster}
	for _, p := range q.Patterns {
		procs = append(procs, "lower(f.path) LIKE ? OR lower(l.component) LIKE ?")
		args = append(args, p, p)
	}
	return eachRow(ctx, r.db, relatedCPIDs+`
		SELECT l.id, l.ts_ns, l.level, l.component, l.msg, COALESCE(l.cpid, ''), l.fields, f.path, l.line
		FROM log_records l JOIN files f ON f.id = l.file_id
		WHERE l.ts_ns BETWEEN ? AND ? AND (l.cpid IN (SELECT cpid FROM rel) OR l.cluster = ? AND (`+strings.Join(procs, " OR ")+`))
		ORDER BY l.ts_ns, l.id LIMIT ?`, append(args, q.Limit), row)
}

// LogsCarry reports whether a line of [fromNS, toNS] carries a CPID
// related to the change.
func (r reads) LogsCarry(ctx context.Context, change string, fromNS, toNS int64) (bool, error) {
	var ok bool
	err := r.db.QueryRowContext(ctx, relatedCPIDs+`
		SELECT EXISTS (SELECT 1 FROM log_records WHERE cpid IN (SELECT cpid FROM rel) AND ts_ns BETWEEN ? AND ?)`,
		change, change, fromNS, toNS).Scan(&ok)
	return ok, err
}

// ChangeSpanRows reads the controller spans of a change's CPIDs.
func (r reads) ChangeSpanRows(ctx context.Context, change string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, r.db, `SELECT span_id, parent_id, cpid, service, name, start_ns, end_ns
		FROM controller_spans WHERE cpid IN (SELECT DISTINCT cpid FROM revisions WHERE change_id = ? AND cpid IS NOT NULL)
		ORDER BY start_ns, span_id`, []any{change}, row)
}

// querier runs queries: the read pool, or a read transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// snapshot runs fn in one read-only transaction, so that the queries of one
// method see one state of the database while ingest, tail or reconstruct
// write to it.
func (s *Store) snapshot(ctx context.Context, fn func(q querier) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(tx)
}

func column(ctx context.Context, db querier, q string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// inJSON is the list of a condition "x IN (...)" whose values are one
// argument, a JSON array (jsonList): any number of them, where one
// placeholder each would stop at SQLite's limit of 32766 (an export of
// every change of a large database).
const inJSON = `(SELECT value FROM json_each(?))`

// jsonList is the argument of inJSON.
func jsonList(ss []string) string {
	b, _ := json.Marshal(ss)
	return string(b)
}

func strArgs(ss []string) []any {
	args := make([]any, len(ss))
	for i, s := range ss {
		args[i] = s
	}
	return args
}

var _ cpid.ChangeReader = (*Store)(nil)
