package reconstruct

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cpid-dev/cpid"
	"github.com/google/go-cmp/cmp"
)

func keepOf(cpids ...string) func(string) bool {
	return func(c string) bool { return slices.Contains(cpids, c) }
}

func TestPrune(t *testing.T) {
	chain := []cpid.Mergelog{
		{CPID: "a", TimeNS: 1},
		{CPID: "b", Sources: []string{"a"}, TimeNS: 2},
		{CPID: "c", Sources: []string{"b"}, TimeNS: 3},
		{CPID: "d", Sources: []string{"c"}, TimeNS: 4},
	}
	diamond := []cpid.Mergelog{
		{CPID: "a", TimeNS: 1},
		{CPID: "b", Sources: []string{"a"}, TimeNS: 2},
		{CPID: "c", Sources: []string{"a"}, TimeNS: 3},
		{CPID: "d", Sources: []string{"b", "c"}, TimeNS: 4},
	}
	for _, tc := range []struct {
		name    string
		ms      []cpid.Mergelog
		budget  Budget
		removed []string
		related map[string][]string // of CPIDs that stay
	}{
		{
			name:    "no budget",
			ms:      figure7(),
			related: map[string][]string{"1": {"1", "3", "5"}},
		},
		{
			name:    "chain goes with its root",
			ms:      chain,
			budget:  Budget{MaxCPIDs: 3},
			removed: []string{"a", "b", "c", "d"},
		},
		{
			name:    "chain within budget",
			ms:      chain,
			budget:  Budget{MaxCPIDs: 4},
			related: map[string][]string{"a": {"a", "b", "c", "d"}},
		},
		{
			name:    "diamond",
			ms:      diamond,
			budget:  Budget{OlderThanNS: 2},
			removed: []string{"a", "b", "c", "d"},
		},
		{
			name:    "diamond with a second root",
			ms:      append(slices.Clone(diamond), cpid.Mergelog{CPID: "e", TimeNS: 5}, cpid.Mergelog{CPID: "d", Sources: []string{"e"}, TimeNS: 4}),
			budget:  Budget{OlderThanNS: 2},
			removed: []string{"a", "b", "c"},
			related: map[string][]string{"e": {"d", "e"}},
		},
		{
			name:    "size budget",
			ms:      figure7(),
			budget:  Budget{MaxCPIDs: 5},
			removed: []string{"1", "2", "3"},
			related: map[string][]string{"4": {"4", "5", "7"}, "6": {"6", "7"}, "8": {"8"}},
		},
		{
			name:    "age budget",
			ms:      figure7(),
			budget:  Budget{OlderThanNS: 45},
			removed: []string{"1", "2", "3", "4", "5"},
			related: map[string][]string{"6": {"6", "7"}, "8": {"8"}},
		},
		{
			name:    "age and size budgets",
			ms:      figure7(),
			budget:  Budget{OlderThanNS: 15, MaxCPIDs: 6},
			removed: []string{"1", "2", "3"},
			related: map[string][]string{"4": {"4", "5", "7"}},
		},
		{
			name:    "kept root",
			ms:      figure7(),
			budget:  Budget{OlderThanNS: 100, Keep: keepOf("2")},
			removed: []string{"1", "4", "6", "8"},
			related: map[string][]string{"2": {"2", "3", "5", "7"}},
		},
		{
			name:    "size budget out of reach",
			ms:      figure7(),
			budget:  Budget{MaxCPIDs: 1, Keep: keepOf("2", "8")},
			removed: []string{"1", "4", "6"},
			related: map[string][]string{"2": {"2", "3", "5", "7"}, "8": {"8"}},
		},
		{
			name:    "kept merge stays as a root",
			ms:      figure7(),
			budget:  Budget{OlderThanNS: 25, Keep: keepOf("3")},
			removed: []string{"1", "2"},
			related: map[string][]string{"3": {"3", "5"}, "4": {"4", "5", "7"}},
		},
		{
			name: "ties by CPID",
			ms: []cpid.Mergelog{
				{CPID: "z", TimeNS: 1},
				{CPID: "y", TimeNS: 1},
				{CPID: "x", TimeNS: 2},
			},
			budget:  Budget{MaxCPIDs: 1},
			removed: []string{"y", "z"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := build(t, tc.ms)
			before := g.Len()
			removed := g.Prune(tc.budget)
			if diff := cmp.Diff(tc.removed, removed, cmpEmpty); diff != "" {
				t.Errorf("removed (-want +got):\n%s", diff)
			}
			if g.Len() != before-len(removed) {
				t.Errorf("Len = %d, want %d", g.Len(), before-len(removed))
			}
			for _, c := range removed {
				if g.Has(c) {
					t.Errorf("%s removed but still in the graph", c)
				}
			}
			for c, want := range tc.related {
				if diff := cmp.Diff(want, g.Related(c)); diff != "" {
					t.Errorf("Related(%s) (-want +got):\n%s", c, diff)
				}
			}
			checkOrder(t, g)
		})
	}
}

// TestPruneFigure7 prunes Figure 7 one root at a time.
func TestPruneFigure7(t *testing.T) {
	g := build(t, figure7())
	for _, step := range []struct {
		max     int
		removed []string
		roots   []string
		related map[string][]string
	}{
		{7, []string{"1"}, []string{"2", "4", "6", "8"}, map[string][]string{"2": {"2", "3", "5", "7"}, "3": {"3", "5"}}},
		{6, []string{"2", "3"}, []string{"4", "6", "8"}, map[string][]string{"4": {"4", "5", "7"}, "6": {"6", "7"}}},
		{4, []string{"4", "5"}, []string{"6", "8"}, map[string][]string{"6": {"6", "7"}}},
		{2, []string{"6", "7"}, []string{"8"}, map[string][]string{"8": {"8"}}},
		{1, nil, []string{"8"}, map[string][]string{"8": {"8"}}},
	} {
		t.Run(fmt.Sprint(step.max), func(t *testing.T) {
			if diff := cmp.Diff(step.removed, g.Prune(Budget{MaxCPIDs: step.max}), cmpEmpty); diff != "" {
				t.Errorf("removed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(step.roots, g.Roots()); diff != "" {
				t.Errorf("Roots (-want +got):\n%s", diff)
			}
			for c, want := range step.related {
				if diff := cmp.Diff(want, g.Related(c)); diff != "" {
					t.Errorf("Related(%s) (-want +got):\n%s", c, diff)
				}
			}
			checkOrder(t, g)
		})
	}
	// A pruned CPID named again comes back as a new root.
	if err := g.Add(cpid.Mergelog{CPID: "9", Sources: []string{"1", "8"}, TimeNS: 90}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1", "9"}, g.Related("1")); diff != "" {
		t.Errorf("Related(1) after re-adding (-want +got):\n%s", diff)
	}
	checkOrder(t, g)
}

// TestPruneInvariant prunes random DAGs under random budgets and checks that
// what a kept root reaches is untouched, that only roots and the CPIDs they
// orphaned were deleted, oldest root first, and no more than needed.
func TestPruneInvariant(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 2))
		ms := randomDAG(r, 5+r.IntN(80))
		if seed%2 == 1 {
			r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		}
		g := build(t, ms)
		roots := g.Roots()
		var kept []string
		for _, c := range roots {
			if r.IntN(5) == 0 {
				kept = append(kept, c)
			}
		}
		b := Budget{Keep: keepOf(kept...)}
		if r.IntN(2) == 0 {
			b.MaxCPIDs = 1 + r.IntN(g.Len())
		}
		if r.IntN(2) == 0 {
			b.OlderThanNS = int64(r.IntN(80))
		}
		related := map[string][]string{}
		sources := map[string][]string{}
		timeNS := map[string]int64{}
		for _, m := range ms {
			for _, c := range append([]string{m.CPID}, m.Sources...) {
				sources[c] = g.Sources(c)
				related[c] = g.Related(c)
				timeNS[c] = g.nodes[g.ids[c]].timeNS
			}
		}
		before := g.Len()
		removed := g.Prune(b)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d, budget %+v, kept %q, removed %q: %s", seed, b, kept, removed, fmt.Sprintf(format, args...))
		}
		checkOrder(t, g)
		if g.Len() != before-len(removed) {
			fail("Len = %d", g.Len())
		}

		// Everything a kept root reaches stays, with its edges from
		// what stays.
		for _, k := range kept {
			if diff := cmp.Diff(related[k], g.Related(k)); diff != "" {
				fail("Related(%s) changed (-before +after):\n%s", k, diff)
			}
		}
		for c, srcs := range sources {
			if !g.Has(c) {
				continue
			}
			want := slices.DeleteFunc(slices.Clone(srcs), func(s string) bool { return !g.Has(s) })
			if diff := cmp.Diff(want, g.Sources(c), cmpEmpty); diff != "" {
				fail("Sources(%s) (-want +got):\n%s", c, diff)
			}
		}

		// Each deleted CPID was a non-kept root, or had all its sources
		// deleted before it; the deleted roots are the oldest ones.
		gone := map[string]bool{}
		var deletedRoots []string
		for _, c := range removed {
			if slices.Contains(kept, c) {
				fail("kept %s deleted", c)
			}
			if len(sources[c]) == 0 {
				deletedRoots = append(deletedRoots, c)
			}
			for _, s := range sources[c] {
				if !gone[s] {
					fail("%s deleted before its source %s", c, s)
				}
			}
			gone[c] = true
		}
		var candidates []string
		for _, c := range roots {
			if !slices.Contains(kept, c) {
				candidates = append(candidates, c)
			}
		}
		if !slices.Equal(deletedRoots, candidates[:len(deletedRoots)]) {
			fail("deleted roots %q are not the oldest of %q", deletedRoots, candidates)
		}

		// The budget is met, or every root left is kept; and the last
		// root deleted was needed.
		for _, c := range g.Roots() {
			if slices.Contains(kept, c) {
				continue
			}
			if b.MaxCPIDs > 0 && g.Len() > b.MaxCPIDs {
				fail("Len %d over budget with root %s left", g.Len(), c)
			}
			if b.OlderThanNS != 0 && timeNS[c] < b.OlderThanNS {
				fail("old root %s left", c)
			}
		}
		if n := len(deletedRoots); n > 0 {
			last := deletedRoots[n-1]
			tail := len(removed) - slices.Index(removed, last)
			old := b.OlderThanNS != 0 && timeNS[last] < b.OlderThanNS
			if !old && (b.MaxCPIDs == 0 || g.Len()+tail <= b.MaxCPIDs) {
				fail("root %s deleted within budget", last)
			}
		}
	}
}

// BenchmarkPrune halves the 1,000,000-CPID synthetic graph by size.
func BenchmarkPrune(b *testing.B) {
	s := syntheticGraph()
	removed := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		g := build(b, s.ms)
		b.StartTimer()
		removed += len(g.Prune(Budget{MaxCPIDs: len(s.ms) / 2}))
	}
	b.ReportMetric(float64(removed)/float64(b.N), "removed/op")
}
