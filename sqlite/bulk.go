package sqlite

import (
	"context"
	"database/sql"

	"github.com/cpid-dev/cpid/reconstruct"
)

// bulkBook is what a full rebuild in one transaction keeps of the writes it
// stores, so that it can correct their numbering and summarize the changes
// in memory, instead of reading the rows back as an incremental run must
// (orderRevisions, relabelRevisions, summarizeChanges give the same).
type bulkBook struct {
	objects   map[reconstruct.ObjectKey][]bookRev
	changes   map[string]*changeSum
	mergelogs map[string]bool // cpid and origin: unique without the table's index
}

type bookRev struct {
	id    int64
	rv    string
	stage int64
	seq   int
	by    string
}

type changeSum struct {
	settled  int64
	writes   int
	objects  map[reconstruct.ObjectKey]bool
	hop      int64
	hopEvent int64 // 0: no write of the change has a cause
}

func newBulkBook() *bulkBook {
	return &bulkBook{objects: map[reconstruct.ObjectKey][]bookRev{}, changes: map[string]*changeSum{}, mergelogs: map[string]bool{}}
}

// first reports whether a mergelog of cpid and origin is the first one.
func (b *bulkBook) first(cpid string, o reconstruct.Origin) bool {
	k := cpid + "\x00" + string(o)
	if b.mergelogs[k] {
		return false
	}
	b.mergelogs[k] = true
	return true
}

// add records a stored write.
func (b *bulkBook) add(x *reconstruct.Write) {
	b.objects[x.Key] = append(b.objects[x.Key], bookRev{x.EventID, x.ResourceVersion, x.StageNS, x.Seq, x.OrderBy})
	if x.ChangeID == "" || x.Attempt {
		return
	}
	c := b.changes[x.ChangeID]
	if c == nil {
		c = &changeSum{objects: map[reconstruct.ObjectKey]bool{}}
		b.changes[x.ChangeID] = c
	}
	c.settled = max(c.settled, x.StageNS)
	c.writes++
	c.objects[x.Key] = true
	if x.CauseEventID != 0 && (c.hopEvent == 0 || x.HopNS > c.hop || x.HopNS == c.hop && x.EventID < c.hopEvent) {
		c.hop, c.hopEvent = x.HopNS, x.EventID
	}
}

// renumber corrects the places of the writes of the reordered and the
// relabelled objects, by event ID (the table's key: no index needed).
func (b *bulkBook) renumber(ctx context.Context, tx *sql.Tx, reorder, relabel map[reconstruct.ObjectKey]bool) error {
	up, err := tx.PrepareContext(ctx, `UPDATE revisions SET seq = ?, order_by = ? WHERE event_id = ?`)
	if err != nil {
		return err
	}
	defer up.Close()
	set := func(r *bookRev, seq int, by string) error {
		if r.seq == seq && r.by == by {
			return nil
		}
		r.seq, r.by = seq, by
		_, err := up.ExecContext(ctx, seq, by, r.id)
		return err
	}
	for k := range reorder {
		rs := b.objects[k]
		ids, by := reconstruct.OrderRevisions(len(rs), func(i int) (int64, string, int64) { return rs[i].id, rs[i].rv, rs[i].stage })
		at := make(map[int64]int, len(ids))
		for i, id := range ids {
			at[id] = i + 1
		}
		for i := range rs {
			if err := set(&rs[i], at[rs[i].id], by); err != nil {
				return err
			}
		}
	}
	for k := range relabel {
		if reorder[k] {
			continue
		}
		rs := b.objects[k]
		for i := range rs {
			if err := set(&rs[i], rs[i].seq, "time"); err != nil {
				return err
			}
		}
	}
	return nil
}

// summarize writes the summaries of the changes.
func (b *bulkBook) summarize(ctx context.Context, tx *sql.Tx) error {
	up, err := tx.PrepareContext(ctx, `UPDATE changes SET settled_ns = ?, writes = ?, objects = ?,
		slowest_hop_ns = ?, slowest_hop_event_id = ? WHERE id = ?`)
	if err != nil {
		return err
	}
	defer up.Close()
	for id, c := range b.changes {
		var hop, hopEvent any
		if c.hopEvent != 0 {
			hop, hopEvent = c.hop, c.hopEvent
		}
		if _, err := up.ExecContext(ctx, c.settled, c.writes, len(c.objects), hop, hopEvent, id); err != nil {
			return err
		}
	}
	return nil
}
