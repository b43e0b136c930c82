package export

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/cpid-dev/cpid"
)

// Set is what an export reads through a cpid.ChangeReader: the changes
// chosen, and what their merges need to know of the rest of the database.
type Set struct {
	// Changes are in the order they started.
	Changes []Change
	// Carriers are, for every CPID a merge of the changes names, the
	// writes that carry it (of any change), in apiserver order: where the
	// merge's links point.
	Carriers map[string][]Carrier
	// Ancestors are, for the merge sources no write carries, the CPIDs they
	// descend from (cpid.ChangeReader.Origins without the CPID itself).
	Ancestors map[string][]string
}

// Change is what an export reads of one change.
type Change struct {
	Row      cpid.ChangeRow
	Timeline []cpid.TimelineEntry
	Graph    cpid.ChangeGraph
	// Spans are the controller spans of the change's CPIDs.
	Spans []cpid.ChangeSpan
}

// Carrier is a write carrying a CPID.
type Carrier struct {
	Change     string
	Trace      TraceID // of the change
	EventID    int64
	ReceivedNS int64
	NS         int64
}

// Read reads the changes with these ids, and the writes their merges'
// sources are carried by, through r (one snapshot per call, as every
// ChangeReader method).
func Read(ctx context.Context, r cpid.ChangeReader, ids []string) (*Set, error) {
	rows, err := r.ChangesByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	if len(rows) < len(ids) {
		have := map[string]bool{}
		for _, c := range rows {
			have[c.ID] = true
		}
		for _, id := range ids {
			if !have[id] {
				return nil, fmt.Errorf("no change %q", id)
			}
		}
	}
	slices.SortStableFunc(rows, func(a, b cpid.ChangeRow) int {
		if a.StartedNS != b.StartedNS {
			return cmp.Compare(a.StartedNS, b.StartedNS)
		}
		return cmp.Compare(a.ID, b.ID)
	})
	s := &Set{Carriers: map[string][]Carrier{}, Ancestors: map[string][]string{}}
	timelines := map[string][]cpid.TimelineEntry{}
	traces := map[string]TraceID{}
	for _, row := range rows {
		traces[row.ID] = TraceOf(row)
		c := Change{Row: row}
		if c.Timeline, err = r.Timeline(ctx, row.ID); err != nil {
			return nil, fmt.Errorf("timeline of %s: %w", row.ID, err)
		}
		if c.Graph, err = r.ChangeGraph(ctx, row.ID); err != nil {
			return nil, err
		}
		if c.Spans, err = r.ChangeSpans(ctx, row.ID); err != nil {
			return nil, err
		}
		timelines[row.ID] = c.Timeline
		s.Changes = append(s.Changes, c)
	}
	// The sources of every merge, then (once) the ancestors of those no
	// write carries.
	var need []string
	for _, c := range s.Changes {
		for _, n := range c.Graph.Nodes {
			for _, m := range n.Merges {
				need = append(need, m.Sources...)
			}
		}
	}
	for round := 0; round < 2 && len(need) > 0; round++ {
		slices.Sort(need)
		need = slices.Compact(need)
		if err := s.carriers(ctx, r, need, timelines, traces); err != nil {
			return nil, err
		}
		var next []string
		for _, src := range need {
			if len(s.Carriers[src]) > 0 || round == 1 {
				continue
			}
			anc, err := r.Origins(ctx, src)
			if err != nil {
				return nil, fmt.Errorf("origins of %s: %w", src, err)
			}
			anc = cpid.DropIDs(anc, src)
			s.Ancestors[src] = anc
			next = append(next, anc...)
		}
		need = next
	}
	return s, nil
}

// carriers adds the writes carrying the CPIDs to s.Carriers, reading the
// timelines of the changes that carry them once.
func (s *Set) carriers(ctx context.Context, r cpid.ChangeReader, cpids []string, timelines map[string][]cpid.TimelineEntry,
	traces map[string]TraceID) error {
	var todo []string
	for _, c := range cpids {
		if _, done := s.Carriers[c]; !done {
			todo = append(todo, c)
			s.Carriers[c] = nil
		}
	}
	if len(todo) == 0 {
		return nil
	}
	changes, err := r.ChangesCarrying(ctx, todo)
	if err != nil {
		return fmt.Errorf("changes carrying merge sources: %w", err)
	}
	slices.Sort(changes)
	want := map[string]bool{}
	for _, c := range todo {
		want[c] = true
	}
	var unknown []string
	for _, id := range changes {
		if _, ok := traces[id]; !ok {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		rows, err := r.ChangesByID(ctx, unknown)
		if err != nil {
			return err
		}
		for _, row := range rows {
			traces[row.ID] = TraceOf(row)
		}
	}
	for _, id := range changes {
		ts, ok := timelines[id]
		if !ok {
			if ts, err = r.Timeline(ctx, id); err != nil {
				return fmt.Errorf("timeline of %s: %w", id, err)
			}
			timelines[id] = ts
		}
		for _, t := range ts {
			if want[t.CPID] {
				s.Carriers[t.CPID] = append(s.Carriers[t.CPID], Carrier{Change: id, Trace: traces[id], EventID: t.EventID, ReceivedNS: t.ReceivedNS, NS: t.NS})
			}
		}
	}
	for _, c := range todo {
		slices.SortFunc(s.Carriers[c], func(a, b Carrier) int {
			if a.NS != b.NS {
				return cmp.Compare(a.NS, b.NS)
			}
			return cmp.Compare(a.EventID, b.EventID)
		})
	}
	return nil
}
