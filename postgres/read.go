package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cpid-dev/cpid"
)

var _ cpid.ChangeReader = (*Store)(nil)

// reader runs queries: the pool, or a read transaction.
type reader interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// snapshot runs fn in one read-only REPEATABLE READ transaction, so that
// the queries of one method see one state of the database while tailers
// write to it.
func (s *Store) snapshot(ctx context.Context, fn func(reader) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error { return fn(tx) })
}

// strs reads a one-column result of strings.
func strs(ctx context.Context, db reader, q string, args ...any) ([]string, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// walk is the WITH clause of the walk of the merge DAG from the CPIDs that
// seed selects, as the table name(cpid): down to every CPID descending
// from them, or with up, up to every CPID they descend from.
func walk(name, seed string, up bool) string {
	step := `SELECT m.cpid FROM ` + name + ` JOIN mergelog_sources x ON x.source_cpid = ` + name + `.cpid
		JOIN mergelogs m ON m.id = x.mergelog_id`
	if up {
		step = `SELECT x.source_cpid FROM ` + name + ` JOIN mergelogs m ON m.cpid = ` + name + `.cpid
		JOIN mergelog_sources x ON x.mergelog_id = m.id`
	}
	return `WITH RECURSIVE ` + name + `(cpid) AS (SELECT ` + seed + ` UNION ` + step + `)`
}

// DataVersion reads what changes whenever readers may see something new.
func (s *Store) DataVersion(ctx context.Context) (cpid.DataVersion, error) {
	var v cpid.DataVersion
	err := s.pool.QueryRow(ctx, `SELECT
		(SELECT COALESCE(max(id), 0) FROM audit_events),
		(SELECT COALESCE(max(id), 0) FROM log_records),
		(SELECT COALESCE(max(stage_ns), 0) FROM audit_events),
		COALESCE((SELECT max(convert_from(value, 'UTF8')::bigint) FROM reconstruct_state
		          WHERE key = $2 AND ($1 = '' OR cluster = $1)), 0),
		COALESCE((SELECT max(convert_from(value, 'UTF8')::bigint) FROM reconstruct_state
		          WHERE key = $3 AND ($1 = '' OR cluster = $1)), 0)`, s.cluster, cpid.WatermarkEventID, cpid.WatermarkCutoffNS).
		Scan(&v.Events, &v.Logs, &v.NewestNS, &v.Reconstructed, &v.CutoffNS)
	if err != nil {
		return v, fmt.Errorf("data version: %w", err)
	}
	return v, nil
}

// filter is the WHERE clause of a changes listing: the view's cluster and
// a ChangeQuery's filters, with its arguments numbered from $1.
func (s *Store) filter(q cpid.ChangeQuery) (string, []any) {
	where, _, _, args := s.filterParts(q, true)
	return where, args
}

// filterParts is filter's WHERE clause (for a page, or for a count: how
// the postings are read), the same without the conditions of q.Filter
// (its gate and its condition; the other conditions' arguments keep their
// numbers), q.Filter's SQL (zero for none), and the arguments.
func (s *Store) filterParts(q cpid.ChangeQuery, page bool) (where, others string, fs filterSQL, args []any) {
	var conds, rest []string
	// add appends a condition whose %[1]d is its argument's number.
	add := func(cond string, a any) {
		args = append(args, a)
		conds = append(conds, fmt.Sprintf(cond, len(args)))
		rest = append(rest, conds[len(conds)-1])
	}
	if s.cluster != "" {
		add(`c.cluster = $%[1]d`, s.cluster)
	}
	if q.Filter != "" {
		args = append(args, q.Filter)
		fs = newFilterSQL(q.Filter, len(args), &args)
		conds = append(conds, fs.gate, fs.cond(page))
	}
	if q.IDPrefix != "" {
		add(`starts_with(c.id, $%[1]d)`, q.IDPrefix)
	}
	if q.SinceNS != 0 {
		add(`c.started_ns >= $%[1]d`, q.SinceNS)
	}
	if q.UntilNS != 0 {
		add(`c.started_ns < $%[1]d`, q.UntilNS)
	}
	if q.Namespace != "" {
		add(`c.namespace = $%[1]d`, q.Namespace)
	}
	if k := q.Kind; k != nil {
		add(`c.resource = ANY($%[1]d)`, k.Resources)
		if !k.AnyGroup {
			add(`c.api_group = $%[1]d`, k.Group)
		}
	}
	if q.User != "" {
		add(`strpos(lower(c."user"), $%[1]d) > 0`, q.User)
	}
	if q.Writer != "" {
		add(`c.id IN (SELECT change_id FROM revisions WHERE change_id IS NOT NULL AND strpos(lower(writer), $%[1]d) > 0)`, q.Writer)
	}
	if q.MinDurationNS != 0 {
		add(`c.settled_ns - c.started_ns >= $%[1]d`, q.MinDurationNS)
	}
	if q.Trigger != "" {
		add(`c.trigger = $%[1]d`, string(q.Trigger))
	}
	if len(conds) == 0 {
		return "", "", fs, nil
	}
	if len(rest) > 0 {
		others = "WHERE " + strings.Join(rest, " AND ")
	}
	return "WHERE " + strings.Join(conds, " AND "), others, fs, args
}

// writeValues is the condition on search_terms of the values of the
// writes that hold a filter (argument arg, lowercase): a name or a writer
// that contains it, a verb[/subresource] when the filter may name one,
// the code it is when it is one (its argument appended to args).
func writeValues(filter string, arg int, args *[]any) string {
	cond := fmt.Sprintf(`kind = 'write' AND strpos(term, $%d) > 0`, arg)
	verb, code := cpid.FilterWrites(filter)
	if verb {
		cond += fmt.Sprintf(` OR kind = 'verb' AND strpos(term, $%d) > 0`, arg)
	}
	if code != 0 {
		// A code is a value of its own: the filter must be the code, not
		// a part of one.
		*args = append(*args, strconv.Itoa(code))
		cond += fmt.Sprintf(` OR kind = 'code' AND term = $%d`, len(*args))
	}
	return cond
}

// filterSQL is the SQL of a changes filter (lowercase), its arguments
// numbered: a filter keeps a change whose own row contains it (column
// search: its columns, lowercase, apart by a control character that no
// filter holds, so that a filter cannot match across two of them;
// migration 0010), or that has a write whose object name or writer does,
// or (when the filter may name one) whose verb[/subresource] does or whose
// code it is (a failing code a failed write's). Matched as text, not as a
// LIKE pattern: a filter with % or _ finds those characters, as in
// SQLite.
//
// What the writes hold is read from change_terms (migration 0019), the
// postings of the values of search_terms that the writes of each change
// hold, by the changes' numbers, which reconstruct keeps
// (postgres/terms.go): the values that hold the filter are found among
// search_terms' (an array, computed once), then their postings read
// (cond). Each part names no column of the changes, so that PostgreSQL
// computes it once, before it reads any change.
type filterSQL struct {
	arg int // the filter's argument
	// own holds when a change's own row may hold the filter: a value of
	// the changes' own rows does (search_terms, migration 0016), or the
	// filter may be part of any id (made of a UUID's characters), or it
	// holds the separator of the changes' texts (which search_terms
	// holds apart). Otherwise the text of no change is read.
	own string
	// values is the array of the numbers of the values of writes that
	// hold the filter.
	values string
	// gate holds when own does or some value of the writes holds the
	// filter: a filter that none holds (typing on past what any change
	// has) reads no change, where the count read every change's text at
	// each key and the page read them all looking for a page of matches.
	gate string
}

// newFilterSQL is the SQL of filter (argument arg), appending the
// arguments it needs to args.
func newFilterSQL(filter string, arg int, args *[]any) filterSQL {
	open := strings.ContainsRune(filter, '\x1f') || cpid.InAnyID(filter)
	*args = append(*args, open)
	fs := filterSQL{arg: arg}
	fs.own = fmt.Sprintf(`($%d OR EXISTS (SELECT 1 FROM search_terms WHERE kind NOT IN ('write', 'verb', 'code') AND strpos(term, $%d) > 0))`,
		len(*args), arg)
	values := writeValues(filter, arg, args)
	fs.values = `ARRAY(SELECT id FROM search_terms WHERE ` + values + `)`
	fs.gate = `(` + fs.own + ` OR EXISTS (SELECT 1 FROM search_terms WHERE ` + values + `))`
	return fs
}

// cond is the filter's condition on a change c: its own text, when own
// may hold it, or its postings. A count reads the postings of the values
// once, into a list of numbers that PostgreSQL hashes and tests each
// change against. A page stops at its last change: when the postings are
// many (at least a quarter as many as the changes, counted no further),
// and so likely most changes, it reads the postings of each change it
// tests (change_terms_change, a few rows), not all of them first ("up"
// among ten million events: 56,819 postings, read and hashed in 10-20 ms,
// where the page tests a few hundred changes). The OFFSET 0 keeps that
// EXISTS one: PostgreSQL turns an EXISTS it can into a hashed list of
// every posting of the values (an alternative chosen by the expected
// number of changes), which is the other way.
func (fs filterSQL) cond(page bool) string {
	list := fs.inPostings()
	if page {
		quarter := `(SELECT reltuples::bigint / 4 FROM pg_class WHERE oid = 'changes'::regclass)`
		list = `CASE WHEN (SELECT count(*) FROM (SELECT 1 FROM change_terms p WHERE p.term = ANY(` + fs.values + `) LIMIT ` + quarter + `) x) >= ` + quarter + `
			THEN EXISTS (SELECT 1 FROM change_terms p WHERE p.change = c.number AND p.term = ANY(` + fs.values + `) OFFSET 0)
			ELSE ` + list + ` END`
	}
	return fmt.Sprintf(`((%s AND strpos(c.search, $%d) > 0) OR %s)`, fs.own, fs.arg, list)
}

// inPostings holds for a change c that has a posting of a value that holds
// the filter: c among the changes of those postings, listed once.
func (fs filterSQL) inPostings() string {
	return `c.number IN (SELECT p.change FROM change_terms p WHERE p.term = ANY(` + fs.values + `))`
}

// CountChanges counts the changes Changes lists for the same filter
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) CountChanges(ctx context.Context, text string) (int, error) {
	return cpid.ReadService{Rows: s}.CountChanges(ctx, text)
}

// Changes lists root changes, one page (cpid.ChangeReader, through
// cpid.ReadService).
func (s *Store) Changes(ctx context.Context, q cpid.ChangeQuery) ([]cpid.ChangeRow, error) {
	return cpid.ReadService{Rows: s}.Changes(ctx, q)
}

// Pool returns the change reads on the pool (cpid.RowReader).
func (s *Store) Pool() cpid.ChangeRows { return reads{s.pool, s} }

// Snapshot calls fn with the change reads in one read-only transaction
// (cpid.RowReader).
func (s *Store) Snapshot(ctx context.Context, fn func(cpid.ChangeRows) error) error {
	return s.snapshot(ctx, func(db reader) error { return fn(reads{db, s}) })
}

// reads are the change reads (cpid.ChangeRows) of a view (s) on the
// pool or in a read transaction: each runs one statement.
type reads struct {
	db reader
	s  *Store
}

// ChangeExists reports whether the change is stored.
func (r reads) ChangeExists(ctx context.Context, change string) (bool, error) {
	var ok bool
	err := r.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM changes WHERE id = $1)`, change).Scan(&ok)
	return ok, err
}

// changeOrders are the ORDER BY of each of cpid.ChangeSorts.
var changeOrders = map[string]string{"time": "c.started_ns DESC", "duration": "(c.settled_ns - c.started_ns) DESC", "size": "c.writes DESC"}

// ChangePage returns the ids of a page of changes, from the changes table
// alone.
func (r reads) ChangePage(ctx context.Context, q cpid.ChangeQuery) ([]string, error) {
	where, args := r.s.filter(q)
	sql := changePageSQL(q.Sort, where, len(args))
	return strs(ctx, r.db, sql, append(args, q.Limit, q.Offset)...)
}

// changePageSQL is ChangePage's query in an order (cpid.ChangeSorts) with
// a WHERE clause of n arguments, then the limit and the offset. Each
// order is an index (migration 0017).
func changePageSQL(sort, where string, n int) string {
	return fmt.Sprintf(`SELECT c.id FROM changes c %s ORDER BY %s, c.id COLLATE "C" LIMIT $%d OFFSET $%d`,
		where, changeOrders[sort], n+1, n+2)
}

// ChangeCount counts the changes q's filters keep. A filter's count
// reads the changes from the index changes_search alone, in a transaction
// of its own with sequential scans off (countSettings): PostgreSQL costs
// the index's pages as random reads and read the table instead, every
// column of every change to test the text of each (37-68 ms against 18
// for 56,818 changes, the count of "n" at ten million events, each key
// typed in the terminal UI's filter).
func (r reads) ChangeCount(ctx context.Context, q cpid.ChangeQuery) (int, error) {
	var n int
	if q.Filter == "" {
		where, args := r.s.filter(q)
		return n, r.db.QueryRow(ctx, `SELECT count(*) FROM changes c `+where, args...).Scan(&n)
	}
	query, args := r.s.changeCountSQL(q)
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, countSettings); err != nil {
			return err
		}
		return tx.QueryRow(ctx, query, args...).Scan(&n)
	})
	return n, err
}

// changeCountSQL is the count of the changes q keeps, q with a filter.
// PostgreSQL runs the branch of the CASE it takes only:
//   - A filter that every value of one column of the changes holds
//     (search_terms by kind: every user, say, on ten million synthetic
//     events, for "n") is held by every change's own row: the changes that
//     q's other conditions keep are counted, from the smallest index (6-10
//     ms for 56,818), and the text of none is read (13-26 ms for "n").
//   - A filter that no change's own row may hold (filterSQL.own) keeps
//     the changes of the postings of the values that hold it: those are
//     counted, the text of no change read (15 ms among ten million
//     events, each change's text tested).
//   - Otherwise each change is tested (filterSQL.cond).
func (s *Store) changeCountSQL(q cpid.ChangeQuery) (string, []any) {
	where, others, fs, args := s.filterParts(q, false)
	postings := `(SELECT count(DISTINCT p.change) FROM change_terms p WHERE p.term = ANY(` + fs.values + `))`
	if others != "" {
		postings = `(SELECT count(*) FROM changes c ` + others + ` AND ` + fs.inPostings() + `)`
	}
	return fmt.Sprintf(`SELECT CASE WHEN EXISTS (SELECT 1 FROM unnest('{namespace,name,resource,user,cluster}'::text[]) k
			WHERE EXISTS (SELECT 1 FROM search_terms t WHERE t.kind = k)
			  AND NOT EXISTS (SELECT 1 FROM search_terms t WHERE t.kind = k AND strpos(t.term, $%d) = 0))
		THEN (SELECT count(*) FROM changes c %s)
		WHEN NOT %s THEN %s
		ELSE (SELECT count(*) FROM changes c %s) END`, fs.arg, others, fs.own, postings, where), args
}

// countSettings are the planner's settings of a filter's count: no
// sequential scan, and the plan made once for every filter of the same
// kind (the terminal UI prepares the statement on each connection): the
// filter's statement is long (its gate and its condition each skip
// through the writes' names and writers), and planning it for each key
// took 3-4.5 ms of a count of 12-30.
const countSettings = `SET LOCAL enable_seqscan = off; SET LOCAL plan_cache_mode = force_generic_plan`

// body is the stored response body of event id, read only where the
// query's CASE needs it (a kind of a custom resource): a subquery in the
// CASE is run for the rows that take its branch, where the view
// audit_bodies joined to every row cut each row's body out of its block
// (a block decompressed each: 0.46 ms a row on 5M events) for the CASE
// to throw it away.
func body(id string) string {
	return `(SELECT b.response_object FROM audit_bodies b WHERE b.event_id = ` + id + `)`
}

// changesByIDSQL is ChangeRowsByID's query: $1 the ids.
var changesByIDSQL = `SELECT c.id, c.started_ns, c.settled_ns, c."user", e.user_agent, c.verb,
	COALESCE(CASE WHEN c.subresource = '' AND c.resource NOT IN (` + cpid.BuiltinResourcesSQL + `) THEN NULLIF(` + body("c.event_id") + `::json ->> 'kind', 'Status') END, ''), c.api_group, c.resource,
	c.subresource, c.namespace, c.name, c.writes, c.objects, COALESCE(c.slowest_hop_ns, 0), c.cluster, c.trigger, c.trigger_detail, c.traceparent
	FROM changes c JOIN audit_events e ON e.id = c.event_id
	WHERE c.id = ANY($1) ORDER BY c.started_ns DESC, c.id COLLATE "C"`

// ChangeRowsByID reads cpid.ChangeColumns.
func (r reads) ChangeRowsByID(ctx context.Context, ids []string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, r.db, changesByIDSQL, []any{ids}, row)
}

// ChangesByID returns the changes with these ids, newest first
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) ChangesByID(ctx context.Context, ids []string) ([]cpid.ChangeRow, error) {
	return cpid.ReadService{Rows: s}.ChangesByID(ctx, ids)
}

// CarryingIDs returns the change ids of the writes carrying these CPIDs.
func (r reads) CarryingIDs(ctx context.Context, cpids []string) ([]string, error) {
	return strs(ctx, r.db, `SELECT DISTINCT COALESCE(change_id, '') COLLATE "C" FROM revisions WHERE cpid = ANY($1) ORDER BY 1`, cpids)
}

// ChangesCarrying returns the ids of the changes with a write carrying one
// of the CPIDs (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) ChangesCarrying(ctx context.Context, cpids []string) ([]string, error) {
	return cpid.ReadService{Rows: s}.ChangesCarrying(ctx, cpids)
}

// LinkedIDs returns the change ids of the writes carrying a CPID linked
// to id in the merge DAG.
func (r reads) LinkedIDs(ctx context.Context, id string, up bool) ([]string, error) {
	return strs(ctx, r.db, walk("g", "$1::text", up)+`
		SELECT DISTINCT COALESCE(change_id, '') FROM revisions WHERE cpid IN (SELECT cpid FROM g)`, id)
}

// LinkedChanges returns the changes, other than change, linked to a CPID
// through the merge DAG (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) LinkedChanges(ctx context.Context, change, id string, ancestors bool) ([]cpid.ChangeRow, error) {
	return cpid.ReadService{Rows: s}.LinkedChanges(ctx, change, id, ancestors)
}

// ChangeGraph reads the CPIDs, merges and objects of a change
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) ChangeGraph(ctx context.Context, change string) (cpid.ChangeGraph, error) {
	return cpid.ReadService{Rows: s}.ChangeGraph(ctx, change)
}

// GraphObjectRows reads cpid.GraphObjectColumns.
func (r reads) GraphObjectRows(ctx context.Context, change string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, r.db, `SELECT r.cpid, COALESCE(min(r.cpid_origin), ''), r.api_group, r.resource, r.namespace,
		r.name, r.writer, sum(CASE WHEN r.attempt = 0 THEN 1 ELSE 0 END), sum(r.attempt), min(r.stage_ns)
		FROM revisions r WHERE r.change_id = $1 AND r.cpid IS NOT NULL
		GROUP BY r.cpid, r.api_group, r.resource, r.namespace, r.name, r.writer
		ORDER BY min(r.stage_ns), (array_agg(r.event_id ORDER BY r.stage_ns, r.event_id))[1]`, []any{change}, row)
}

// MergeRows reads cpid.MergeColumns.
func (r reads) MergeRows(ctx context.Context, cpids []string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, r.db, `SELECT m.id, m.cpid, m.origin, m.service, m.ts_ns, COALESCE(x.source_cpid, '')
		FROM mergelogs m LEFT JOIN mergelog_sources x ON x.mergelog_id = m.id
		WHERE m.cpid = ANY($1) ORDER BY m.ts_ns, m.id, x.pos`, []any{cpids}, row)
}

// CarrierRows reads the CPIDs and the changes of the writes carrying them.
func (r reads) CarrierRows(ctx context.Context, cpids []string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, r.db, `SELECT DISTINCT cpid COLLATE "C", COALESCE(change_id, '') COLLATE "C" FROM revisions
		WHERE cpid = ANY($1) ORDER BY 1, 2`, []any{cpids}, row)
}

// ChangeLogs returns, in time order, at most limit log lines of a change
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) ChangeLogs(ctx context.Context, change string, limit int) (cpid.ChangeLogSet, error) {
	return cpid.ReadService{Rows: s}.ChangeLogs(ctx, change, limit)
}

// ChangeWindowRow reads the start, the end and the cluster of a change.
func (r reads) ChangeWindowRow(ctx context.Context, change string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, r.db, `SELECT started_ns, settled_ns, cluster FROM changes WHERE id = $1`, []any{change}, row)
}

// ChangeWriters returns the writers of a change that are no user.
func (r reads) ChangeWriters(ctx context.Context, change string) ([]string, error) {
	return strs(ctx, r.db, `SELECT writer FROM revisions WHERE change_id = $1 AND writer_is_user = 0
		GROUP BY writer ORDER BY min(stage_ns)`, change)
}

// relatedCPIDs is the WITH clause of the CPIDs related to the change $1:
// its root's and those descending from it, and those its writes carry, as
// the table rel(cpid).
var relatedCPIDs = walk("rel", "$1::text UNION SELECT cpid FROM revisions WHERE change_id = $1 AND cpid IS NOT NULL", false)

// LogRows reads cpid.LogColumns for the lines of q.
func (r reads) LogRows(ctx context.Context, q cpid.LogQuery, row func(cpid.RowScan) error) error {
	pats := q.Patterns
	if pats == nil {
		pats = []string{} // LIKE ANY of an empty array, not of NULL
	}
	// A line of the window is the change's if it carries one of its
	// CPIDs, or if its process is a writer's or logged one of its CPIDs.
	return eachRow(ctx, r.db, relatedCPIDs+`
		SELECT l.id, l.ts_ns, l.level, l.component, l.msg, COALESCE(l.cpid, ''), l.fields, f.path, l.line
		FROM log_records l JOIN files f ON f.id = l.file_id
		WHERE l.ts_ns BETWEEN $2 AND $3 AND (l.cpid IN (SELECT cpid FROM rel) OR l.cluster = $4 AND (
			l.file_id IN (SELECT file_id FROM log_records WHERE cpid IN (SELECT cpid FROM rel))
			OR lower(f.path) LIKE ANY($5) OR lower(l.component) LIKE ANY($5)))
		ORDER BY l.ts_ns, l.id LIMIT $6`, []any{q.Change, q.FromNS, q.ToNS, q.Cluster, pats, q.Limit}, row)
}

// LogsCarry reports whether a line of [fromNS, toNS] carries a CPID
// related to the change.
func (r reads) LogsCarry(ctx context.Context, change string, fromNS, toNS int64) (bool, error) {
	var ok bool
	err := r.db.QueryRow(ctx, relatedCPIDs+`
		SELECT EXISTS (SELECT 1 FROM log_records WHERE cpid IN (SELECT cpid FROM rel) AND ts_ns BETWEEN $2 AND $3)`,
		change, fromNS, toNS).Scan(&ok)
	return ok, err
}

// ChangeSpans returns the controller spans of a change's CPIDs, by start
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) ChangeSpans(ctx context.Context, change string) ([]cpid.ChangeSpan, error) {
	return cpid.ReadService{Rows: s}.ChangeSpans(ctx, change)
}

// ChangeSpanRows reads the controller spans of a change's CPIDs.
func (r reads) ChangeSpanRows(ctx context.Context, change string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, r.db, `SELECT span_id, parent_id, cpid, service, name, start_ns, end_ns FROM controller_spans
		WHERE cpid IN (SELECT DISTINCT cpid FROM revisions WHERE change_id = $1 AND cpid IS NOT NULL)
		ORDER BY start_ns, span_id COLLATE "C"`, []any{change}, row)
}

// Timeline returns every write of a change in apiserver order, the critical
// path marked (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) Timeline(ctx context.Context, change string) ([]cpid.TimelineEntry, error) {
	return cpid.ReadService{Rows: s}.Timeline(ctx, change)
}

// Timelines returns the timelines of these changes in one query
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) Timelines(ctx context.Context, changes []string) (map[string][]cpid.TimelineEntry, error) {
	return cpid.ReadService{Rows: s}.Timelines(ctx, changes)
}

// TimelineRows reads cpid.TimelineColumns (cpid.RowReader).
func (s *Store) TimelineRows(ctx context.Context, changes []string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, s.pool, `SELECT r.change_id, r.event_id, e.stage_ns, e.received_ns, r.writer, e.verb,
		COALESCE(CASE WHEN e.subresource IN ('', 'status') AND COALESCE(e.code, 0) < 400 AND r.resource NOT IN (`+cpid.BuiltinResourcesSQL+`)
		              THEN NULLIF(`+body("r.event_id")+`::json ->> 'kind', 'Status') END, ''),
		r.api_group, r.resource, r.namespace, r.name, e.subresource, COALESCE(e.code, 0), r.attempt <> 0, COALESCE(r.cpid, ''),
		COALESCE(r.cpid_origin, ''), COALESCE(r.cause_rule, ''), COALESCE(r.cause_event_id, 0),
		COALESCE(LEAST(c.stage_ns, e.received_ns), 0), COALESCE(r.hop_ns, 0),
		COALESCE(r.explain, ''), COALESCE(r.explain_detail, ''), COALESCE(r.confidence, '')
		FROM revisions r JOIN audit_events e ON e.id = r.event_id
		LEFT JOIN audit_events c ON c.id = r.cause_event_id
		WHERE r.change_id = ANY($1) ORDER BY r.change_id, e.stage_ns, r.event_id`, []any{changes}, row)
}

// Related returns the CPID and every CPID that descends from it
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) Related(ctx context.Context, id string) ([]string, error) {
	return cpid.ReadService{Rows: s}.Related(ctx, id)
}

// Origins returns the CPID and every CPID it descends from
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) Origins(ctx context.Context, id string) ([]string, error) {
	return cpid.ReadService{Rows: s}.Origins(ctx, id)
}

// CPIDs returns the CPIDs of the merge graph that start with prefix: from
// cpid_ids (migration 0007), in its key's byte order, the range of the
// prefix (every string that starts with it sorts from it to it followed
// by the last code point), where the union of the two tables' CPIDs,
// deduplicated and sorted, took 1.3 s on 5M events.
func (s *Store) CPIDs(ctx context.Context, prefix string, limit int) ([]string, error) {
	return strs(ctx, s.pool, cpidsSQL, prefix, limit)
}

// cpidsSQL is CPIDs' query: $1 the prefix, $2 the limit.
const cpidsSQL = `SELECT cpid FROM cpid_ids WHERE cpid >= $1 COLLATE "C" AND cpid < ($1 || chr(1114111)) COLLATE "C"
	AND starts_with(cpid, $1) ORDER BY cpid LIMIT $2`

// InMergeGraph reports whether a mergelog has the CPID, as its own or as
// a source (cpid.RowReader).
func (s *Store) InMergeGraph(ctx context.Context, id string) (bool, error) {
	var in bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM mergelogs WHERE cpid = $1)
		OR EXISTS (SELECT 1 FROM mergelog_sources WHERE source_cpid = $1)`, id).Scan(&in)
	return in, err
}

// WalkDAG returns the CPID and those descending from it, or with up those
// it descends from (cpid.RowReader).
func (s *Store) WalkDAG(ctx context.Context, id string, up bool) ([]string, error) {
	return strs(ctx, s.pool, walk("w", "$1::text", up)+` SELECT cpid FROM w ORDER BY cpid <> $1, cpid COLLATE "C"`, id)
}

// Spans returns the spans of a change (cpid.ChangeReader, through
// cpid.ReadService).
func (s *Store) Spans(ctx context.Context, change string) ([]cpid.SpanRow, error) {
	return cpid.ReadService{Rows: s}.Spans(ctx, change)
}

// SpanRows reads the spans of a change (cpid.RowReader).
func (s *Store) SpanRows(ctx context.Context, change string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, s.pool, walk("rel", "$1::text", false)+`
		SELECT kind, span_id, parent_id, COALESCE(cpid, ''), service, name, start_ns, end_ns FROM spans
		WHERE (kind = 'apiserver' AND event_id IN (SELECT event_id FROM revisions WHERE change_id = $1))
		   OR (kind = 'controller' AND cpid IN (SELECT cpid FROM rel))
		ORDER BY start_ns, span_id COLLATE "C"`, []any{change}, row)
}

// PodWrites returns the writes of the Pods that a change created
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) PodWrites(ctx context.Context, change string) ([]cpid.PodWrite, error) {
	return cpid.ReadService{Rows: s}.PodWrites(ctx, change)
}

// PodWriteRows reads the writes of the Pods that a change created
// (cpid.RowReader).
func (s *Store) PodWriteRows(ctx context.Context, change string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, s.pool, podWritesSQL(change), []any{change}, row)
}

// podWritesSQL is PodWriteRows' query ($1 the change, "" for all). The
// change's start and each write's body are subqueries, not joins: the
// planner searched the orders of seven tables (the view audit_bodies is
// two), 9.4 ms of a command's 18.6 in the server on ten million events
// (a new backend, its catalogs read), 2.8 ms planned again against 0.7.
// For one change, the Pods it created are found first (MATERIALIZED, by
// revisions_change), then each Pod's writes by revisions_object.
func podWritesSQL(change string) string {
	created := `WITH created AS (`
	if change != "" {
		created = `WITH created AS MATERIALIZED (`
	}
	return created + `
		SELECT r.namespace, r.name, r.change_id, r.stage_ns, r.cluster,
		  (SELECT ch.started_ns FROM changes ch WHERE ch.id = r.change_id) AS started_ns
		FROM revisions r JOIN audit_events e ON e.id = r.event_id
		WHERE r.resource = 'pods' AND r.api_group = '' AND e.verb = 'create' AND e.subresource = '' AND r.attempt = 0
		  AND r.change_id IS NOT NULL AND ($1 = '' OR r.change_id = $1))
		SELECT c.change_id, c.started_ns, c.namespace, c.name, e.verb, e.subresource, e.stage_ns,
		  COALESCE((SELECT b.response_object FROM audit_bodies b WHERE b.event_id = r.event_id), '')
		FROM created c
		JOIN revisions r ON r.resource = 'pods' AND r.api_group = '' AND r.namespace = c.namespace AND r.name = c.name
		  AND r.cluster = c.cluster AND r.stage_ns >= c.stage_ns AND r.attempt = 0
		JOIN audit_events e ON e.id = r.event_id
		WHERE c.started_ns IS NOT NULL
		ORDER BY e.stage_ns, e.id`
}

// Hops returns the hop latencies of every explained write of a change (all
// changes when change is "").
func (s *Store) Hops(ctx context.Context, change string) ([]cpid.Hop, error) {
	rows, err := s.pool.Query(ctx, `SELECT writer, hop_ns, COALESCE(cause_rule, ''), COALESCE(explain, ''), resource FROM revisions
		WHERE hop_ns IS NOT NULL AND attempt = 0 AND change_id IS NOT NULL AND ($1 = '' OR change_id = $1)
		AND ($2 = '' OR cluster = $2) ORDER BY event_id`, change, s.cluster)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[cpid.Hop])
}

// TailSources returns every followed source of the view's cluster (of
// every cluster for a view of all), by cluster and path.
func (s *Store) TailSources(ctx context.Context) ([]cpid.TailSource, error) {
	rows, err := s.pool.Query(ctx, `SELECT cluster, source, file, fingerprint, fingerprint_len, "offset", line, device, inode,
		lines, records, dups, bad, possible_loss, newest_ns, committed_ns FROM tail_checkpoints
		WHERE $1 = '' OR cluster = $1 ORDER BY cluster COLLATE "C", source COLLATE "C"`, s.cluster)
	if err != nil {
		return nil, fmt.Errorf("read tail checkpoints: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (cpid.TailSource, error) {
		var t cpid.TailSource
		var fp []byte
		var dev, ino int64
		err := row.Scan(&t.Cluster, &t.Source, &t.File, &fp, &t.FingerprintLen, &t.Offset, &t.Line, &dev, &ino,
			&t.Lines, &t.Records, &t.Dups, &t.Bad, &t.PossibleLoss, &t.NewestNS, &t.CommittedNS)
		copy(t.Fingerprint[:], fp)
		t.Device, t.Inode = uint64(dev), uint64(ino)
		return t, err
	})
}

// NewestMergelog returns the time of the newest mergelog of the view's
// cluster(s), 0 when none.
func (s *Store) NewestMergelog(ctx context.Context) (int64, error) {
	var ns int64
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(max(ts_ns), 0) FROM mergelogs WHERE $1 = '' OR cluster = $1`, s.cluster).Scan(&ns)
	return ns, err
}

// Anomalies returns the anomalies of a change, or of the view's clusters
// ("" change), in apiserver order (cpid.ChangeReader).
func (s *Store) Anomalies(ctx context.Context, change string) ([]cpid.AnomalyRow, error) {
	rows, err := s.pool.Query(ctx, `SELECT a.kind, a.event_id, e.stage_ns, a.api_group, a.resource, a.namespace, a.name,
		a.detail, COALESCE(r.change_id, ''), a.cluster
		FROM anomalies a JOIN audit_events e ON e.id = a.event_id LEFT JOIN revisions r ON r.event_id = a.event_id
		WHERE ($1 = '' OR r.change_id = $1) AND ($2 = '' OR a.cluster = $2)
		ORDER BY e.stage_ns, a.event_id, a.kind COLLATE "C"`, change, s.cluster)
	if err != nil {
		return nil, fmt.Errorf("anomalies: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[cpid.AnomalyRow])
}
