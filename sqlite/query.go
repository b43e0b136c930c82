package sqlite

import (
	"context"

	"github.com/cpid-dev/cpid"
)

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
	return eachRow(ctx, s.r, `SELECT r.change_id, r.event_id, e.stage_ns, e.received_ns, r.writer, e.verb,
		COALESCE(CASE WHEN e.subresource IN ('', 'status') AND COALESCE(e.code, 0) < 400 AND r.resource NOT IN (`+cpid.BuiltinResourcesSQL+`)
		              THEN NULLIF(b.response_object ->> '$.kind', 'Status') END, ''),
		r.api_group, r.resource, r.namespace, r.name, e.subresource, COALESCE(e.code, 0), r.attempt, COALESCE(r.cpid, ''),
		COALESCE(r.cpid_origin, ''), COALESCE(r.cause_rule, ''), COALESCE(r.cause_event_id, 0),
		COALESCE(CASE WHEN c.stage_ns < e.received_ns THEN c.stage_ns ELSE e.received_ns END, 0), COALESCE(r.hop_ns, 0),
		COALESCE(r.explain, ''), COALESCE(r.explain_detail, ''), COALESCE(r.confidence, '')
		FROM revisions r JOIN audit_events e ON e.id = r.event_id
		LEFT JOIN audit_bodies b ON b.event_id = r.event_id
		LEFT JOIN audit_events c ON c.id = r.cause_event_id
		WHERE r.change_id IN `+inJSON+` ORDER BY r.change_id, e.stage_ns, r.event_id`, []any{jsonList(changes)}, row)
}

// Related returns the CPID and every CPID that descends from it in the merge
// graph (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) Related(ctx context.Context, id string) ([]string, error) {
	return cpid.ReadService{Rows: s}.Related(ctx, id)
}

// Origins returns the CPID and every CPID it descends from
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) Origins(ctx context.Context, id string) ([]string, error) {
	return cpid.ReadService{Rows: s}.Origins(ctx, id)
}

// CPIDs returns the CPIDs of the merge graph that start with prefix.
func (s *Store) CPIDs(ctx context.Context, prefix string, limit int) ([]string, error) {
	// A range, not LIKE: SQLite's LIKE ignores case and uses no index.
	return column(ctx, s.r, `SELECT cpid FROM mergelogs WHERE cpid >= ?1 AND cpid < ?1 || char(1114111)
		UNION SELECT source_cpid FROM mergelog_sources WHERE source_cpid >= ?1 AND source_cpid < ?1 || char(1114111)
		ORDER BY 1 LIMIT ?2`, prefix, limit)
}

// InMergeGraph reports whether a mergelog has the CPID, as its own or as
// a source (cpid.RowReader).
func (s *Store) InMergeGraph(ctx context.Context, id string) (bool, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM mergelogs WHERE cpid = ?1)
		+ (SELECT count(*) FROM mergelog_sources WHERE source_cpid = ?1)`, id).Scan(&n)
	return n > 0, err
}

// WalkDAG returns the CPID and those descending from it, or with up those
// it descends from (cpid.RowReader).
func (s *Store) WalkDAG(ctx context.Context, id string, up bool) ([]string, error) {
	if up {
		return column(ctx, s.r, ancestorsOf("anc", "?1")+` SELECT cpid FROM anc ORDER BY cpid != ?1, cpid`, id)
	}
	return column(ctx, s.r, descendants("rel", "?1")+` SELECT cpid FROM rel ORDER BY cpid != ?1, cpid`, id)
}

// Spans returns the spans of a change (cpid.ChangeReader, through
// cpid.ReadService).
func (s *Store) Spans(ctx context.Context, change string) ([]cpid.SpanRow, error) {
	return cpid.ReadService{Rows: s}.Spans(ctx, change)
}

// SpanRows reads the spans of a change (cpid.RowReader).
func (s *Store) SpanRows(ctx context.Context, change string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, s.r, descendants("rel", "?1")+`
		SELECT kind, span_id, parent_id, COALESCE(cpid, ''), service, name, start_ns, end_ns FROM spans
		WHERE (kind = 'apiserver' AND event_id IN (SELECT event_id FROM revisions WHERE change_id = ?1))
		   OR (kind = 'controller' AND cpid IN (SELECT cpid FROM rel))
		ORDER BY start_ns, span_id`, []any{change}, row)
}

// descendants is the WITH clause of the walk down the merge DAG: the CPIDs
// that seed selects (a SELECT's column list and what follows it) and every
// CPID that descends from them, as the table name(cpid). Every query that
// needs the CPIDs related to a change goes through it.
func descendants(name, seed string) string {
	return `WITH RECURSIVE ` + name + `(cpid) AS (
		SELECT ` + seed + ` UNION
		SELECT m.cpid FROM ` + name + ` JOIN mergelog_sources x ON x.source_cpid = ` + name + `.cpid
		JOIN mergelogs m ON m.id = x.mergelog_id)`
}

// ancestorsOf is descendants' walk up the DAG: the seed's CPIDs and every
// CPID they descend from.
func ancestorsOf(name, seed string) string {
	return `WITH RECURSIVE ` + name + `(cpid) AS (
		SELECT ` + seed + ` UNION
		SELECT x.source_cpid FROM ` + name + ` JOIN mergelogs m ON m.cpid = ` + name + `.cpid
		JOIN mergelog_sources x ON x.mergelog_id = m.id)`
}
