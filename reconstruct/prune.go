package reconstruct

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"

	"github.com/cpid-dev/cpid"
)

// Budget bounds the merge graph for Prune.
type Budget struct {
	// MaxCPIDs is the most CPIDs to keep; 0 means no size limit.
	MaxCPIDs int
	// OlderThanNS deletes the roots whose TimeNS is before it; 0 means no
	// age limit.
	OlderThanNS int64
	// Keep reports the CPIDs never to delete, e.g. changes a user pinned.
	// A kept CPID whose sources are all deleted stays, as a root. Nil
	// keeps none.
	Keep func(cpid string) bool
}

// Prune deletes CPIDs by the rules of section 3.4.2 until the graph holds
// at most b.MaxCPIDs and no root is older than b.OlderThanNS, or no root is
// left to delete. Only roots are candidates, oldest first by TimeNS then
// CPID; deleting one deletes its edges, and a CPID left with no sources by
// that is deleted too, recursively, as it was made by a merge and no
// operator refers to it. So every CPID reachable from a kept root stays,
// with its edges from the CPIDs that stay. Prune returns the deleted CPIDs
// in the order it deleted them.
func (g *Graph) Prune(b Budget) (removed []string) {
	if b.MaxCPIDs <= 0 && b.OlderThanNS == 0 {
		return nil
	}
	over := func() bool { return b.MaxCPIDs > 0 && g.live > b.MaxCPIDs }
	old := func(id int32) bool { return b.OlderThanNS != 0 && g.nodes[id].timeNS < b.OlderThanNS }
	keep := func(id int32) bool { return b.Keep != nil && b.Keep(g.names[id]) }

	// Deleting never makes a root, except of a kept CPID, so the
	// candidates are the roots of now.
	var cands []int32
	for id := range g.nodes {
		id := int32(id)
		if g.names[id] != "" && g.nodes[id].nsrc == 0 && (b.MaxCPIDs > 0 || old(id)) {
			cands = append(cands, id)
		}
	}
	slices.SortFunc(cands, g.byAge)
	for _, r := range cands {
		if !over() && !old(r) {
			break // the rest are not older
		}
		if keep(r) {
			continue
		}
		removed = g.remove(r, keep, removed)
	}
	return removed
}

// Roots returns the CPIDs with no sources, oldest first by TimeNS then
// CPID: the order in which Prune deletes them.
func (g *Graph) Roots() []string {
	var ids []int32
	for id := range g.nodes {
		id := int32(id)
		if g.names[id] != "" && g.nodes[id].nsrc == 0 {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, g.byAge)
	return g.namesOf(ids)
}

func (g *Graph) byAge(a, b int32) int {
	if c := cmp.Compare(g.nodes[a].timeNS, g.nodes[b].timeNS); c != 0 {
		return c
	}
	return strings.Compare(g.names[a], g.names[b])
}

// remove deletes the root r and, breadth first, the CPIDs left with no
// sources, appending their names to removed.
func (g *Graph) remove(r int32, keep func(int32) bool, removed []string) []string {
	q := []int32{r}
	for i := 0; i < len(q); i++ {
		x := q[i]
		for e := g.nodes[x].child; e != 0; {
			c, next := g.edges[e].to, g.edges[e].next
			g.unlinkSource(c, x)
			if g.nodes[c].nsrc == 0 && !keep(c) {
				q = append(q, c)
			}
			g.edges[e] = edge{next: g.freeEdge}
			g.freeEdge = e
			e = next
		}
		name := g.names[x]
		removed = append(removed, name)
		delete(g.ids, name)
		g.names[x] = ""
		g.nodes[x] = gnode{}
		g.free = append(g.free, x)
		g.live--
	}
	return removed
}

// unlinkSource deletes the edge s -> c.
func (g *Graph) unlinkSource(c, s int32) {
	n := &g.nodes[c]
	var prev int32
	for e := n.src; e != 0; prev, e = e, g.edges[e].next {
		if g.edges[e].to != s {
			continue
		}
		next := g.edges[e].next
		if prev == 0 {
			n.src = next
		} else {
			g.edges[prev].next = next
		}
		if n.srcTail == e {
			n.srcTail = prev
		}
		n.nsrc--
		g.edges[e] = edge{next: g.freeEdge}
		g.freeEdge = e
		return
	}
}

// PruneStore prunes the merge graph stored in st under the budget: it
// rebuilds the graph from every stored mergelog, prunes it (Graph.Prune)
// and, unless dryRun, deletes the removed CPIDs' mergelogs in one
// transaction. It returns the removed CPIDs and how many the graph had.
// Revisions keep their CPID; a later full reconstruct rebuilds the graph.
func PruneStore(ctx context.Context, st cpid.DerivedStore, b Budget, dryRun bool) ([]string, int, error) {
	g := NewGraph()
	if err := st.ScanMergelogs(ctx, math.MaxInt64, g.Add); err != nil {
		return nil, 0, err
	}
	before := g.Len()
	removed := g.Prune(b)
	if dryRun || len(removed) == 0 {
		return removed, before, nil
	}
	return removed, before, st.DeleteMergelogs(ctx, removed)
}
