package reconstruct

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cpid-dev/cpid"
)

// ErrCycle is returned by Graph.Add for a mergelog whose CPID is one of its
// sources' ancestors. CPIDs are random, so a cycle means corrupt input.
var ErrCycle = errors.New("mergelog closes a cycle")

// Graph is the merge graph of section 3.4.2: a DAG of CPIDs with an edge
// from each source of a mergelog to its CPID. A CPID named only as a source
// is a node too, a root until its own mergelog arrives.
//
// Mergelogs may arrive in any order. A Graph is not safe for concurrent use,
// not even by readers: queries reuse scratch space kept in the Graph.
type Graph struct {
	ids   map[string]int32
	names []string // by id; "" for a free id
	nodes []gnode  // by id
	free  []int32  // ids of pruned CPIDs, reused first
	live  int

	// The sources and children of the nodes are linked lists in one
	// arena, so that neither nodes nor edges hold pointers: at a million
	// CPIDs, that saves two allocations per CPID and most of the garbage
	// collector's scanning. Edge 0 is the nil edge.
	edges    []edge
	freeEdge int32 // a list of edges through next

	// ord is a topological order kept as the graph grows (Pearce and
	// Kelly, "A dynamic topological sort algorithm for directed acyclic
	// graphs", 2006): distinct, with ord(s) < ord(c) for every edge s -> c.
	// It bounds every search to the nodes ordered between two CPIDs.
	//
	// A new CPID goes last, in a block of its own: ords
	// ((b-1)<<blockBits, b<<blockBits] form block b, whose top is the ord
	// of the CPID that opened it. A new source of c takes the next free
	// ord of c's block going down, below c, so that when its own mergelog
	// arrives a little late (logs of several writers merged by time) the
	// reordering spans only the CPIDs added in between. Blocks used up,
	// and ords <= 0, fall back to minOrd, below everything.
	minOrd int64
	blocks []int32 // by block: ords taken from the top, the opener's included

	labels   []string // services and origins, interned
	labelIDs map[string]int32

	// Scratch for searches: a node is seen (or marked) in the current
	// search when seen[id] == gen, so nothing is cleared between calls.
	seen, mark []uint32
	gen        uint32
	queue      []int32
	known      []int32
	setIDs     []int32
	srcs       []string
}

const blockBits = 20

type gnode struct {
	ord    int64
	timeNS int64
	// Lists of edges, in the order first added: first and last.
	src, srcTail     int32
	child, childTail int32
	nsrc             int32 // number of sources
	service          int32 // into labels
	origin           int32 // into labels
	logged           bool  // a mergelog of this CPID was added
	// notes are its user's (the engine's: the origins of the mergelogs
	// recorded for it), kept here rather than in a map of the CPIDs.
	notes uint8
}

type edge struct {
	to, next int32
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	return &Graph{
		ids:      make(map[string]int32),
		blocks:   []int32{0},
		edges:    []edge{{}},
		labels:   []string{""},
		labelIDs: map[string]int32{"": 0},
	}
}

// Add adds the mergelog's CPID, its sources and an edge from each source.
// Empty and repeated sources are ignored. A second mergelog for the same
// CPID adds its sources (union) and keeps the earliest TimeNS, with the
// Service and Origin of the mergelog that had it. A CPID named only as a
// source takes the earliest TimeNS of the mergelogs naming it until its own
// mergelog arrives. A mergelog that would close a cycle is refused with
// ErrCycle and nothing of it is added.
func (g *Graph) Add(m cpid.Mergelog) error {
	if m.CPID == "" {
		return errors.New("add mergelog: empty CPID")
	}
	srcs := appendUniq(g.srcs[:0], m.Sources)
	defer func() { clear(srcs); g.srcs = srcs[:0] }()
	if slices.Contains(srcs, m.CPID) {
		return fmt.Errorf("add mergelog %s: it is its own source: %w", m.CPID, ErrCycle)
	}
	if len(g.nodes) >= math.MaxInt32-len(srcs) || len(g.edges) >= math.MaxInt32-2*len(srcs) {
		return fmt.Errorf("add mergelog %s: graph full", m.CPID)
	}
	c, ok := g.ids[m.CPID]
	if ok {
		if s := g.cycle(c, srcs); s >= 0 {
			return fmt.Errorf("add mergelog %s: source %s descends from it: %w", m.CPID, g.names[s], ErrCycle)
		}
	} else {
		g.blocks = append(g.blocks, 1)
		c = g.newNode(m.CPID, int64(len(g.blocks)-1)<<blockBits)
	}
	n := &g.nodes[c]
	if !n.logged || m.TimeNS < n.timeNS {
		n.timeNS = m.TimeNS
		n.service = g.label(m.Service)
		n.origin = g.label(string(m.Origin))
	}
	n.logged = true
	for _, name := range srcs {
		s, ok := g.ids[name]
		if !ok {
			s = g.newNode(name, g.below(c))
			g.nodes[s].timeNS = m.TimeNS
		} else if sn := &g.nodes[s]; !sn.logged && m.TimeNS < sn.timeNS {
			sn.timeNS = m.TimeNS
		}
		if g.hasSource(c, s) {
			continue
		}
		if g.nodes[s].ord > g.nodes[c].ord {
			g.reorder(s, c)
		}
		cn := &g.nodes[c]
		cn.src, cn.srcTail = g.link(cn.src, cn.srcTail, s)
		cn.nsrc++
		sn := &g.nodes[s]
		sn.child, sn.childTail = g.link(sn.child, sn.childTail, c)
	}
	return nil
}

func (g *Graph) hasSource(c, s int32) bool {
	for e := g.nodes[c].src; e != 0; e = g.edges[e].next {
		if g.edges[e].to == s {
			return true
		}
	}
	return false
}

// link appends an edge to id to the list from head to tail.
func (g *Graph) link(head, tail, id int32) (int32, int32) {
	e := g.freeEdge
	if e != 0 {
		g.freeEdge = g.edges[e].next
		g.edges[e] = edge{to: id}
	} else {
		e = int32(len(g.edges))
		g.edges = append(g.edges, edge{to: id})
	}
	if head == 0 {
		return e, e
	}
	g.edges[tail].next = e
	return head, e
}

// Has reports whether cpid is in the graph.
func (g *Graph) Has(cpid string) bool {
	_, ok := g.ids[cpid]
	return ok
}

// Len returns the number of CPIDs in the graph.
func (g *Graph) Len() int { return g.live }

// Related returns the CPIDs that carry the context of cpid (paper Table 2):
// cpid itself and every CPID reachable from it, sorted, so that the answer
// does not depend on the order the mergelogs were added in. It returns nil
// for a CPID not in the graph.
func (g *Graph) Related(cpid string) []string {
	id, ok := g.ids[cpid]
	if !ok {
		return nil
	}
	out := g.walk(id, true, nil)
	slices.Sort(out)
	return out
}

// Ancestors returns every CPID that cpid descends from, closest first
// (breadth first, sources in the order they were added), cpid excluded.
func (g *Graph) Ancestors(cpid string) []string {
	id, ok := g.ids[cpid]
	if !ok {
		return nil
	}
	return g.walk(id, false, nil)[1:]
}

// Origins returns the roots among cpid and its ancestors, sorted: the
// starting points of the changes cpid carries. A root returns itself.
func (g *Graph) Origins(cpid string) []string {
	id, ok := g.ids[cpid]
	if !ok {
		return nil
	}
	out := g.walk(id, false, func(n *gnode) bool { return n.nsrc == 0 })
	slices.Sort(out)
	return out
}

// DescendsFrom reports whether cpid equals ancestor or is reachable from it.
func (g *Graph) DescendsFrom(cpid, ancestor string) bool {
	if cpid == ancestor {
		return true
	}
	x, ok := g.ids[cpid]
	if !ok {
		return false
	}
	a, ok := g.ids[ancestor]
	if !ok {
		return false
	}
	low := g.nodes[a].ord
	if low >= g.nodes[x].ord {
		return false
	}
	// Every node on a path from a to x is ordered between them.
	g.next()
	q := append(g.queue[:0], x)
	found := false
search:
	for i := 0; i < len(q); i++ {
		for e := g.nodes[q[i]].src; e != 0; e = g.edges[e].next {
			s := g.edges[e].to
			if s == a {
				found = true
				break search
			}
			if g.nodes[s].ord > low && g.seen[s] != g.gen {
				g.seen[s] = g.gen
				q = append(q, s)
			}
		}
	}
	g.queue = q[:0]
	return found
}

// Maximal returns the CPIDs of set, duplicates and "" ignored, that are not
// an ancestor of another CPID of the set, in the order first seen in set. A
// CPID not in the graph is an ancestor of nothing, so it is returned. When
// Maximal returns one CPID, it descends from all the others and can be
// reused (Algorithm 1); otherwise the result is the exact list of sources of
// the mergelog to emit.
func (g *Graph) Maximal(set []string) []string {
	set = uniq(set)
	ids, known := g.setIDs[:0], g.known[:0]
	for _, name := range set {
		id, ok := g.ids[name]
		if !ok {
			id = -1
		} else {
			known = append(known, id)
		}
		ids = append(ids, id)
	}
	g.setIDs, g.known = ids[:0], known[:0]
	if len(known) < 2 {
		return set
	}
	// An ancestor has a lower ord than its descendants, so walking the
	// set from the highest ord, each CPID not yet seen as an ancestor of
	// an earlier one is maximal; the searches share one visited set and
	// stop below the lowest ord of the set, or once every CPID is decided.
	slices.SortFunc(known, func(a, b int32) int { return cmp.Compare(g.nodes[b].ord, g.nodes[a].ord) })
	low := g.nodes[known[len(known)-1]].ord
	g.next()
	for _, id := range known {
		g.mark[id] = g.gen
	}
	left := len(known)
	q := g.queue[:0]
search:
	for _, f := range known {
		if g.seen[f] == g.gen {
			continue
		}
		if left--; left == 0 {
			break
		}
		q = append(q[:0], f)
		for i := 0; i < len(q); i++ {
			for e := g.nodes[q[i]].src; e != 0; e = g.edges[e].next {
				s := g.edges[e].to
				if g.nodes[s].ord < low || g.seen[s] == g.gen {
					continue
				}
				g.seen[s] = g.gen
				if g.mark[s] == g.gen {
					if left--; left == 0 {
						break search
					}
				}
				q = append(q, s)
			}
		}
	}
	g.queue = q[:0]
	out := set[:0]
	for i, name := range set {
		if id := ids[i]; id < 0 || g.seen[id] != g.gen {
			out = append(out, name)
		}
	}
	return out
}

// Sources returns the sources of cpid still in the graph, in the order they
// were added.
func (g *Graph) Sources(cpid string) []string {
	id, ok := g.ids[cpid]
	if !ok {
		return nil
	}
	return g.namesOf(g.list(g.nodes[id].src))
}

// list returns the ids of the list of edges from head.
func (g *Graph) list(head int32) []int32 {
	var out []int32
	for e := head; e != 0; e = g.edges[e].next {
		out = append(out, g.edges[e].to)
	}
	return out
}

// Mergelog returns the mergelog of cpid as merged by Add, with the sources
// still in the graph. It reports false for a CPID only named as a source.
func (g *Graph) Mergelog(cid string) (cpid.Mergelog, bool) {
	id, ok := g.ids[cid]
	if !ok || !g.nodes[id].logged {
		return cpid.Mergelog{}, false
	}
	n := &g.nodes[id]
	return cpid.Mergelog{
		CPID:    cid,
		Sources: g.namesOf(g.list(n.src)),
		TimeNS:  n.timeNS,
		Service: g.labels[n.service],
		Origin:  cpid.Origin(g.labels[n.origin]),
	}, true
}

// newNode interns name with the given ord.
// note sets bits among the notes of the node of cpid, if it has one.
func (g *Graph) note(cpid string, bits uint8) {
	if id, ok := g.ids[cpid]; ok {
		g.nodes[id].notes |= bits
	}
}

// notes are the notes of the node of cpid, 0 when it has none.
func (g *Graph) notes(cpid string) uint8 {
	if id, ok := g.ids[cpid]; ok {
		return g.nodes[id].notes
	}
	return 0
}

func (g *Graph) newNode(name string, ord int64) int32 {
	// The graph holds its names to the run's end: not substrings of the
	// scanned rows' texts, which they would keep whole.
	name = strings.Clone(name)
	var id int32
	if k := len(g.free); k > 0 {
		id = g.free[k-1]
		g.free = g.free[:k-1]
		g.names[id] = name
		g.nodes[id] = gnode{ord: ord}
	} else {
		id = int32(len(g.nodes))
		g.names = append(g.names, name)
		g.nodes = append(g.nodes, gnode{ord: ord})
	}
	g.ids[name] = id
	g.live++
	return id
}

// below returns a free ord lower than c's.
func (g *Graph) below(c int32) int64 {
	if o := g.nodes[c].ord; o > 0 {
		b := (o + 1<<blockBits - 1) >> blockBits
		if n := g.blocks[b]; n < 1<<blockBits {
			g.blocks[b]++
			return b<<blockBits - int64(n)
		}
	}
	g.minOrd--
	return g.minOrd
}

func (g *Graph) label(s string) int32 {
	id, ok := g.labelIDs[s]
	if !ok {
		id = int32(len(g.labels))
		g.labels = append(g.labels, s)
		g.labelIDs[s] = id
	}
	return id
}

func (g *Graph) namesOf(ids []int32) []string {
	if len(ids) == 0 {
		return nil
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = g.names[id]
	}
	return out
}

// next starts a search: it makes every node unseen and unmarked.
func (g *Graph) next() {
	if n := len(g.nodes); len(g.seen) < n {
		g.seen = append(g.seen, make([]uint32, n-len(g.seen))...)
		g.mark = append(g.mark, make([]uint32, n-len(g.mark))...)
	}
	g.gen++
	if g.gen == 0 {
		clear(g.seen)
		clear(g.mark)
		g.gen = 1
	}
}

// walk returns, breadth first from id (included), the names of the nodes
// reachable forward (down the children) or backward (up the sources) that
// keep accepts; keep nil accepts all.
func (g *Graph) walk(id int32, forward bool, keep func(*gnode) bool) []string {
	g.next()
	g.seen[id] = g.gen
	q := append(g.queue[:0], id)
	var out []string
	for i := 0; i < len(q); i++ {
		n := &g.nodes[q[i]]
		if keep == nil || keep(n) {
			out = append(out, g.names[q[i]])
		}
		e := n.src
		if forward {
			e = n.child
		}
		for ; e != 0; e = g.edges[e].next {
			s := g.edges[e].to
			if g.seen[s] != g.gen {
				g.seen[s] = g.gen
				q = append(q, s)
			}
		}
	}
	g.queue = q[:0]
	return out
}

// cycle returns a source in srcs reachable from c, or -1. Only a source
// ordered after c can be, and the search stops at the last such ord.
func (g *Graph) cycle(c int32, srcs []string) int32 {
	g.next()
	var high int64
	n := 0
	for _, name := range srcs {
		if s, ok := g.ids[name]; ok && g.nodes[s].ord > g.nodes[c].ord {
			g.mark[s] = g.gen
			if o := g.nodes[s].ord; n == 0 || o > high {
				high = o
			}
			n++
		}
	}
	if n == 0 {
		return -1
	}
	g.seen[c] = g.gen
	q := append(g.queue[:0], c)
	found := int32(-1)
search:
	for i := 0; i < len(q); i++ {
		for e := g.nodes[q[i]].child; e != 0; e = g.edges[e].next {
			x := g.edges[e].to
			if g.mark[x] == g.gen {
				found = x
				break search
			}
			if g.nodes[x].ord < high && g.seen[x] != g.gen {
				g.seen[x] = g.gen
				q = append(q, x)
			}
		}
	}
	g.queue = q[:0]
	return found
}

// reorder restores the topological order before the edge s -> c is added,
// when ord(s) > ord(c) and c does not reach s: the descendants of c ordered
// before s and the ancestors of s ordered after c swap places, keeping their
// relative orders, in the ords they held (Pearce and Kelly).
func (g *Graph) reorder(s, c int32) {
	low, high := g.nodes[c].ord, g.nodes[s].ord
	fwd := g.band(c, true, func(o int64) bool { return o < high })
	back := g.band(s, false, func(o int64) bool { return o > low })
	byOrd := func(a, b int32) int { return cmp.Compare(g.nodes[a].ord, g.nodes[b].ord) }
	slices.SortFunc(fwd, byOrd)
	slices.SortFunc(back, byOrd)
	ords := make([]int64, 0, len(fwd)+len(back))
	for _, id := range back {
		ords = append(ords, g.nodes[id].ord)
	}
	for _, id := range fwd {
		ords = append(ords, g.nodes[id].ord)
	}
	slices.Sort(ords)
	for i, id := range append(back, fwd...) {
		g.nodes[id].ord = ords[i]
	}
}

// band returns id and the nodes reachable from it, forward or backward,
// through nodes whose ord is in the band.
func (g *Graph) band(id int32, forward bool, in func(int64) bool) []int32 {
	g.next()
	g.seen[id] = g.gen
	out := []int32{id}
	for i := 0; i < len(out); i++ {
		e := g.nodes[out[i]].src
		if forward {
			e = g.nodes[out[i]].child
		}
		for ; e != 0; e = g.edges[e].next {
			if x := g.edges[e].to; g.seen[x] != g.gen && in(g.nodes[x].ord) {
				g.seen[x] = g.gen
				out = append(out, x)
			}
		}
	}
	return out
}

// uniq returns set without "" and repeats, in first-seen order, in a new
// slice.
func uniq(set []string) []string {
	return appendUniq(make([]string, 0, len(set)), set)
}

// appendUniq appends to out the strings of set but "" and repeats.
func appendUniq(out, set []string) []string {
	var seen map[string]bool
	if len(set) > 16 {
		seen = make(map[string]bool, len(set))
	}
	for _, s := range set {
		if s == "" {
			continue
		}
		if seen != nil {
			if seen[s] {
				continue
			}
			seen[s] = true
		} else if slices.Contains(out, s) {
			continue
		}
		out = append(out, s)
	}
	return out
}
