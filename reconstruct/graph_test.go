package reconstruct

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/cpid-dev/cpid"
	"github.com/google/go-cmp/cmp"
)

// figure7 returns the mergelogs of the merge graph of the paper's Figure 7,
// deduced from Table 2: 1->3, 2->3, 3->5, 4->5, 2->7, 4->7, 6->7 and 8
// alone. CPID k is written at time 10k.
func figure7() []cpid.Mergelog {
	return []cpid.Mergelog{
		{CPID: "1", TimeNS: 10},
		{CPID: "2", TimeNS: 20},
		{CPID: "3", Sources: []string{"1", "2"}, TimeNS: 30},
		{CPID: "4", TimeNS: 40},
		{CPID: "5", Sources: []string{"3", "4"}, TimeNS: 50},
		{CPID: "6", TimeNS: 60},
		{CPID: "7", Sources: []string{"2", "4", "6"}, TimeNS: 70},
		{CPID: "8", TimeNS: 80},
	}
}

func build(t testing.TB, ms []cpid.Mergelog) *Graph {
	t.Helper()
	g := NewGraph()
	for _, m := range ms {
		if err := g.Add(m); err != nil {
			t.Fatal(err)
		}
	}
	checkOrder(t, g)
	return g
}

// checkOrder fails unless the internal topological order holds on every
// edge and the adjacency lists agree with each other.
func checkOrder(t testing.TB, g *Graph) {
	t.Helper()
	live, used := 0, 0
	for id, n := range g.nodes {
		if g.names[id] == "" {
			continue
		}
		live++
		if got := g.ids[g.names[id]]; got != int32(id) {
			t.Fatalf("ids[%s] = %d, want %d", g.names[id], got, id)
		}
		srcs := g.list(n.src)
		if len(srcs) != int(n.nsrc) || (len(srcs) == 0) != (n.srcTail == 0) ||
			len(srcs) > 0 && g.edges[n.srcTail].next != 0 {
			t.Fatalf("%s: %d sources, nsrc %d, tail %d", g.names[id], len(srcs), n.nsrc, n.srcTail)
		}
		children := g.list(n.child)
		if (len(children) == 0) != (n.childTail == 0) || len(children) > 0 && g.edges[n.childTail].next != 0 {
			t.Fatalf("%s: child tail %d", g.names[id], n.childTail)
		}
		used += len(srcs) + len(children)
		for _, c := range children {
			if g.names[c] == "" || !slices.Contains(g.list(g.nodes[c].src), int32(id)) {
				t.Fatalf("edge %s -> %d is one-sided", g.names[id], c)
			}
			if n.ord >= g.nodes[c].ord {
				t.Fatalf("edge %s -> %s: ord %d >= %d", g.names[id], g.names[c], n.ord, g.nodes[c].ord)
			}
		}
		for _, s := range srcs {
			if g.names[s] == "" || !slices.Contains(g.list(g.nodes[s].child), int32(id)) {
				t.Fatalf("edge %d -> %s is one-sided", s, g.names[id])
			}
		}
	}
	if live != g.Len() || live != len(g.ids) {
		t.Fatalf("%d live nodes, Len %d, %d ids", live, g.Len(), len(g.ids))
	}
	if free := len(g.list(g.freeEdge)); used+free != len(g.edges)-1 {
		t.Fatalf("%d edges used, %d free, %d in the arena", used, free, len(g.edges)-1)
	}
}

// TestRelatedTable2 reproduces Table 2 of the paper on Figure 7, with the
// mergelogs added in order, reversed and shuffled.
func TestRelatedTable2(t *testing.T) {
	want := map[string][]string{
		"1": {"1", "3", "5"},
		"2": {"2", "3", "5", "7"},
		"3": {"3", "5"},
		"4": {"4", "5", "7"},
		"5": {"5"},
		"6": {"6", "7"},
		"7": {"7"},
		"8": {"8"},
	}
	reversed := figure7()
	slices.Reverse(reversed)
	shuffled := figure7()
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, tc := range []struct {
		name string
		ms   []cpid.Mergelog
	}{
		{"in order", figure7()},
		{"reversed", reversed},
		{"shuffled", shuffled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, tc.ms)
			if g.Len() != 8 {
				t.Errorf("Len = %d, want 8", g.Len())
			}
			for in := 1; in <= 8; in++ {
				cpid := strconv.Itoa(in)
				if diff := cmp.Diff(want[cpid], g.Related(cpid)); diff != "" {
					t.Errorf("Related(%s) (-want +got):\n%s", cpid, diff)
				}
			}
		})
	}
}

func TestQueries(t *testing.T) {
	g := build(t, figure7())
	for _, tc := range []struct {
		cpid               string
		ancestors, origins []string
		sources            []string
	}{
		{cpid: "1", origins: []string{"1"}},
		{cpid: "3", ancestors: []string{"1", "2"}, origins: []string{"1", "2"}, sources: []string{"1", "2"}},
		{cpid: "5", ancestors: []string{"3", "4", "1", "2"}, origins: []string{"1", "2", "4"}, sources: []string{"3", "4"}},
		{cpid: "7", ancestors: []string{"2", "4", "6"}, origins: []string{"2", "4", "6"}, sources: []string{"2", "4", "6"}},
		{cpid: "8", origins: []string{"8"}},
		{cpid: "unknown"},
	} {
		t.Run(tc.cpid, func(t *testing.T) {
			if diff := cmp.Diff(tc.ancestors, g.Ancestors(tc.cpid), cmpEmpty); diff != "" {
				t.Errorf("Ancestors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.origins, g.Origins(tc.cpid), cmpEmpty); diff != "" {
				t.Errorf("Origins (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.sources, g.Sources(tc.cpid), cmpEmpty); diff != "" {
				t.Errorf("Sources (-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff([]string{"1", "2", "4", "6", "8"}, g.Roots()); diff != "" {
		t.Errorf("Roots (-want +got):\n%s", diff)
	}
}

// cmpEmpty equates nil and empty slices.
var cmpEmpty = cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })

func TestDescendsFrom(t *testing.T) {
	g := build(t, figure7())
	for _, tc := range []struct {
		name           string
		cpid, ancestor string
		want           bool
	}{
		{"equal", "3", "3", true},
		{"equal unknown", "x", "x", true},
		{"child", "3", "1", true},
		{"grandchild", "5", "2", true},
		{"reversed", "1", "3", false},
		{"siblings", "5", "7", false},
		{"unrelated roots", "1", "2", false},
		{"isolated", "8", "1", false},
		{"unknown cpid", "x", "1", false},
		{"unknown ancestor", "1", "x", false},
		{"empty", "", "1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := g.DescendsFrom(tc.cpid, tc.ancestor); got != tc.want {
				t.Errorf("DescendsFrom(%q, %q) = %v, want %v", tc.cpid, tc.ancestor, got, tc.want)
			}
		})
	}
}

func TestMaximal(t *testing.T) {
	g := build(t, figure7())
	for _, tc := range []struct {
		name string
		set  []string
		want []string
	}{
		{"nil", nil, nil},
		{"empty strings", []string{"", ""}, nil},
		{"one", []string{"3"}, []string{"3"}},
		{"descendant reused", []string{"1", "3"}, []string{"3"}},
		{"descendant first", []string{"3", "1"}, []string{"3"}},
		{"transitive", []string{"1", "5", "4", "2"}, []string{"5"}},
		{"two roots", []string{"1", "2"}, []string{"1", "2"}},
		{"siblings", []string{"5", "7"}, []string{"5", "7"}},
		{"siblings and a common ancestor", []string{"4", "5", "7"}, []string{"5", "7"}},
		{"duplicates and empty", []string{"1", "", "3", "1", "3"}, []string{"3"}},
		{"unknown kept", []string{"x", "1", "3"}, []string{"x", "3"}},
		{"unknown only", []string{"x", "y", "x"}, []string{"x", "y"}},
		{"isolated", []string{"8", "5"}, []string{"8", "5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.set)
			if diff := cmp.Diff(tc.want, g.Maximal(in), cmpEmpty); diff != "" {
				t.Errorf("Maximal(%q) (-want +got):\n%s", tc.set, diff)
			}
			if !slices.Equal(in, tc.set) {
				t.Errorf("Maximal changed its argument to %q", in)
			}
		})
	}
}

func TestAdd(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ms      []cpid.Mergelog
		bad     cpid.Mergelog // added last; refused when wantErr
		wantErr error         // nil: bad is accepted
		cpid    string
		want    cpid.Mergelog
		wantOK  bool
	}{
		{
			name:   "root",
			bad:    cpid.Mergelog{CPID: "a", TimeNS: 5, Service: "kubectl", Origin: cpid.OriginLog},
			cpid:   "a",
			want:   cpid.Mergelog{CPID: "a", TimeNS: 5, Service: "kubectl", Origin: cpid.OriginLog},
			wantOK: true,
		},
		{
			name:   "sources union, earliest time wins",
			ms:     []cpid.Mergelog{{CPID: "c", Sources: []string{"a"}, TimeNS: 20, Service: "late", Origin: cpid.OriginInferred}},
			bad:    cpid.Mergelog{CPID: "c", Sources: []string{"b", "a", "", "b"}, TimeNS: 10, Service: "early", Origin: cpid.OriginLog},
			cpid:   "c",
			want:   cpid.Mergelog{CPID: "c", Sources: []string{"a", "b"}, TimeNS: 10, Service: "early", Origin: cpid.OriginLog},
			wantOK: true,
		},
		{
			name:   "later mergelog keeps the earlier",
			ms:     []cpid.Mergelog{{CPID: "c", Sources: []string{"a"}, TimeNS: 10, Service: "early", Origin: cpid.OriginLog}},
			bad:    cpid.Mergelog{CPID: "c", Sources: []string{"b"}, TimeNS: 20, Service: "late", Origin: cpid.OriginInferred},
			cpid:   "c",
			want:   cpid.Mergelog{CPID: "c", Sources: []string{"a", "b"}, TimeNS: 10, Service: "early", Origin: cpid.OriginLog},
			wantOK: true,
		},
		{
			name: "source only has no mergelog",
			bad:  cpid.Mergelog{CPID: "c", Sources: []string{"a"}, TimeNS: 10},
			cpid: "a",
		},
		{
			name:   "own mergelog replaces the estimate",
			ms:     []cpid.Mergelog{{CPID: "c", Sources: []string{"a"}, TimeNS: 10}},
			bad:    cpid.Mergelog{CPID: "a", TimeNS: 30, Service: "kubectl", Origin: cpid.OriginAnnotation},
			cpid:   "a",
			want:   cpid.Mergelog{CPID: "a", TimeNS: 30, Service: "kubectl", Origin: cpid.OriginAnnotation},
			wantOK: true,
		},
		{
			name:    "self loop",
			bad:     cpid.Mergelog{CPID: "a", Sources: []string{"a"}},
			wantErr: ErrCycle,
			cpid:    "a",
		},
		{
			name:    "cycle",
			ms:      []cpid.Mergelog{{CPID: "b", Sources: []string{"a"}}, {CPID: "c", Sources: []string{"b"}}},
			bad:     cpid.Mergelog{CPID: "a", Sources: []string{"x", "c"}, TimeNS: 99},
			wantErr: ErrCycle,
			cpid:    "a",
		},
		{
			name:    "empty CPID",
			bad:     cpid.Mergelog{Sources: []string{"a"}},
			wantErr: errors.New(""),
			cpid:    "a",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, tc.ms)
			before := g.Len()
			err := g.Add(tc.bad)
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("Add: %v", err)
			case tc.wantErr != nil && err == nil:
				t.Fatalf("Add(%+v) accepted", tc.bad)
			case errors.Is(tc.wantErr, ErrCycle) && !errors.Is(err, ErrCycle):
				t.Fatalf("Add: %v, want ErrCycle", err)
			case tc.wantErr != nil && g.Len() != before:
				t.Errorf("refused mergelog changed Len from %d to %d", before, g.Len())
			}
			checkOrder(t, g)
			got, ok := g.Mergelog(tc.cpid)
			if ok != tc.wantOK {
				t.Fatalf("Mergelog(%s) ok = %v, want %v", tc.cpid, ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Mergelog(%s) (-want +got):\n%s", tc.cpid, diff)
			}
		})
	}
}

// randomDAG returns mergelogs of a random DAG of n CPIDs ("c000"...), in a
// topological order: CPID i draws its sources from the CPIDs before it.
// Some roots have no mergelog and are only named as sources.
func randomDAG(r *rand.Rand, n int) []cpid.Mergelog {
	var ms []cpid.Mergelog
	for i := range n {
		m := cpid.Mergelog{CPID: fmt.Sprintf("c%03d", i), TimeNS: int64(i)}
		if i > 0 && r.IntN(4) != 0 {
			for range 1 + r.IntN(3) {
				// Mostly a recent CPID, as real chains are.
				j := i - 1 - r.IntN(min(i, 8))
				if r.IntN(4) == 0 {
					j = r.IntN(i)
				}
				m.Sources = append(m.Sources, fmt.Sprintf("c%03d", j))
			}
		} else if r.IntN(5) == 0 {
			continue // a root named only as a source, if at all
		}
		ms = append(ms, m)
	}
	return ms
}

// closure returns, for each CPID of ms, the set of CPIDs reachable from it,
// itself included, computed the slow way.
func closure(ms []cpid.Mergelog) map[string]map[string]bool {
	children := map[string][]string{}
	reach := map[string]map[string]bool{}
	for _, m := range ms {
		reach[m.CPID] = nil
		for _, s := range m.Sources {
			children[s] = append(children[s], m.CPID)
			reach[s] = nil
		}
	}
	var visit func(string) map[string]bool
	visit = func(c string) map[string]bool {
		if reach[c] != nil {
			return reach[c]
		}
		set := map[string]bool{c: true}
		for _, x := range children[c] {
			for y := range visit(x) {
				set[y] = true
			}
		}
		reach[c] = set
		return set
	}
	for c := range reach {
		visit(c)
	}
	return reach
}

// TestRandomDAG checks every query against the slow closure on random DAGs
// added in shuffled order, which exercises the reordering.
func TestRandomDAG(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 1))
		ms := randomDAG(r, 10+r.IntN(60))
		reach := closure(ms)
		if seed%2 == 1 {
			r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		}
		g := build(t, ms)
		if g.Len() != len(reach) {
			t.Fatalf("seed %d: Len = %d, want %d", seed, g.Len(), len(reach))
		}
		var all []string
		for c := range reach {
			all = append(all, c)
		}
		slices.Sort(all)
		for _, a := range all {
			var want []string
			for c := range reach[a] {
				want = append(want, c)
			}
			slices.Sort(want)
			if diff := cmp.Diff(want, g.Related(a)); diff != "" {
				t.Fatalf("seed %d: Related(%s) (-want +got):\n%s", seed, a, diff)
			}
			var anc, orig []string
			for _, b := range all {
				if b != a && reach[b][a] {
					anc = append(anc, b)
				}
				if reach[b][a] && len(g.Sources(b)) == 0 {
					orig = append(orig, b)
				}
				if got := g.DescendsFrom(a, b); got != reach[b][a] {
					t.Fatalf("seed %d: DescendsFrom(%s, %s) = %v", seed, a, b, got)
				}
			}
			gotAnc := g.Ancestors(a)
			slices.Sort(gotAnc)
			if diff := cmp.Diff(anc, gotAnc, cmpEmpty); diff != "" {
				t.Fatalf("seed %d: Ancestors(%s) (-want +got):\n%s", seed, a, diff)
			}
			if diff := cmp.Diff(orig, g.Origins(a), cmpEmpty); diff != "" {
				t.Fatalf("seed %d: Origins(%s) (-want +got):\n%s", seed, a, diff)
			}
		}
		for range 50 {
			set := make([]string, 1+r.IntN(5))
			for i := range set {
				set[i] = all[r.IntN(len(all))]
			}
			if r.IntN(4) == 0 {
				set = append(set, "", "unknown")
			}
			var want []string
			for _, a := range uniq(set) {
				ancestor := false
				for _, b := range uniq(set) {
					ancestor = ancestor || (a != b && reach[a][b])
				}
				if !ancestor {
					want = append(want, a)
				}
			}
			if diff := cmp.Diff(want, g.Maximal(set), cmpEmpty); diff != "" {
				t.Fatalf("seed %d: Maximal(%q) (-want +got):\n%s", seed, set, diff)
			}
		}
		// An edge from a CPID to one of its ancestors is refused and
		// changes nothing.
		for range 20 {
			a, b := all[r.IntN(len(all))], all[r.IntN(len(all))]
			err := g.Add(cpid.Mergelog{CPID: a, Sources: []string{"fresh", b}})
			if cyc := reach[a][b]; cyc != errors.Is(err, ErrCycle) {
				t.Fatalf("seed %d: Add(%s <- %s): %v, cycle %v", seed, a, b, err, cyc)
			}
			if err == nil {
				break // the graph no longer matches reach
			}
			if g.Has("fresh") {
				t.Fatalf("seed %d: refused mergelog added a source", seed)
			}
		}
		checkOrder(t, g)
	}
}

// synthetic is a DAG shaped like real propagation, for the benchmarks.
type synthetic struct {
	ms   []cpid.Mergelog
	apps [][]string // the CPIDs of each app, oldest first
	// heads holds, per app, the CPID on each of its objects at the end.
	heads [][]string
}

var (
	syntheticOnce sync.Once
	syntheticDAG  synthetic
)

// syntheticGraph returns 1,000,000 mergelogs of 1,000 apps written
// interleaved in time order. Each app has 4 objects, each carrying one CPID
// (a Deployment, its ReplicaSet, ...). One write in 50 is a user change: a
// root merged into the first object's CPID. Otherwise an object gets a new
// CPID from its own (a chain, 9 times in 10) or merged with the CPIDs of 1
// to 3 other objects of its app.
func syntheticGraph() synthetic {
	syntheticOnce.Do(func() {
		const nApps, nObjects, total = 1000, 4, 1_000_000
		r := rand.New(rand.NewPCG(1, 2))
		s := &syntheticDAG
		s.apps = make([][]string, nApps)
		s.heads = make([][]string, nApps)
		s.ms = make([]cpid.Mergelog, 0, total)
		newCPID := func(app int) string {
			c := fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
			s.apps[app] = append(s.apps[app], c)
			return c
		}
		add := func(app int, srcs ...string) string {
			m := cpid.Mergelog{CPID: newCPID(app), Sources: srcs, TimeNS: int64(len(s.ms)) * 1000, Service: "controller", Origin: cpid.OriginInferred}
			s.ms = append(s.ms, m)
			return m.CPID
		}
		for app := range nApps {
			s.heads[app] = make([]string, nObjects)
			root := add(app)
			for o := range nObjects {
				s.heads[app][o] = root
			}
		}
		for len(s.ms) < total {
			app := r.IntN(nApps)
			h := s.heads[app]
			switch o := r.IntN(nObjects); {
			case r.IntN(50) == 0:
				root := add(app)
				h[0] = add(app, h[0], root)
			case r.IntN(10) != 0:
				h[o] = add(app, h[o])
			default:
				srcs := []string{h[o]}
				for range 1 + r.IntN(3) {
					srcs = append(srcs, h[r.IntN(nObjects)])
				}
				h[o] = add(app, uniq(srcs)...)
			}
		}
	})
	return syntheticDAG
}

var (
	benchOnce  sync.Once
	benchGraph *Graph
)

func builtGraph(b *testing.B) (*Graph, synthetic) {
	s := syntheticGraph()
	benchOnce.Do(func() { benchGraph = build(b, s.ms) })
	return benchGraph, s
}

func benchAdd(b *testing.B, ms []cpid.Mergelog) {
	var g *Graph
	for b.Loop() {
		g = NewGraph()
		for _, m := range ms {
			if err := g.Add(m); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ms)), "ns/mergelog")
	var before, after runtime.MemStats
	g = nil
	runtime.GC()
	runtime.ReadMemStats(&before)
	g = build(b, ms)
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(g.Len()), "heapB/CPID")
	runtime.KeepAlive(g)
	runtime.KeepAlive(ms)
}

// BenchmarkAdd builds the 1,000,000-CPID synthetic graph from mergelogs in
// time order; in a local disorder (shuffled within windows of 256) like
// logs of several controllers merged by time with clock skew; and in
// reverse order, the worst case for keeping the topological order.
func BenchmarkAdd(b *testing.B) {
	s := syntheticGraph()
	b.Run("ordered", func(b *testing.B) { benchAdd(b, s.ms) })
	b.Run("disordered", func(b *testing.B) {
		ms := slices.Clone(s.ms)
		r := rand.New(rand.NewPCG(3, 4))
		for i := 0; i < len(ms); i += 256 {
			w := ms[i:min(i+256, len(ms))]
			r.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
		}
		benchAdd(b, ms)
	})
	b.Run("reversed", func(b *testing.B) {
		ms := slices.Clone(s.ms)
		slices.Reverse(ms)
		benchAdd(b, ms)
	})
}

// BenchmarkRelated asks for the related CPIDs of random CPIDs, old and new.
func BenchmarkRelated(b *testing.B) {
	g, s := builtGraph(b)
	r := rand.New(rand.NewPCG(5, 6))
	n := 0
	for b.Loop() {
		m := s.ms[r.IntN(len(s.ms))]
		n += len(g.Related(m.CPID))
	}
	b.ReportMetric(float64(n)/float64(b.N), "CPIDs/op")
}

// BenchmarkMaximal merges sets as a reconstruction does at each write:
// "reuse" is an object's CPID and one of its 1 to 20 closest ancestors (the
// common case, a single CPID comes back); "merge" is the current CPIDs of 2
// to 4 objects of an app; "spread" is 2 to 4 CPIDs of an app of any age.
func BenchmarkMaximal(b *testing.B) {
	g, s := builtGraph(b)
	r := rand.New(rand.NewPCG(7, 8))
	reuse := func() []string {
		c := s.heads[r.IntN(len(s.heads))][r.IntN(4)]
		anc := g.Ancestors(c)
		return []string{anc[r.IntN(min(len(anc), 20))], c}
	}
	merge := func() []string {
		h := s.heads[r.IntN(len(s.heads))]
		set := slices.Clone(h)
		r.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
		return set[:2+r.IntN(3)]
	}
	spread := func() []string {
		app := s.apps[r.IntN(len(s.apps))]
		set := make([]string, 2+r.IntN(3))
		for i := range set {
			set[i] = app[r.IntN(len(app))]
		}
		return set
	}
	for _, bc := range []struct {
		name string
		set  func() []string
	}{{"reuse", reuse}, {"merge", merge}, {"spread", spread}} {
		b.Run(bc.name, func(b *testing.B) {
			sets := make([][]string, 4096)
			for i := range sets {
				sets[i] = bc.set()
			}
			n, i := 0, 0
			for b.Loop() {
				n += len(g.Maximal(sets[i%len(sets)]))
				i++
			}
			b.ReportMetric(float64(n)/float64(b.N), "maximal/op")
		})
	}
}

// BenchmarkDescendsFrom asks whether an object's current CPID descends from
// a CPID of the same app of any age.
func BenchmarkDescendsFrom(b *testing.B) {
	g, s := builtGraph(b)
	r := rand.New(rand.NewPCG(9, 10))
	type pair struct{ cpid, ancestor string }
	pairs := make([]pair, 4096)
	for i := range pairs {
		app := r.IntN(len(s.apps))
		pairs[i] = pair{s.heads[app][r.IntN(4)], s.apps[app][r.IntN(len(s.apps[app]))]}
	}
	yes, i := 0, 0
	for b.Loop() {
		p := pairs[i%len(pairs)]
		if g.DescendsFrom(p.cpid, p.ancestor) {
			yes++
		}
		i++
	}
	b.ReportMetric(float64(yes)/float64(b.N), "true/op")
}

// FuzzGraph runs byte-coded mergelogs, queries and prunes over a small
// alphabet of CPIDs, so that cycles, repeats and resurrections are common,
// and checks that nothing panics and the graph stays consistent.
func FuzzGraph(f *testing.F) {
	f.Add([]byte{0x10, 0x21, 0x32, 0x03, 0xf2, 0x41})
	f.Add([]byte{0x12, 0x23, 0x31, 0xe0, 0x01, 0x02})
	f.Fuzz(func(t *testing.T, ops []byte) {
		g := NewGraph()
		name := func(b byte) string { return string(rune('a' + b%8)) }
		for i, op := range ops {
			switch op >> 4 {
			case 0xe:
				g.Prune(Budget{MaxCPIDs: int(op & 7), Keep: func(c string) bool { return c == "a" }})
			case 0xf:
				g.Prune(Budget{OlderThanNS: int64(op & 15)})
			default:
				m := cpid.Mergelog{CPID: name(op >> 4), TimeNS: int64(i)}
				for j := range op & 3 {
					m.Sources = append(m.Sources, name(op+j*3))
				}
				before := g.Len()
				if err := g.Add(m); err != nil && g.Len() != before {
					t.Fatalf("refused %+v changed Len", m)
				}
			}
			checkOrder(t, g)
			for _, c := range g.Related(name(op)) {
				if !g.DescendsFrom(c, name(op)) {
					t.Fatalf("%s related to %s but does not descend from it", c, name(op))
				}
			}
			if got := g.Maximal([]string{name(op), name(op + 1), name(op + 2)}); len(got) == 0 {
				t.Fatal("Maximal of a non-empty set is empty")
			}
		}
	})
}

// TestEmittedAgain: the engine marks a mergelog of a CPID and origin it
// already emitted (Emitted.Again), so that a bulk run stores the first
// without a set of what it stored; another origin of the same CPID, or a
// CPID known only as a source before, is not again.
func TestEmittedAgain(t *testing.T) {
	t.Parallel()
	en := NewEngine()
	add := func(m cpid.Mergelog) {
		t.Helper()
		if err := en.AddMergelog(m); err != nil {
			t.Fatal(err)
		}
	}
	add(cpid.Mergelog{CPID: "b", Sources: []string{"a"}, TimeNS: 1, Service: "x", Origin: cpid.OriginLog})
	add(cpid.Mergelog{CPID: "b", Sources: []string{"a"}, TimeNS: 2, Service: "x", Origin: cpid.OriginLog})
	add(cpid.Mergelog{CPID: "b", TimeNS: 3, Service: "x", Origin: cpid.OriginAnnotation})
	add(cpid.Mergelog{CPID: "a", TimeNS: 4, Service: "y", Origin: cpid.OriginLog})
	var got []bool
	for _, m := range en.Mergelogs {
		got = append(got, m.Again)
	}
	if want := []bool{false, true, false, false}; !slices.Equal(got, want) {
		t.Errorf("Again of b/log, b/log, b/annotation, a/log: %v, want %v", got, want)
	}
}
