package reconstruct

import (
	"context"
	"iter"

	"github.com/cpid-dev/cpid"
)

// saver hands a run's output to the store and keeps what the run's end
// needs: which objects to renumber, which changes to summarize. It owns the
// run's batching: with stepRows > 0 it commits a step every stepRows rows.
//
// A full rebuild in one transaction (bulk) keeps a book of the changes'
// summaries as it stores, and renumbers from one read of what it stored,
// object by object (DeriveTx.Objects); any other run reads the writes of
// the objects and changes it touched back from the store. Both go through
// the same code (place, changeSum), so they agree.
type saver struct {
	tx       cpid.DeriveTx
	stepRows int
	rows     int
	bulk     *book

	changes          map[string]bool
	reorder, relabel map[cpid.ObjectKey]bool
}

// book is what a bulk run knows of what it stored.
type book struct {
	changes   map[string]*changeSum
	mergelogs map[string]bool // cpid and origin: unique without the table's index
}

func newSaver(tx cpid.DeriveTx, bulk bool, stepRows int) *saver {
	sv := &saver{tx: tx, stepRows: stepRows, changes: map[string]bool{},
		reorder: map[cpid.ObjectKey]bool{}, relabel: map[cpid.ObjectKey]bool{}}
	if bulk {
		sv.bulk = &book{changes: map[string]*changeSum{}, mergelogs: map[string]bool{}}
	}
	return sv
}

// save stores one batch of the engine's output.
func (sv *saver) save(ctx context.Context, d *cpid.Derived) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b := sv.bulk; b != nil {
		kept := d.Mergelogs[:0:0]
		for _, m := range d.Mergelogs {
			k := m.CPID + "\x00" + string(m.Origin)
			if !b.mergelogs[k] {
				b.mergelogs[k] = true
				kept = append(kept, m)
			}
		}
		d.Mergelogs = kept
		for i := range d.Writes {
			x := &d.Writes[i]
			if x.ChangeID != "" {
				c := b.changes[x.ChangeID]
				if c == nil {
					c = &changeSum{objects: map[cpid.ObjectKey]bool{}}
					b.changes[x.ChangeID] = c
				}
				c.add(x)
			}
		}
	} else {
		for _, x := range d.Writes {
			if x.ChangeID != "" {
				sv.changes[x.ChangeID] = true
			}
		}
		for _, c := range d.Changes {
			sv.changes[c.ID] = true
		}
	}
	for k := range d.Reorder {
		sv.reorder[k] = true
	}
	for k := range d.Relabel {
		sv.relabel[k] = true
	}
	if err := sv.tx.Save(ctx, d); err != nil {
		return err
	}
	if sv.rows += d.Rows(); sv.stepRows > 0 && sv.rows >= sv.stepRows {
		sv.rows = 0
		return sv.tx.Step(ctx)
	}
	return nil
}

// finish renumbers the objects written out of order, summarizes the changes
// the run touched, and stores the watermark.
func (sv *saver) finish(ctx context.Context, w cpid.Watermark) error {
	// A live run (steps) commits what it stored before it reads it back,
	// and between the parts of its end: the reads go to the readers, and
	// a tailer waits for one part, not for the whole end.
	if err := sv.step(ctx); err != nil {
		return err
	}
	var placed []cpid.Placed
	if sv.bulk != nil {
		// One read of what was stored, object by object: memory for the
		// places that change, not for every write of the run.
		if len(sv.reorder)+len(sv.relabel) > 0 {
			err := sv.tx.Objects(ctx, func(k cpid.ObjectKey, rs []cpid.Placed) error {
				switch {
				case sv.reorder[k]:
					placed = append(placed, place(rs, true)...)
				case sv.relabel[k]:
					placed = append(placed, place(rs, false)...)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	} else {
		for k := range sv.reorder {
			rs, err := sv.tx.Revisions(ctx, k)
			if err != nil {
				return err
			}
			placed = append(placed, place(rs, true)...)
		}
		for k := range sv.relabel {
			if sv.reorder[k] {
				continue
			}
			rs, err := sv.tx.Revisions(ctx, k)
			if err != nil {
				return err
			}
			placed = append(placed, place(rs, false)...)
		}
	}
	for part := range sv.parts(len(placed)) {
		if err := sv.tx.Renumber(ctx, placed[part[0]:part[1]]); err != nil {
			return err
		}
		if err := sv.step(ctx); err != nil {
			return err
		}
	}
	var sums []cpid.ChangeSummary
	if b := sv.bulk; b != nil {
		for id, c := range b.changes {
			if c.writes > 0 {
				sums = append(sums, c.summary(id))
			}
		}
	} else {
		for id := range sv.changes {
			ws, err := sv.tx.ChangeWrites(ctx, id)
			if err != nil {
				return err
			}
			c := changeSum{objects: map[cpid.ObjectKey]bool{}}
			for i := range ws {
				c.add(&ws[i])
			}
			sums = append(sums, c.summary(id))
		}
	}
	for part := range sv.parts(len(sums)) {
		if err := sv.tx.Summarize(ctx, sums[part[0]:part[1]]); err != nil {
			return err
		}
		if err := sv.step(ctx); err != nil {
			return err
		}
	}
	return sv.tx.Finish(ctx, w)
}

// step commits what is stored so far, in a live run (steps).
func (sv *saver) step(ctx context.Context) error {
	if sv.stepRows > 0 {
		return sv.tx.Step(ctx)
	}
	return nil
}

// parts cuts n rows into the runs of one step each: all of them at once
// when the run is one transaction.
func (sv *saver) parts(n int) iter.Seq[[2]int] {
	size := n
	if sv.stepRows > 0 {
		size = sv.stepRows
	}
	return func(yield func([2]int) bool) {
		for i := 0; i < n; i += size {
			if !yield([2]int{i, min(i+size, n)}) {
				return
			}
		}
	}
}

// place gives the writes of one object their places, by OrderRevisions when
// reorder is set, else keeping their places and ordering them by time; it
// updates rs and returns the writes whose place changed.
func place(rs []cpid.Placed, reorder bool) []cpid.Placed {
	var changed []cpid.Placed
	set := func(r *cpid.Placed, seq int, by string) {
		if r.Seq != seq || r.OrderBy != by {
			r.Seq, r.OrderBy = seq, by
			changed = append(changed, *r)
		}
	}
	if !reorder {
		for i := range rs {
			set(&rs[i], rs[i].Seq, "time")
		}
		return changed
	}
	ids, by := OrderRevisions(len(rs), func(i int) (int64, string, int64) {
		return rs[i].EventID, rs[i].ResourceVersion, rs[i].StageNS
	})
	at := make(map[int64]int, len(ids))
	for i, id := range ids {
		at[id] = i + 1
	}
	for i := range rs {
		set(&rs[i], at[rs[i].EventID], by)
	}
	return changed
}

// changeSum adds up the writes of a change (its attempts, failed writes,
// are not part of it).
type changeSum struct {
	settled  int64
	writes   int
	objects  map[cpid.ObjectKey]bool
	hop      int64
	hopEvent int64 // 0: no write of the change has a cause
}

func (c *changeSum) add(x *cpid.Write) {
	if x.Attempt {
		return
	}
	c.settled = max(c.settled, x.StageNS)
	c.writes++
	c.objects[x.Key] = true
	if x.CauseEventID != 0 && (c.hopEvent == 0 || x.HopNS > c.hop || x.HopNS == c.hop && x.EventID < c.hopEvent) {
		c.hop, c.hopEvent = x.HopNS, x.EventID
	}
}

// summary is the change's summary; SettledNS is 0 when it has no write (the
// store keeps the time of its start).
func (c *changeSum) summary(id string) cpid.ChangeSummary {
	s := cpid.ChangeSummary{ID: id, SettledNS: c.settled, Writes: c.writes, Objects: len(c.objects)}
	if c.hopEvent != 0 {
		s.SlowestHopNS, s.SlowestHopEventID = c.hop, c.hopEvent
	}
	return s
}
