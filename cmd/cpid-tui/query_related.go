package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/cpid-dev/cpid"
)

// relatedRow is one CPID of query related or origins: what it is, not
// only its id.
type relatedRow struct {
	CPID string `json:"cpid"`
	// FirstNS is its first write; Origin how that write got it (root,
	// annotation, inferred, background).
	FirstNS int64  `json:"first_ns"`
	Origin  string `json:"origin"`
	// Writers wrote with it, in order of their first write; Objects are
	// the objects they wrote ("Kind namespace/name"), Writes how many
	// writes.
	Writers []string `json:"writers"`
	Objects []string `json:"objects"`
	Writes  int      `json:"writes"`
	// Sources are the CPIDs it was merged from (its mergelogs).
	Sources []string `json:"sources"`
	// Changes carry it.
	Changes []string `json:"changes"`
}

// related lists the CPIDs descending from a CPID (or, for origins, that it
// descends from), each with its first write, writers and objects from the
// merge DAGs of the changes that carry them. The CPID may be any CPID of
// the merge graph (a change's id is its root CPID) or a unique prefix of
// one.
func (q queryRun) related(ctx context.Context, which, id string) error {
	f := q.st.Related
	if which == "origins" {
		f = q.st.Origins
	}
	full, err := resolveCPID(ctx, q.st, id)
	if err != nil {
		return err
	}
	ids, err := f(ctx, full)
	if err != nil {
		return err
	}
	q.empty(len(ids))
	rows, err := describeCPIDs(ctx, q.st, ids)
	if err != nil {
		return err
	}
	l := listing{head: []string{"CPID", "FIRST WRITE", "ORIGIN", "WRITERS", "OBJECTS", "WRITES", "SOURCES", "CHANGES"},
		wideOnly: []int{6}, data: rows}
	var changes []string
	for _, r := range rows {
		changes = append(changes, r.Changes...)
	}
	n, err := idLength(ctx, q.st, q.format, changes...)
	if err != nil {
		return err
	}
	for _, r := range rows {
		l.rows = append(l.rows, []string{r.CPID, clock(r.FirstNS), r.Origin, listCell(r.Writers), listCell(r.Objects), strconv.Itoa(r.Writes),
			listCell(r.Sources), listCell(shortIDs(r.Changes, n))})
		l.names = append(l.names, r.CPID)
	}
	return q.e.print(q.c, l)
}

// describeCPIDs reads what the merge DAGs of the changes carrying ids say
// of each.
func describeCPIDs(ctx context.Context, st cpid.ChangeReader, ids []string) ([]relatedRow, error) {
	rows := make([]relatedRow, len(ids))
	at := map[string]int{}
	for i, id := range ids {
		rows[i] = relatedRow{CPID: id, Writers: []string{}, Objects: []string{}, Sources: []string{}, Changes: []string{}}
		at[id] = i
	}
	if len(ids) == 0 {
		return rows, nil
	}
	changes, err := st.ChangesCarrying(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, ch := range changes {
		g, err := st.ChangeGraph(ctx, ch)
		if err != nil {
			return nil, err
		}
		for _, n := range g.Nodes {
			i, ok := at[n.CPID]
			if !ok {
				continue
			}
			r := &rows[i]
			r.Changes = appendNew(r.Changes, ch)
			if r.FirstNS == 0 || n.FirstNS < r.FirstNS {
				r.FirstNS, r.Origin = n.FirstNS, n.Origin
			}
			for _, o := range n.Objects {
				for _, w := range o.Writers {
					r.Writers = appendNew(r.Writers, w)
				}
				r.Objects = appendNew(r.Objects, object(o.Kind, o.Namespace, o.Name))
				r.Writes += o.Writes
			}
			for _, m := range n.Merges {
				for _, s := range m.Sources {
					r.Sources = appendNew(r.Sources, s)
				}
			}
		}
	}
	return rows, nil
}

// appendNew appends x to xs unless xs holds it.
func appendNew(xs []string, x string) []string {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

// listCell is a list in a table cell: its first item and how many more.
func listCell(xs []string) string {
	switch len(xs) {
	case 0:
		return "-"
	case 1:
		return xs[0]
	}
	return fmt.Sprintf("%s +%d", xs[0], len(xs)-1)
}

// shortIDs are ids cut to n characters for a table cell (0: whole).
func shortIDs(ids []string, n int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = shortID(id, n)
	}
	return out
}
