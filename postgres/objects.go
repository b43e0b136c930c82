package postgres

import (
	"context"

	"github.com/cpid-dev/cpid"
)

// Objects gives the objects what need says of each (cpid.DeriveTx), from
// one read of the cluster's object keys: those to time order in one
// UPDATE, the writes of those that need them in one read of theirs alone,
// by object.
func (d *deriveTx) Objects(ctx context.Context, need func(cpid.ObjectKey) cpid.ObjectNeed, fn func(cpid.ObjectKey, []cpid.Placed) error) error {
	if err := d.begin(ctx); err != nil {
		return err
	}
	rows, err := d.tx.Query(ctx, `SELECT DISTINCT api_group, resource, namespace, name FROM revisions WHERE cluster = $1`, d.cluster)
	if err != nil {
		return err
	}
	var keys [needKinds]objectKeys
	for rows.Next() {
		var k cpid.ObjectKey
		if err := rows.Scan(&k.Group, &k.Resource, &k.Namespace, &k.Name); err != nil {
			rows.Close()
			return err
		}
		if n := need(k); n != cpid.NeedNothing {
			keys[n].add(k)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if ks := keys[cpid.NeedTimeOrder]; len(ks.groups) > 0 {
		_, err := d.tx.Exec(ctx, `UPDATE revisions r SET order_by = 'time'
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS k(g, res, ns, n)
			WHERE r.cluster = $5 AND r.api_group = k.g AND r.resource = k.res AND r.namespace = k.ns AND r.name = k.n
			AND r.order_by <> 'time'`, ks.groups, ks.resources, ks.namespaces, ks.names, d.cluster)
		if err != nil {
			return err
		}
	}
	ks := keys[cpid.NeedWrites]
	if len(ks.groups) == 0 {
		return nil
	}
	rows, err = d.tx.Query(ctx, `SELECT r.api_group, r.resource, r.namespace, r.name,
		r.event_id, e.resource_version, r.stage_ns, r.seq, r.order_by
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS k(g, res, ns, n)
		JOIN revisions r ON r.cluster = $5 AND r.api_group = k.g AND r.resource = k.res AND r.namespace = k.ns AND r.name = k.n
		JOIN audit_events e ON e.id = r.event_id
		ORDER BY r.api_group, r.resource, r.namespace, r.name`, ks.groups, ks.resources, ks.namespaces, ks.names, d.cluster)
	if err != nil {
		return err
	}
	defer rows.Close()
	return cpid.GroupObjects(rows, fn)
}

// needKinds is the number of cpid.ObjectNeed values.
const needKinds = int(cpid.NeedWrites) + 1

// objectKeys are object keys as the four arrays of their columns.
type objectKeys struct {
	groups, resources, namespaces, names []string
}

func (o *objectKeys) add(k cpid.ObjectKey) {
	o.groups, o.resources = append(o.groups, k.Group), append(o.resources, k.Resource)
	o.namespaces, o.names = append(o.namespaces, k.Namespace), append(o.names, k.Name)
}
