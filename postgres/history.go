package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

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
	query, args := objectsSQL, []any{q.Name, q.Resources, q.AnyGroup, q.Group, q.AllNamespaces, q.Namespace, s.cluster}
	if q.KeysOnly && q.Name != "" && len(q.Resources) == 1 {
		query, args = s.objectKeysSQL(q)
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("objects named %s: %w", q.Name, err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (cpid.ObjectMatch, error) {
		var m cpid.ObjectMatch
		err := row.Scan(&m.Cluster, &m.Group, &m.Resource, &m.Namespace, &m.Name, &m.Writes, &m.FirstNS, &m.LastNS)
		return m, err
	})
}

// objectsSQL is Objects' query: the name ("" any), the resources, any
// group or the group, any namespace or the namespace, the cluster ("" any).
// The index revisions_objects (migration 0007) answers it alone, grouped
// in its order (no hash of every write): reading the writes' rows took
// 0.2-0.35 s for a Node with 11k writes.
const objectsSQL = `SELECT r.cluster, r.api_group, r.resource, r.namespace, r.name, count(*), min(r.stage_ns), max(r.stage_ns)
	FROM revisions r WHERE ($1 = '' OR r.name = $1) AND r.resource = ANY($2) AND ($3 OR r.api_group = $4) AND ($5 OR r.namespace = $6)
	  AND ($7 = '' OR r.cluster = $7)
	GROUP BY r.resource, r.name, r.namespace, r.api_group, r.cluster
	ORDER BY r.cluster COLLATE "C", r.api_group COLLATE "C", r.resource COLLATE "C", r.namespace COLLATE "C", r.name COLLATE "C"`

// objectKeysSQL is Objects' query for cpid.ObjectQuery.KeysOnly, a name
// and one resource: the objects of that name, a seek of revisions_objects
// each (a skip from one to the next, past the rest of its writes, over the
// columns q leaves open: the namespace, the group, the cluster), their
// writes not counted (0). The busiest Node of ten million events: 0.4 ms,
// against 22-32 ms to count its 48,702 writes. The columns q fixes are
// conditions of their own, out of the skip's row comparison: in it, the
// index's scan started at the first write of the object and read them all
// to the comparison's end (18 ms).
func (s *Store) objectKeysSQL(q cpid.ObjectQuery) (string, []any) {
	args := []any{q.Resources[0], q.Name}
	conds := []string{`r.resource = $1`, `r.name = $2`}
	var open []string
	for _, c := range []struct {
		col   string
		fixed bool
		value string
	}{{"namespace", !q.AllNamespaces, q.Namespace}, {"api_group", !q.AnyGroup, q.Group}, {"cluster", s.cluster != "", s.cluster}} {
		if c.fixed {
			args = append(args, c.value)
			conds = append(conds, fmt.Sprintf(`r.%s = $%d`, c.col, len(args)))
		} else {
			open = append(open, c.col)
		}
	}
	where := strings.Join(conds, " AND ")
	cols := `r.namespace, r.api_group, r.cluster`
	first := `SELECT ` + cols + ` FROM revisions r WHERE ` + where + ` ORDER BY ` + cols + ` LIMIT 1`
	if len(open) == 0 {
		return `SELECT o.cluster, o.api_group, $1::text, o.namespace, $2::text, 0, 0::bigint, 0::bigint FROM (` + first + `) o`, args
	}
	row := func(t string) string {
		out := make([]string, len(open))
		for i, c := range open {
			out[i] = t + "." + c
		}
		return "(" + strings.Join(out, ", ") + ")"
	}
	return `WITH RECURSIVE o AS (
	  (` + first + `)
	  UNION ALL
	  SELECT x.* FROM o, LATERAL (SELECT ` + cols + ` FROM revisions r WHERE ` + where + ` AND ` + row("r") + ` > ` + row("o") + `
	   ORDER BY ` + cols + ` LIMIT 1) x)
	SELECT o.cluster, o.api_group, $1::text, o.namespace, $2::text, 0, 0::bigint, 0::bigint FROM o
	ORDER BY o.cluster COLLATE "C", o.api_group COLLATE "C", o.namespace COLLATE "C"`, args
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
	sql, args := s.historySQL(q, n)
	return eachRow(ctx, s.pool, sql, args, row)
}

// historySQL is HistoryRows' query and its arguments.
func (s *Store) historySQL(q cpid.HistoryQuery, n int) (string, []any) {
	o := q.Object
	cluster := o.Cluster
	if cluster == "" {
		cluster = s.cluster
	}
	bodies, join := `'', ''`, ``
	if q.Bodies {
		bodies, join = `COALESCE(b.response_object, ''), COALESCE(b.request_object, '')`, `LEFT JOIN audit_bodies b ON b.event_id = r.event_id`
	}
	// The last n writes are found from revisions alone (revisions_object,
	// in seq order), then joined: joining first read every write of the
	// object (11k for a busy Node on 5M events, 1.4 s) to keep 200. Their
	// changes are looked up by id, each (the LIMIT keeps the subquery a
	// lookup): joined, PostgreSQL hashed every change (a read of the whole
	// table, 5 ms of 13 for 5,680 changes) to find 200.
	return `WITH last AS MATERIALIZED (
		SELECT r.* FROM revisions r
		WHERE r.resource = $1 AND r.namespace = $2 AND r.name = $3 AND r.api_group = $4 AND ($5 = '' OR r.cluster = $5)
		  AND ($6::bigint = 0 OR r.stage_ns >= $6) AND ($7::bigint = 0 OR r.stage_ns < $7)
		  AND ($8 = '' OR strpos(lower(r.writer), $8) > 0)
		  AND ($9 = '' OR EXISTS (SELECT 1 FROM audit_events u WHERE u.id = r.event_id AND strpos(lower(u.username), $9) > 0))
		  AND ($10 = '' OR EXISTS (SELECT 1 FROM changes t WHERE t.id = r.change_id AND t.trigger = $10))
		ORDER BY r.seq DESC, r.attempt DESC, r.stage_ns DESC, r.event_id DESC LIMIT $11)
		SELECT r.event_id, r.cluster, r.seq, r.order_by, r.stage_ns, e.received_ns, e.verb, e.subresource, COALESCE(e.code, 0),
		       r.attempt <> 0 AS attempt, e.level, e.resource_version, r.writer, r.writer_is_user <> 0, e.username, e.user_agent,
		       COALESCE(r.cpid, ''), COALESCE(r.cpid_origin, ''), COALESCE(r.change_id, ''), COALESCE(c.trigger, ''),
		       COALESCE(c.trigger_detail, ''), COALESCE(r.cause_rule, ''), COALESCE(r.cause_event_id, 0),
		       COALESCE(ce.stage_ns, 0), COALESCE(cr.writer, ''), COALESCE(ce.verb, ''), COALESCE(ce.subresource, ''),
		       COALESCE(ce.api_group, ''), COALESCE(ce.resource, ''), COALESCE(ce.namespace, ''), COALESCE(ce.name, ''),
		       COALESCE(r.hop_ns, 0), COALESCE(r.explain, ''), COALESCE(r.explain_detail, ''), COALESCE(r.confidence, ''), ` + bodies + `
		FROM last r JOIN audit_events e ON e.id = r.event_id
		LEFT JOIN LATERAL (SELECT t.trigger, t.trigger_detail FROM changes t WHERE t.id = r.change_id LIMIT 1) c ON true
		LEFT JOIN audit_events ce ON ce.id = r.cause_event_id
		LEFT JOIN revisions cr ON cr.event_id = r.cause_event_id ` + join + `
		ORDER BY r.seq, r.attempt, r.stage_ns, r.event_id`,
		[]any{o.Resource, o.Namespace, o.Name, o.Group, cluster, q.SinceNS, q.UntilNS, q.Writer, q.User, string(q.Trigger), sqlLimit(n)}
}

// RevisionRows reads cpid.RevisionColumns (cpid.RowReader).
func (s *Store) RevisionRows(ctx context.Context, o cpid.ObjectKey, n int, row func(cpid.RowScan) error) error {
	return eachRow(ctx, s.pool, `WITH last AS MATERIALIZED (
		SELECT r.* FROM revisions r
		WHERE r.resource = $1 AND r.namespace = $2 AND r.name = $3 AND r.api_group = $4 AND ($5 = '' OR r.cluster = $5)
		ORDER BY r.seq DESC, r.attempt DESC, r.stage_ns DESC, r.event_id DESC LIMIT $6)
		SELECT r.event_id, r.seq, r.attempt <> 0 AS attempt, r.order_by, r.stage_ns, r.writer, e.verb, e.subresource,
		       COALESCE(e.code, 0), e.level, e.resource_version, COALESCE(r.cpid, ''), COALESCE(r.change_id, ''),
		       COALESCE(b.response_object, ''), COALESCE(b.request_object, '')
		FROM last r JOIN audit_events e ON e.id = r.event_id LEFT JOIN audit_bodies b ON b.event_id = r.event_id
		ORDER BY r.seq, r.attempt, r.stage_ns, r.event_id`, []any{o.Resource, o.Namespace, o.Name, o.Group, o.Cluster, sqlLimit(n)}, row)
}

// sqlLimit is a LIMIT of n rows, 0 for all: NULL.
func sqlLimit(n int) *int {
	if n <= 0 {
		return nil
	}
	return &n
}

// eachRow runs a query and calls row with each row's Scan.
func eachRow(ctx context.Context, db reader, q string, args []any, row func(cpid.RowScan) error) error {
	rows, err := db.Query(ctx, q, args...)
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
	rows, err := s.pool.Query(ctx, `WITH RECURSIVE t(resource) AS (
		  SELECT (SELECT resource FROM revisions WHERE ($1 = '' OR cluster = $1) ORDER BY resource LIMIT 1)
		  UNION ALL
		  SELECT (SELECT resource FROM revisions WHERE resource > t.resource AND ($1 = '' OR cluster = $1) ORDER BY resource LIMIT 1)
		  FROM t WHERE t.resource IS NOT NULL)
		SELECT resource FROM t WHERE resource IS NOT NULL ORDER BY resource COLLATE "C"`, s.cluster)
	if err != nil {
		return nil, fmt.Errorf("resources with writes: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ObjectNames returns the objects with writes whose name starts with
// q.Prefix (cpid.ObjectLister).
func (s *Store) ObjectNames(ctx context.Context, q cpid.ObjectNameQuery) ([]cpid.ObjectKey, error) {
	if len(q.Resources) == 0 {
		return nil, nil
	}
	var limit *int
	if q.Limit > 0 {
		limit = &q.Limit
	}
	rows, err := s.pool.Query(ctx, `SELECT r.api_group, r.resource, r.namespace, r.name FROM revisions r
		WHERE r.resource = ANY($1) AND starts_with(r.name, $2) AND ($3 OR r.api_group = $4) AND ($5 OR r.namespace = $6)
		  AND ($7 = '' OR r.cluster = $7)
		GROUP BY r.api_group, r.resource, r.namespace, r.name
		ORDER BY r.name COLLATE "C", r.namespace COLLATE "C", r.resource COLLATE "C", r.api_group COLLATE "C" LIMIT $8`,
		q.Resources, q.Prefix, q.AnyGroup, q.Group, q.AllNamespaces, q.Namespace, s.cluster, limit)
	if err != nil {
		return nil, fmt.Errorf("objects named %s...: %w", q.Prefix, err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (cpid.ObjectKey, error) {
		var k cpid.ObjectKey
		err := row.Scan(&k.Group, &k.Resource, &k.Namespace, &k.Name)
		return k, err
	})
}
