package sqlite

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cpid-dev/cpid"
)

// Objects finds the objects with writes that a reference may name
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) Objects(ctx context.Context, q cpid.ObjectQuery) ([]cpid.ObjectMatch, error) {
	return cpid.ReadService{Rows: s}.Objects(ctx, q)
}

// ObjectMatches finds the objects with writes that q names
// (cpid.RowReader), in the view's cluster, or in every cluster for a view
// of all.
func (s *Store) ObjectMatches(ctx context.Context, q cpid.ObjectQuery) ([]cpid.ObjectMatch, error) {
	var out []cpid.ObjectMatch
	err := s.snapshot(ctx, func(db querier) error {
		query, args := s.objectsSQL(q)
		rows, err := db.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		var mixed []cpid.ObjectMatch
		for rows.Next() {
			var m cpid.ObjectMatch
			var group2, cluster2 string
			if err := rows.Scan(&m.Resource, &m.Namespace, &m.Name, &m.Writes, &m.FirstNS, &m.LastNS, &m.Group, &group2, &m.Cluster, &cluster2); err != nil {
				rows.Close()
				return err
			}
			if group2 != m.Group || cluster2 != m.Cluster {
				mixed = append(mixed, m)
				continue
			}
			out = append(out, m)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		// Objects of one name in several groups or clusters: counted
		// apart, by a sort of their writes.
		for _, m := range mixed {
			query, args := `SELECT r.cluster, r.api_group, count(*), min(r.stage_ns), max(r.stage_ns) FROM revisions r
				WHERE r.resource = ? AND r.namespace = ? AND r.name = ?`, []any{m.Resource, m.Namespace, m.Name}
			if !q.AnyGroup {
				query, args = query+` AND r.api_group = ?`, append(args, q.Group)
			}
			if s.cluster != "" {
				query, args = query+` AND r.cluster = ?`, append(args, s.cluster)
			}
			err := eachRow(ctx, db, query+` GROUP BY r.cluster, r.api_group`, args,
				func(scan cpid.RowScan) error {
					o := m
					if err := scan(&o.Cluster, &o.Group, &o.Writes, &o.FirstNS, &o.LastNS); err != nil {
						return err
					}
					out = append(out, o)
					return nil
				})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("objects named %s: %w", q.Name, err)
	}
	slices.SortFunc(out, func(a, b cpid.ObjectMatch) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// objectsSQL is Objects' query: the index revisions_object alone answers
// it (migration 0014), not each write's row. The writes are grouped by
// the index's leading columns (resource, namespace, name), in its order:
// grouped by the group and cluster too, which the index holds after seq,
// SQLite sorted every write of the object first (170 ms of 48,702 for a
// busy Node, TestHistoryIndexUsed); the least and greatest group and
// cluster say whether one name holds several objects.
func (s *Store) objectsSQL(q cpid.ObjectQuery) (string, []any) {
	conds := []string{`r.resource IN (` + placeholders(len(q.Resources)) + `)`}
	args := strArgs(q.Resources)
	if q.Name != "" {
		conds, args = append(conds, `r.name = ?`), append(args, q.Name)
	}
	if !q.AnyGroup {
		conds, args = append(conds, `r.api_group = ?`), append(args, q.Group)
	}
	if !q.AllNamespaces {
		conds, args = append(conds, `r.namespace = ?`), append(args, q.Namespace)
	}
	if s.cluster != "" {
		conds, args = append(conds, `r.cluster = ?`), append(args, s.cluster)
	}
	return `SELECT r.resource, r.namespace, r.name, count(*), min(r.stage_ns), max(r.stage_ns),
		min(r.api_group), max(r.api_group), min(r.cluster), max(r.cluster)
		FROM revisions r WHERE ` + strings.Join(conds, " AND ") + `
		GROUP BY r.resource, r.namespace, r.name`, args
}

// ObjectHistory returns the writes of one object (cpid.ChangeReader,
// through cpid.ReadService).
func (s *Store) ObjectHistory(ctx context.Context, q cpid.HistoryQuery) ([]cpid.ObjectWrite, bool, error) {
	return cpid.ReadService{Rows: s}.ObjectHistory(ctx, q)
}

// ObjectRevisions returns the last limit writes of an object
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) ObjectRevisions(ctx context.Context, o cpid.ObjectKey, limit int) ([]cpid.Revision, bool, error) {
	return cpid.ReadService{Rows: s}.ObjectRevisions(ctx, o, limit)
}

// HistoryRows reads cpid.HistoryColumns (cpid.RowReader).
func (s *Store) HistoryRows(ctx context.Context, q cpid.HistoryQuery, n int, row func(cpid.RowScan) error) error {
	o := q.Object
	conds := []string{`r.resource = ?`, `r.namespace = ?`, `r.name = ?`, `r.api_group = ?`}
	args := []any{o.Resource, o.Namespace, o.Name, o.Group}
	cluster := o.Cluster
	if cluster == "" {
		cluster = s.cluster
	}
	if cluster != "" {
		conds, args = append(conds, `r.cluster = ?`), append(args, cluster)
	}
	if q.SinceNS != 0 {
		conds, args = append(conds, `r.stage_ns >= ?`), append(args, q.SinceNS)
	}
	if q.UntilNS != 0 {
		conds, args = append(conds, `r.stage_ns < ?`), append(args, q.UntilNS)
	}
	if q.Writer != "" {
		conds, args = append(conds, `instr(lower(r.writer), ?) > 0`), append(args, q.Writer)
	}
	if q.User != "" {
		conds, args = append(conds, `instr(lower(e.username), ?) > 0`), append(args, q.User)
	}
	if q.Trigger != "" {
		conds, args = append(conds, `c.trigger = ?`), append(args, string(q.Trigger))
	}
	bodies, join := `'', ''`, ``
	if q.Bodies {
		bodies, join = `COALESCE(b.response_object, ''), COALESCE(b.request_object, '')`, `LEFT JOIN audit_bodies b ON b.event_id = r.event_id`
	}
	args = append(args, sqlLimit(n))
	return eachRow(ctx, s.r, `SELECT * FROM (
		SELECT r.event_id, r.cluster, r.seq, r.order_by, r.stage_ns, e.received_ns, e.verb, e.subresource, COALESCE(e.code, 0),
		       r.attempt, e.level, e.resource_version, r.writer, r.writer_is_user, e.username, e.user_agent,
		       COALESCE(r.cpid, ''), COALESCE(r.cpid_origin, ''), COALESCE(r.change_id, ''), COALESCE(c.trigger, ''),
		       COALESCE(c.trigger_detail, ''), COALESCE(r.cause_rule, ''), COALESCE(r.cause_event_id, 0),
		       COALESCE(ce.stage_ns, 0), COALESCE(cr.writer, ''), COALESCE(ce.verb, ''), COALESCE(ce.subresource, ''),
		       COALESCE(ce.api_group, ''), COALESCE(ce.resource, ''), COALESCE(ce.namespace, ''), COALESCE(ce.name, ''),
		       COALESCE(r.hop_ns, 0), COALESCE(r.explain, ''), COALESCE(r.explain_detail, ''), COALESCE(r.confidence, ''), `+bodies+`
		FROM revisions r JOIN audit_events e ON e.id = r.event_id
		LEFT JOIN changes c ON c.id = r.change_id
		LEFT JOIN audit_events ce ON ce.id = r.cause_event_id
		LEFT JOIN revisions cr ON cr.event_id = r.cause_event_id `+join+`
		WHERE `+strings.Join(conds, " AND ")+`
		ORDER BY r.seq DESC, r.attempt DESC, r.stage_ns DESC, r.event_id DESC LIMIT ?)
		ORDER BY seq, attempt, stage_ns, event_id`, args, row)
}

// RevisionRows reads cpid.RevisionColumns (cpid.RowReader).
func (s *Store) RevisionRows(ctx context.Context, o cpid.ObjectKey, n int, row func(cpid.RowScan) error) error {
	return eachRow(ctx, s.r, `SELECT * FROM (
		SELECT r.event_id, r.seq, r.attempt, r.order_by, r.stage_ns, r.writer, e.verb, e.subresource, COALESCE(e.code, 0),
		       e.level, e.resource_version, COALESCE(r.cpid, ''), COALESCE(r.change_id, ''),
		       COALESCE(b.response_object, ''), COALESCE(b.request_object, '')
		FROM revisions r JOIN audit_events e ON e.id = r.event_id LEFT JOIN audit_bodies b ON b.event_id = r.event_id
		WHERE r.resource = ? AND r.namespace = ? AND r.name = ? AND r.api_group = ? AND (?5 = '' OR r.cluster = ?5)
		ORDER BY r.seq DESC, r.attempt DESC, r.stage_ns DESC, r.event_id DESC LIMIT ?6)
		ORDER BY seq, attempt, stage_ns, event_id`, []any{o.Resource, o.Namespace, o.Name, o.Group, o.Cluster, sqlLimit(n)}, row)
}

// sqlLimit is a LIMIT of n rows, 0 for all: SQLite's -1.
func sqlLimit(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// eachRow runs a query and calls row with each row's Scan.
func eachRow(ctx context.Context, db querier, q string, args []any, row func(cpid.RowScan) error) error {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return cpid.EachRow(rows, row)
}

// WrittenResources returns the resources with writes in the view's
// cluster (cpid.ObjectLister). It steps through the revisions' index one
// resource at a time, so that it reads a few rows per resource, not every
// revision.
func (s *Store) WrittenResources(ctx context.Context) ([]string, error) {
	out, err := column(ctx, s.r, `WITH RECURSIVE t(resource) AS (
		  SELECT (SELECT resource FROM revisions WHERE (?1 = '' OR cluster = ?1) ORDER BY resource LIMIT 1)
		  UNION ALL
		  SELECT (SELECT resource FROM revisions WHERE resource > t.resource AND (?1 = '' OR cluster = ?1) ORDER BY resource LIMIT 1)
		  FROM t WHERE t.resource IS NOT NULL)
		SELECT resource FROM t WHERE resource IS NOT NULL`, s.cluster)
	if err != nil {
		return nil, fmt.Errorf("resources with writes: %w", err)
	}
	return out, nil
}

// ObjectNames returns the objects with writes whose name starts with
// q.Prefix (cpid.ObjectLister).
func (s *Store) ObjectNames(ctx context.Context, q cpid.ObjectNameQuery) ([]cpid.ObjectKey, error) {
	if len(q.Resources) == 0 {
		return nil, nil
	}
	// A range, not LIKE: SQLite's LIKE ignores case and uses no index.
	conds := []string{`r.resource IN (` + placeholders(len(q.Resources)) + `)`, `r.name >= ?`, `r.name < ? || char(1114111)`}
	args := append(strArgs(q.Resources), q.Prefix, q.Prefix)
	if !q.AnyGroup {
		conds, args = append(conds, `r.api_group = ?`), append(args, q.Group)
	}
	if !q.AllNamespaces {
		conds, args = append(conds, `r.namespace = ?`), append(args, q.Namespace)
	}
	if s.cluster != "" {
		conds, args = append(conds, `r.cluster = ?`), append(args, s.cluster)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT r.api_group, r.resource, r.namespace, r.name FROM revisions r
		WHERE `+strings.Join(conds, " AND ")+` ORDER BY r.name, r.namespace, r.resource, r.api_group LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("objects named %s...: %w", q.Prefix, err)
	}
	defer rows.Close()
	var out []cpid.ObjectKey
	for rows.Next() {
		var k cpid.ObjectKey
		if err := rows.Scan(&k.Group, &k.Resource, &k.Namespace, &k.Name); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}
