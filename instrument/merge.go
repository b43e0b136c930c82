package instrument

import (
	"encoding/binary"
	"sync"
)

// graph is the cpidGraph of the paper's Algorithm 1 (BuildCpidGraph): its
// live nodes are the roots found so far, each with the ancestors known for
// it, closest first. Nodes are kept in the order they were added so that the
// outcome does not depend on map iteration order.
//
// The slices are reused between merges (see graphs) so that a merge of a
// handful of contexts allocates nothing here.
type graph struct {
	nodes []node
	work  []ID   // ancestors of the context being added, extended in step 1
	ws    filter // what work holds
	tmp   []ID
}

type node struct {
	id   ID
	anc  []ID
	dead bool // absorbed by a descendant in step 1
}

var graphs = sync.Pool{New: func() any { return new(graph) }}

func (g *graph) reset() { g.nodes = g.nodes[:0] }

// add is addCPID of Algorithm 1 for the context (id, anc).
//
// Two details differ from the printed pseudo-code. Line 19 reads "if key is
// not in tctx.AncCpids" inside a loop over val; the intent, kept here, is "if
// val is not in tctx.AncCpids". And in step 2, when tctx.Cpid is an ancestor
// of a root rather than the root itself, the pseudo-code prepends tctx's
// ancestors to the root's list, ahead of tctx.Cpid although they are older.
// They are appended instead, as step 1 does for the same reason: they are at
// least one hop farther than tctx.Cpid, and what the root's list already held
// was ordered by a writer that knew better, so the cap at N drops the newly
// learned, farther entries first. The set of roots, which alone decides reuse
// against merge, is the same either way.
func (g *graph) add(id ID, anc []ID) {
	g.work, g.ws = g.work[:0], filter{}
	for _, a := range anc {
		if !a.IsZero() && a != id {
			g.push(a)
		}
	}

	// Step 1: every root that id descends from stops being a root; its known
	// ancestors become ancestors of id, after id's own (they are older).
	for i := range g.nodes {
		n := &g.nodes[i]
		if n.dead || !g.holds(n.id) {
			continue
		}
		for _, v := range n.anc {
			if v != id {
				g.push(v)
			}
		}
		n.dead = true
	}

	// Step 2: if id is a root already, or an ancestor of one, what we know
	// of id's ancestors is added to that root; otherwise id is a new root.
	included := false
	for i := range g.nodes {
		n := &g.nodes[i]
		if n.dead {
			continue
		}
		switch {
		case n.id == id:
			n.anc = g.insert(n.anc, 0, g.work, n.id)
			included = true
		case index(n.anc, id) >= 0:
			n.anc = g.insert(n.anc, len(n.anc), g.work, n.id)
			included = true
		}
	}
	if !included {
		if len(g.nodes) < cap(g.nodes) {
			g.nodes = g.nodes[:len(g.nodes)+1]
			n := &g.nodes[len(g.nodes)-1]
			n.id, n.anc, n.dead = id, append(n.anc[:0], g.work...), false
		} else {
			g.nodes = append(g.nodes, node{id: id, anc: append([]ID(nil), g.work...)})
		}
	}
}

// push appends a to work unless work holds it.
func (g *graph) push(a ID) {
	h := slot(a)
	if g.ws.has(h) && index(g.work, a) >= 0 {
		return
	}
	g.work = append(g.work, a)
	g.ws.add(h)
}

// holds reports whether work holds a. The filter answers most "no"s
// without a scan: ancestors being absorbed are mostly new.
func (g *graph) holds(a ID) bool { return g.ws.has(slot(a)) && index(g.work, a) >= 0 }

// filter is a 256-bit Bloom filter with one hash function.
type filter [4]uint64

// slot hashes id to a bit of a filter. CPIDs are random, but not the ones a
// test writes by hand, so both halves are mixed in.
func slot(id ID) uint8 {
	x := binary.LittleEndian.Uint64(id[:8]) ^ binary.LittleEndian.Uint64(id[8:])
	return uint8((x * 0x9e3779b97f4a7c15) >> 56)
}

func (f *filter) add(h uint8) { f[h>>6] |= 1 << (h & 63) }

func (f *filter) has(h uint8) bool { return f[h>>6]&(1<<(h&63)) != 0 }

// insert inserts at position at of list the entries of add that list does
// not hold yet, skipping self, and returns the list.
func (g *graph) insert(list []ID, at int, add []ID, self ID) []ID {
	t := g.tmp[:0]
	for _, a := range add {
		if a != self && index(list, a) < 0 {
			t = append(t, a)
		}
	}
	g.tmp = t
	if len(t) == 0 {
		return list
	}
	n := len(list)
	list = append(list, t...) // grow; the tail is rewritten below
	copy(list[at+len(t):], list[at:n])
	copy(list[at:], t)
	return list
}

// Roots runs Algorithm 1 over ctxs, each ancestor list first cut to n
// entries, and returns the roots of the CPID graph in the order of their
// first appearance. Contexts without a CPID are ignored.
//
// Merge mints a CPID exactly when Roots returns more than one; Roots is
// exported so that tests and tools can check that decision.
func Roots(n int, ctxs ...Context) []ID {
	g := graphs.Get().(*graph)
	defer graphs.Put(g)
	g.build(n, ctxs)
	var out []ID
	for i := range g.nodes {
		if !g.nodes[i].dead {
			out = append(out, g.nodes[i].id)
		}
	}
	return out
}

func (g *graph) build(n int, ctxs []Context) {
	g.reset()
	for _, c := range ctxs {
		if c.IsZero() {
			continue
		}
		anc := c.Ancestors
		if len(anc) > n {
			anc = anc[:n]
		}
		g.add(c.CPID, anc)
	}
}
