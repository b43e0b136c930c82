package cpid

// GroupObjects calls fn with the writes of each object that rows holds,
// for engines that read a table object by object (DeriveTx.Objects). Each
// row is the object's group, resource, namespace and name, then the
// write's event id, resource version, stage time, place and order, and
// the rows come ordered by object. The caller closes rows.
func GroupObjects(rows Rows, fn func(ObjectKey, []Placed) error) error {
	var cur ObjectKey
	var rs []Placed
	for {
		var k ObjectKey
		var p Placed
		ok := rows.Next()
		if ok {
			if err := rows.Scan(&k.Group, &k.Resource, &k.Namespace, &k.Name, &p.EventID, &p.ResourceVersion, &p.StageNS, &p.Seq, &p.OrderBy); err != nil {
				return err
			}
		} else if err := rows.Err(); err != nil {
			return err
		}
		if !ok || k != cur {
			if len(rs) > 0 {
				if err := fn(cur, rs); err != nil {
					return err
				}
			}
			cur, rs = k, nil
		}
		if !ok {
			return nil
		}
		rs = append(rs, p)
	}
}
