package sqlite

import (
	"context"
	"fmt"

	"github.com/cpid-dev/cpid"
)

// Timeline returns every write of a change in apiserver order, the critical
// path marked: the chain of causes that ends at the change's last write.
func (s *Store) Timeline(ctx context.Context, change string) ([]cpid.TimelineEntry, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM changes WHERE id = ?`, change).Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("no change %q (cpid-tui query changes lists them)", change)
	}
	ts, err := s.Timelines(ctx, []string{change})
	return ts[change], err
}

// Timelines returns the timelines of these changes in one query
// (cpid.ChangeReader; the columns of cpid.TimelineColumns); unknown ids
// are left out.
func (s *Store) Timelines(ctx context.Context, changes []string) (map[string][]cpid.TimelineEntry, error) {
	out := cpid.TimelineSet{}
	if len(changes) == 0 {
		return out, nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT r.change_id, r.event_id, e.stage_ns, e.received_ns, r.writer, e.verb,
		COALESCE(CASE WHEN e.subresource IN ('', 'status') AND COALESCE(e.code, 0) < 400 AND r.resource NOT IN (`+cpid.BuiltinResourcesSQL+`)
		              THEN NULLIF(b.response_object ->> '$.kind', 'Status') END, ''),
		r.api_group, r.resource, r.namespace, r.name, e.subresource, COALESCE(e.code, 0), r.attempt, COALESCE(r.cpid, ''),
		COALESCE(r.cpid_origin, ''), COALESCE(r.cause_rule, ''), COALESCE(r.cause_event_id, 0),
		COALESCE(CASE WHEN c.stage_ns < e.received_ns THEN c.stage_ns ELSE e.received_ns END, 0), COALESCE(r.hop_ns, 0),
		COALESCE(r.explain, ''), COALESCE(r.explain_detail, ''), COALESCE(r.confidence, '')
		FROM revisions r JOIN audit_events e ON e.id = r.event_id
		LEFT JOIN audit_bodies b ON b.event_id = r.event_id
		LEFT JOIN audit_events c ON c.id = r.cause_event_id
		WHERE r.change_id IN `+inJSON+` ORDER BY r.change_id, e.stage_ns, r.event_id`, jsonList(changes))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		if err := out.Scan(rows.Scan); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out.Done(), nil
}

// Related returns the CPID and every CPID that descends from it in the merge
// graph (paper Table 2): the CPID first, then the others sorted.
func (s *Store) Related(ctx context.Context, cpid string) ([]string, error) {
	return s.walk(ctx, cpid, descendants("rel", "?1")+` SELECT cpid FROM rel ORDER BY cpid != ?1, cpid`)
}

// Origins returns the CPID and every CPID it descends from.
func (s *Store) Origins(ctx context.Context, cpid string) ([]string, error) {
	return s.walk(ctx, cpid, ancestorsOf("anc", "?1")+` SELECT cpid FROM anc ORDER BY cpid != ?1, cpid`)
}

// CPIDs returns the CPIDs of the merge graph that start with prefix.
func (s *Store) CPIDs(ctx context.Context, prefix string, limit int) ([]string, error) {
	// A range, not LIKE: SQLite's LIKE ignores case and uses no index.
	return column(ctx, s.r, `SELECT cpid FROM mergelogs WHERE cpid >= ?1 AND cpid < ?1 || char(1114111)
		UNION SELECT source_cpid FROM mergelog_sources WHERE source_cpid >= ?1 AND source_cpid < ?1 || char(1114111)
		ORDER BY 1 LIMIT ?2`, prefix, limit)
}

func (s *Store) walk(ctx context.Context, cpid, q string) ([]string, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM mergelogs WHERE cpid = ?1)
		+ (SELECT count(*) FROM mergelog_sources WHERE source_cpid = ?1)`, cpid).Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("no CPID %q in the merge graph", cpid)
	}
	rows, err := s.r.QueryContext(ctx, q, cpid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// Spans returns the spans of a change: one apiserver span per write of the
// change, and the controller spans of every CPID related to it.
func (s *Store) Spans(ctx context.Context, change string) ([]cpid.SpanRow, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM changes WHERE id = ?`, change).Scan(&n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("no change %q (cpid-tui query changes lists them)", change)
	}
	rows, err := s.r.QueryContext(ctx, descendants("rel", "?1")+`
		SELECT kind, span_id, parent_id, COALESCE(cpid, ''), service, name, start_ns, end_ns FROM spans
		WHERE (kind = 'apiserver' AND event_id IN (SELECT event_id FROM revisions WHERE change_id = ?1))
		   OR (kind = 'controller' AND cpid IN (SELECT cpid FROM rel))
		ORDER BY start_ns, span_id`, change)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []cpid.SpanRow
	for rows.Next() {
		var r cpid.SpanRow
		if err := rows.Scan(&r.Kind, &r.SpanID, &r.ParentID, &r.CPID, &r.Service, &r.Name, &r.StartNS, &r.EndNS); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
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
