package reconstruct

import (
	"context"
	"hash/maphash"
	"iter"
	"slices"
	"strings"

	"github.com/cpid-dev/cpid"
)

// saver hands a run's output to the store and keeps what the run's end
// needs: which objects to renumber, which changes to summarize. It owns the
// run's batching: with stepRows > 0 it commits a step every stepRows rows.
//
// A full rebuild in one transaction (bulk) keeps a book of the changes'
// summaries as it stores, reads back the writes of the objects it
// reorders and has the store set those of the objects that only turned to
// time order (what place gives them), both from one read of the keys
// (DeriveTx.Objects); any other run reads the writes of the objects and changes it
// touched back from the store. Both go through the same code (place,
// changeSum), so they agree (TestEvictedObjects).
type saver struct {
	tx       cpid.DeriveTx
	stepRows int
	rows     int
	bulk     *book

	changes          map[string]bool
	reorder, relabel map[cpid.ObjectKey]bool
}

// book is what a bulk run knows of what it stored. It holds what it needs
// of every object and CPID the run met, to its end: 128-bit hashes
// (hash128) rather than keys and ids, a quarter of their memory at 10M
// events (two keys would have to share all 128 bits to be taken for one).
type book struct {
	changes map[string]*changeSum
	// reorder and relabel are saver's, by their keys' hashes.
	reorder, relabel map[[2]uint64]struct{}
}

func newSaver(tx cpid.DeriveTx, bulk bool, stepRows int) *saver {
	sv := &saver{tx: tx, stepRows: stepRows, changes: map[string]bool{},
		reorder: map[cpid.ObjectKey]bool{}, relabel: map[cpid.ObjectKey]bool{}}
	if bulk {
		sv.bulk = &book{changes: map[string]*changeSum{},
			reorder: map[[2]uint64]struct{}{}, relabel: map[[2]uint64]struct{}{}}
	}
	return sv
}

// save stores one batch of the engine's output.
func (sv *saver) save(ctx context.Context, d *cpid.Derived) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b := sv.bulk; b != nil {
		// The first mergelog of each CPID and origin, unique without the
		// table's index: the engine says which came again (the graph
		// notes the origins of each CPID), where a set of their hashes
		// here held 17 MB to the run's end at 10M synthetic events.
		kept := d.Mergelogs[:0:0]
		for _, m := range d.Mergelogs {
			if !m.Again {
				kept = append(kept, m)
			}
		}
		d.Mergelogs = kept
		for i := range d.Writes {
			x := &d.Writes[i]
			if x.ChangeID != "" {
				c := b.changes[x.ChangeID]
				if c == nil {
					c = &changeSum{objects: map[uint64]struct{}{}}
					b.changes[strings.Clone(x.ChangeID)] = c // not the row's texts
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
	switch b := sv.bulk; {
	case b != nil:
		for k := range d.Reorder {
			b.reorder[keyHash128(k)] = struct{}{}
		}
		for k := range d.Relabel {
			b.relabel[keyHash128(k)] = struct{}{}
		}
	default:
		for k := range d.Reorder {
			sv.reorder[k] = true
		}
		for k := range d.Relabel {
			sv.relabel[k] = true
		}
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
	var placed places
	if b := sv.bulk; b != nil {
		// Memory for the places that change (16 bytes each), not for
		// every write of the run. An object relabelled keeps its numbers:
		// the store sets its writes to time order (what place(rs, false)
		// gives) without reading them; one reordered is read back.
		if len(b.reorder)+len(b.relabel) > 0 {
			need := func(k cpid.ObjectKey) cpid.ObjectNeed {
				h := keyHash128(k)
				if _, ok := b.reorder[h]; ok {
					return cpid.NeedWrites
				}
				if _, ok := b.relabel[h]; ok {
					return cpid.NeedTimeOrder
				}
				return cpid.NeedNothing
			}
			err := sv.tx.Objects(ctx, need, func(k cpid.ObjectKey, rs []cpid.Placed) error {
				placed.add(place(rs, true))
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
			placed.add(place(rs, true))
		}
		for k := range sv.relabel {
			if sv.reorder[k] {
				continue
			}
			rs, err := sv.tx.Revisions(ctx, k)
			if err != nil {
				return err
			}
			placed.add(place(rs, false))
		}
	}
	for part := range sv.parts(len(placed.rows)) {
		// A bulk run's one part goes to the store in pieces of
		// placesPiece rows, each made from the compact list as it goes.
		for i := part[0]; i < part[1]; i += placesPiece {
			if err := sv.tx.Renumber(ctx, placed.slice(i, min(i+placesPiece, part[1]))); err != nil {
				return err
			}
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
			c := changeSum{objects: map[uint64]struct{}{}}
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
	settled int64
	writes  int
	// objects holds the 64-bit hashes of the keys of the objects written
	// (keyHash): a fifth of the memory of the keys, which a full rebuild
	// holds for every change to its end; two keys of one change would have
	// to share a hash to be counted once.
	objects  map[uint64]struct{}
	hop      int64
	hopEvent int64 // 0: no write of the change has a cause
}

func (c *changeSum) add(x *cpid.Write) {
	if x.Attempt {
		return
	}
	c.settled = max(c.settled, x.StageNS)
	c.writes++
	c.objects[keyHash(x.Key)] = struct{}{}
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

var keySeed, keySeed2 = maphash.MakeSeed(), maphash.MakeSeed()

// sum64 is a 64-bit hash of strings with seed, within one process.
func sum64(seed maphash.Seed, ss ...string) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for _, s := range ss {
		h.WriteString(s)
		h.WriteByte(0)
	}
	return h.Sum64()
}

// keyHash is a 64-bit hash of an object's key.
func keyHash(k cpid.ObjectKey) uint64 {
	return sum64(keySeed, k.Group, k.Resource, k.Namespace, k.Name)
}

// hash128 is a 128-bit hash of strings: two 64-bit ones with seeds of
// their own.
func hash128(ss ...string) [2]uint64 { return [2]uint64{sum64(keySeed, ss...), sum64(keySeed2, ss...)} }

// keyHash128 is hash128 of an object's key.
func keyHash128(k cpid.ObjectKey) [2]uint64 { return hash128(k.Group, k.Resource, k.Namespace, k.Name) }

// places are the places that change, compact: a full rebuild of 10M
// synthetic events turns 2.7M writes to time order at its end.
type places struct {
	rows []placeRow
	by   []string // the OrderBy values, by index
}

type placeRow struct {
	eventID int64
	seq     int32
	by      uint8
}

// placesPiece is how many places go to the store at once.
const placesPiece = 1 << 16

func (p *places) add(ps []cpid.Placed) {
	for _, x := range ps {
		i := slices.Index(p.by, x.OrderBy)
		if i < 0 {
			i = len(p.by)
			p.by = append(p.by, x.OrderBy)
		}
		p.rows = append(p.rows, placeRow{eventID: x.EventID, seq: int32(x.Seq), by: uint8(i)})
	}
}

// slice is rows i to j as the store takes them.
func (p *places) slice(i, j int) []cpid.Placed {
	out := make([]cpid.Placed, 0, j-i)
	for _, r := range p.rows[i:j] {
		out = append(out, cpid.Placed{EventID: r.eventID, Seq: int(r.seq), OrderBy: p.by[r.by]})
	}
	return out
}
