package sqlite

import (
	"context"
	"fmt"

	"github.com/cpid-dev/cpid"
)

// PodWrites returns the writes of the Pods that a change created
// (cpid.ChangeReader, through cpid.ReadService).
func (s *Store) PodWrites(ctx context.Context, change string) ([]cpid.PodWrite, error) {
	return cpid.ReadService{Rows: s}.PodWrites(ctx, change)
}

// PodWriteRows reads the writes of the Pods that a change created
// (cpid.RowReader).
func (s *Store) PodWriteRows(ctx context.Context, change string, row func(cpid.RowScan) error) error {
	return eachRow(ctx, s.r, podWritesSQL(change), []any{change}, row)
}

// podWritesSQL is PodWrites' query. For one change, the Pods it created
// are found first (MATERIALIZED) from its writes (revisions_change; the
// unary + keeps SQLite from reading every write of a Pod through
// revisions_object instead), then each Pod's writes from its creation by
// revisions_object_time:
// otherwise SQLite joins in the other order and reads every Pod write of
// the database (TestSLIIndexUsed).
func podWritesSQL(change string) string {
	created, pods := `WITH created AS (`, `r.resource = 'pods'`
	if change != "" {
		created, pods = `WITH created AS MATERIALIZED (`, `+r.resource = 'pods'`
	}
	return created + `
		SELECT r.namespace, r.name, r.change_id, r.stage_ns, r.cluster FROM revisions r JOIN audit_events e ON e.id = r.event_id
		WHERE ` + pods + ` AND r.api_group = '' AND e.verb = 'create' AND e.subresource = '' AND r.attempt = 0
		  AND ` + changeCond("r", change) + `)
		SELECT c.change_id, ch.started_ns, c.namespace, c.name, e.verb, e.subresource, e.stage_ns, COALESCE(b.response_object, '')
		FROM created c JOIN changes ch ON ch.id = c.change_id
		JOIN revisions r ON r.resource = 'pods' AND r.api_group = '' AND r.namespace = c.namespace AND r.name = c.name
		  AND r.cluster = c.cluster AND r.stage_ns >= c.stage_ns AND r.attempt = 0
		JOIN audit_events e ON e.id = r.event_id LEFT JOIN audit_bodies b ON b.event_id = r.event_id
		ORDER BY e.stage_ns, e.id`
}

// changeCond is the condition on the change of revisions r: the change ?1,
// or any change when change is "". Written apart: SQLite cannot answer
// "(?1 is empty OR r.change_id = ?1)" from the index revisions_change and
// would read every write (TestSLIIndexUsed).
func changeCond(r, change string) string {
	if change == "" {
		return r + `.change_id IS NOT NULL AND ?1 = ''`
	}
	return r + `.change_id = ?1`
}

// hopsSQL is Hops' query: ?1 the change, ?2 the view's cluster.
func hopsSQL(change string) string {
	return `SELECT writer, hop_ns, COALESCE(cause_rule, ''), COALESCE(explain, ''), resource FROM revisions r
		WHERE hop_ns IS NOT NULL AND attempt = 0 AND ` + changeCond("r", change) + `
		AND (?2 = '' OR cluster = ?2) ORDER BY event_id`
}

// Hops returns the hop latencies of every explained write of a change (all
// changes when change is "").
func (s *Store) Hops(ctx context.Context, change string) ([]cpid.Hop, error) {
	rows, err := s.r.QueryContext(ctx, hopsSQL(change), change, s.cluster)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []cpid.Hop
	for rows.Next() {
		var h cpid.Hop
		if err := rows.Scan(&h.Writer, &h.HopNS, &h.Rule, &h.Explain, &h.Resource); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// Anomalies returns the anomalies of a change, or of the view's clusters
// ("" change), in apiserver order (cpid.ChangeReader).
func (s *Store) Anomalies(ctx context.Context, change string) ([]cpid.AnomalyRow, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT a.kind, a.event_id, e.stage_ns, a.api_group, a.resource, a.namespace, a.name,
		a.detail, COALESCE(r.change_id, ''), a.cluster
		FROM anomalies a JOIN audit_events e ON e.id = a.event_id LEFT JOIN revisions r ON r.event_id = a.event_id
		WHERE (?1 = '' OR r.change_id = ?1) AND (?2 = '' OR a.cluster = ?2) ORDER BY e.stage_ns, a.event_id, a.kind`,
		change, s.cluster)
	if err != nil {
		return nil, fmt.Errorf("anomalies: %w", err)
	}
	defer rows.Close()
	var out []cpid.AnomalyRow
	for rows.Next() {
		var a cpid.AnomalyRow
		if err := rows.Scan(&a.Kind, &a.EventID, &a.NS, &a.APIGroup, &a.Resource, &a.Namespace, &a.Name, &a.Detail,
			&a.Change, &a.Cluster); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}
