package cpid

// GroupObjects calls fn with the writes of each object that next reads,
// for engines that read a table ordered by object (DeriveTx.Objects):
// next fills one row and says whether there was one.
func GroupObjects(next func(*ObjectKey, *Placed) (bool, error), fn func(ObjectKey, []Placed) error) error {
	var cur ObjectKey
	var rs []Placed
	for {
		var k ObjectKey
		var p Placed
		ok, err := next(&k, &p)
		if err != nil {
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
