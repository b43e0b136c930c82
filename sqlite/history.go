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
// of all. An object named in full (a name and a namespace) is found from
// the indexes of its five columns (migration 0018) by seeks: its groups and
// clusters, then each one's writes counted; other queries (every
// namespace, every name) group the writes of the resource in the index's
// order.
func (s *Store) ObjectMatches(ctx context.Context, q cpid.ObjectQuery) ([]cpid.ObjectMatch, error) {
	var out []cpid.ObjectMatch
	err := s.snapshot(ctx, func(db querier) error {
		if q.Name != "" && !q.AllNamespaces {
			var err error
			out, err = s.namedObjects(ctx, db, q)
			return err
		}
		query, args := s.objectsSQL(q)
		return eachRow(ctx, db, query, args, func(scan cpid.RowScan) error {
			var m cpid.ObjectMatch
			if err := scan(&m.Resource, &m.Namespace, &m.Name, &m.Group, &m.Cluster, &m.Writes, &m.FirstNS, &m.LastNS); err != nil {
				return err
			}
			out = append(out, m)
			return nil
		})
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

// objectsSQL is Objects' query for every namespace or every name: an
// index of the writes' five columns alone answers it (migration 0018),
// its writes grouped by the index's leading columns, in its order (no
// sort).
// The name, group and cluster are tested on each entry (the unary +):
// SQLite, given some of them as equal to a value but not all, sorted the
// groups in a temporary b-tree.
func (s *Store) objectsSQL(q cpid.ObjectQuery) (string, []any) {
	conds := []string{`r.resource IN (` + placeholders(len(q.Resources)) + `)`}
	args := strArgs(q.Resources)
	if !q.AllNamespaces {
		conds, args = append(conds, `r.namespace = ?`), append(args, q.Namespace)
	}
	if q.Name != "" {
		conds, args = append(conds, `+r.name = ?`), append(args, q.Name)
	}
	if !q.AnyGroup {
		conds, args = append(conds, `+r.api_group = ?`), append(args, q.Group)
	}
	if s.cluster != "" {
		conds, args = append(conds, `+r.cluster = ?`), append(args, s.cluster)
	}
	return `SELECT r.resource, r.namespace, r.name, r.api_group, r.cluster, count(*), min(r.stage_ns), max(r.stage_ns)
		FROM revisions r WHERE ` + strings.Join(conds, " AND ") + `
		GROUP BY r.resource, r.namespace, r.name, r.api_group, r.cluster`, args
}

// Statements of namedObjects: ?1 to ?3 the resource, namespace and name,
// ?4 the group, ?5 the value after which the next is sought. Each next
// value is a seek in an index whose columns after the name are the group
// and the cluster (revisions_object_time, revisions_object: migration
// 0018).
const (
	nextGroupSQL   = `SELECT min(api_group) FROM revisions WHERE resource = ?1 AND namespace = ?2 AND name = ?3 AND api_group > ?5`
	firstGroupSQL  = `SELECT min(api_group) FROM revisions WHERE resource = ?1 AND namespace = ?2 AND name = ?3 AND api_group >= ?5`
	nextClusterSQL = `SELECT min(cluster) FROM revisions WHERE resource = ?1 AND namespace = ?2 AND name = ?3 AND api_group = ?4
		AND cluster > ?5`
	firstClusterSQL = `SELECT min(cluster) FROM revisions WHERE resource = ?1 AND namespace = ?2 AND name = ?3 AND api_group = ?4
		AND cluster >= ?5`
	// objectWritesSQL counts an object's writes, ?5 its cluster, as a
	// range of an index whose entries it counts, and finds its first
	// and last by seeks in revisions_object_time (48,702 writes for the
	// busiest Node of ten million events: 11 ms, where grouping them by
	// object with the least and greatest group and cluster took 50).
	objectWritesSQL = `SELECT count(*), COALESCE((SELECT min(stage_ns) FROM revisions WHERE ` + objectKey + `), 0),
		COALESCE((SELECT max(stage_ns) FROM revisions WHERE ` + objectKey + `), 0) FROM revisions WHERE ` + objectKey
	objectKey = `resource = ?1 AND namespace = ?2 AND name = ?3 AND api_group = ?4 AND cluster = ?5`
)

// namedObjects finds the objects of q's name in its namespace: for each
// resource, the groups that name has writes in (q's group only, unless
// any group), in each the clusters (the view's only, in a view of one),
// and each object's writes counted.
func (s *Store) namedObjects(ctx context.Context, db querier, q cpid.ObjectQuery) ([]cpid.ObjectMatch, error) {
	// values returns the values sought by the statements first (the
	// least) and next (the least after one), in order.
	values := func(first, next string, key []any) ([]string, error) {
		var out []string
		for query, after := first, ""; ; query = next {
			var v *string
			if err := db.QueryRowContext(ctx, query, append(key, after)...).Scan(&v); err != nil || v == nil {
				return out, err
			}
			out, after = append(out, *v), *v
		}
	}
	var out []cpid.ObjectMatch
	for i, res := range q.Resources {
		if slices.Contains(q.Resources[:i], res) {
			continue // as once in the IN list of objectsSQL
		}
		groups := []string{q.Group}
		if q.AnyGroup {
			var err error
			if groups, err = values(firstGroupSQL, nextGroupSQL, []any{res, q.Namespace, q.Name, nil}); err != nil {
				return nil, err
			}
		}
		for _, g := range groups {
			key := []any{res, q.Namespace, q.Name, g}
			clusters := []string{s.cluster}
			if s.cluster == "" {
				var err error
				if clusters, err = values(firstClusterSQL, nextClusterSQL, key); err != nil {
					return nil, err
				}
			}
			for _, c := range clusters {
				m := cpid.ObjectMatch{ObjectKey: cpid.ObjectKey{Cluster: c, Group: g, Resource: res, Namespace: q.Namespace, Name: q.Name}}
				if err := db.QueryRowContext(ctx, objectWritesSQL, append(key, c)...).Scan(&m.Writes, &m.FirstNS, &m.LastNS); err != nil {
					return nil, err
				}
				if m.Writes > 0 {
					out = append(out, m)
				}
			}
		}
	}
	return out, nil
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
	cluster := q.Object.Cluster
	if cluster == "" {
		cluster = s.cluster
	}
	if cluster != "" {
		query, args := historySQL(q, cluster, n)
		return eachRow(ctx, s.r, query, args, row)
	}
	return s.snapshot(ctx, func(db querier) error {
		cluster, err := onlyCluster(ctx, db, q.Object)
		if err != nil {
			return err
		}
		query, args := historySQL(q, cluster, n)
		return eachRow(ctx, db, query, args, row)
	})
}

// historySQL is HistoryRows' query, in cluster ("" for every one).
func historySQL(q cpid.HistoryQuery, cluster string, n int) (string, []any) {
	o := q.Object
	conds := []string{`r.resource = ?`, `r.namespace = ?`, `r.name = ?`, `r.api_group = ?`}
	args := []any{o.Resource, o.Namespace, o.Name, o.Group}
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
	return `SELECT * FROM (
		SELECT r.event_id, r.cluster, r.seq, r.order_by, r.stage_ns, e.received_ns, e.verb, e.subresource, COALESCE(e.code, 0),
		       r.attempt, e.level, e.resource_version, r.writer, r.writer_is_user, e.username, e.user_agent,
		       COALESCE(r.cpid, ''), COALESCE(r.cpid_origin, ''), COALESCE(r.change_id, ''), COALESCE(c.trigger, ''),
		       COALESCE(c.trigger_detail, ''), COALESCE(r.cause_rule, ''), COALESCE(r.cause_event_id, 0),
		       COALESCE(ce.stage_ns, 0), COALESCE(cr.writer, ''), COALESCE(ce.verb, ''), COALESCE(ce.subresource, ''),
		       COALESCE(ce.api_group, ''), COALESCE(ce.resource, ''), COALESCE(ce.namespace, ''), COALESCE(ce.name, ''),
		       COALESCE(r.hop_ns, 0), COALESCE(r.explain, ''), COALESCE(r.explain_detail, ''), COALESCE(r.confidence, ''), ` + bodies + `
		FROM revisions r JOIN audit_events e ON e.id = r.event_id
		LEFT JOIN changes c ON c.id = r.change_id
		LEFT JOIN audit_events ce ON ce.id = r.cause_event_id
		LEFT JOIN revisions cr ON cr.event_id = r.cause_event_id ` + join + `
		WHERE ` + strings.Join(conds, " AND ") + `
		ORDER BY r.seq DESC, r.attempt DESC, r.stage_ns DESC, r.event_id DESC LIMIT ?)
		ORDER BY seq, attempt, stage_ns, event_id`, append(args, sqlLimit(n))
}

// RevisionRows reads cpid.RevisionColumns (cpid.RowReader).
func (s *Store) RevisionRows(ctx context.Context, o cpid.ObjectKey, n int, row func(cpid.RowScan) error) error {
	if o.Cluster != "" {
		query, args := revisionsSQL(o, o.Cluster, n)
		return eachRow(ctx, s.r, query, args, row)
	}
	return s.snapshot(ctx, func(db querier) error {
		cluster, err := onlyCluster(ctx, db, o)
		if err != nil {
			return err
		}
		query, args := revisionsSQL(o, cluster, n)
		return eachRow(ctx, db, query, args, row)
	})
}

// revisionsSQL is RevisionRows' query, in cluster ("" for every one).
func revisionsSQL(o cpid.ObjectKey, cluster string, n int) (string, []any) {
	cond := ``
	if cluster != "" {
		cond = ` AND r.cluster = ?5`
	}
	return `SELECT * FROM (
		SELECT r.event_id, r.seq, r.attempt, r.order_by, r.stage_ns, r.writer, e.verb, e.subresource, COALESCE(e.code, 0),
		       e.level, e.resource_version, COALESCE(r.cpid, ''), COALESCE(r.change_id, ''),
		       COALESCE(b.response_object, ''), COALESCE(b.request_object, '')
		FROM revisions r JOIN audit_events e ON e.id = r.event_id LEFT JOIN audit_bodies b ON b.event_id = r.event_id
		WHERE r.resource = ?1 AND r.namespace = ?2 AND r.name = ?3 AND r.api_group = ?4` + cond + `
		ORDER BY r.seq DESC, r.attempt DESC, r.stage_ns DESC, r.event_id DESC LIMIT ?6)
		ORDER BY seq, attempt, stage_ns, event_id`, []any{o.Resource, o.Namespace, o.Name, o.Group, cluster, sqlLimit(n)}
}

// onlyClusterSQL is the least and the greatest cluster of an object's
// writes (?1 to ?4, ?5 "").
const onlyClusterSQL = `SELECT (` + firstClusterSQL + `), (SELECT max(cluster) FROM revisions
	WHERE resource = ?1 AND namespace = ?2 AND name = ?3 AND api_group = ?4)`

// onlyCluster returns, for an object asked of every cluster, the one
// cluster that holds writes of it, if only one does (two seeks): the
// index revisions_object holds an object's writes in order under its
// cluster (migration 0018), so that its last writes are read from the
// index rather than all of them sorted. Objects of one name in several
// clusters are read together, sorted ("" is returned).
func onlyCluster(ctx context.Context, db querier, o cpid.ObjectKey) (string, error) {
	var least, greatest *string
	err := db.QueryRowContext(ctx, onlyClusterSQL, o.Resource, o.Namespace, o.Name, o.Group, "").Scan(&least, &greatest)
	if err != nil || least == nil || greatest == nil || *least != *greatest {
		return "", err
	}
	return *least, nil
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
