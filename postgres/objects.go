package postgres

import (
	"context"

	"github.com/cpid-dev/cpid"
)

// Objects reads back the stored writes object by object (cpid.DeriveTx).
func (d *deriveTx) Objects(ctx context.Context, want func(cpid.ObjectKey) (read, versions bool), fn func(cpid.ObjectKey, []cpid.Placed) error) error {
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
		if read, _ := want(k); !read {
			return nil
		}
		return fn(k, rs)
	})
}
