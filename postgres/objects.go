package postgres

import (
	"context"

	"github.com/cpid-dev/cpid"
)

// Objects reads back the stored writes object by object (cpid.DeriveTx).
func (d *deriveTx) Objects(ctx context.Context, want func(cpid.ObjectKey) bool, fn func(cpid.ObjectKey, []cpid.Placed) error) error {
	if err := d.begin(ctx); err != nil {
		return err
	}
	rows, err := d.tx.Query(ctx, `SELECT r.api_group, r.resource, r.namespace, r.name,
		r.event_id, e.resource_version, r.stage_ns, r.seq, r.order_by
		FROM revisions r JOIN audit_events e ON e.id = r.event_id
		WHERE r.cluster = $1 ORDER BY r.api_group, r.resource, r.namespace, r.name`, d.cluster)
	if err != nil {
		return err
	}
	defer rows.Close()
	return cpid.GroupObjects(rows, func(k cpid.ObjectKey, rs []cpid.Placed) error {
		if !want(k) {
			return nil
		}
		return fn(k, rs)
	})
}

// TimeOrder sets the stored writes of the objects want takes to time order
// (cpid.DeriveTx): the keys of the cluster's objects read once, those
// wanted updated in one statement.
func (d *deriveTx) TimeOrder(ctx context.Context, want func(cpid.ObjectKey) bool) error {
	if err := d.begin(ctx); err != nil {
		return err
	}
	rows, err := d.tx.Query(ctx, `SELECT DISTINCT api_group, resource, namespace, name FROM revisions WHERE cluster = $1`, d.cluster)
	if err != nil {
		return err
	}
	var gs, rs, nss, ns []string
	for rows.Next() {
		var k cpid.ObjectKey
		if err := rows.Scan(&k.Group, &k.Resource, &k.Namespace, &k.Name); err != nil {
			rows.Close()
			return err
		}
		if want(k) {
			gs, rs, nss, ns = append(gs, k.Group), append(rs, k.Resource), append(nss, k.Namespace), append(ns, k.Name)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(gs) == 0 {
		return err
	}
	_, err = d.tx.Exec(ctx, `UPDATE revisions r SET order_by = 'time'
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS k(g, res, ns, n)
		WHERE r.cluster = $5 AND r.api_group = k.g AND r.resource = k.res AND r.namespace = k.ns AND r.name = k.n
		AND r.order_by <> 'time'`, gs, rs, nss, ns, d.cluster)
	return err
}
