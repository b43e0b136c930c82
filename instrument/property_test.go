package instrument_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cpid-dev/cpid/instrument"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMergeProperties simulates controllers merging the contexts of random
// objects, with users starting new changes now and then, and checks after
// every merge that:
//   - the annotations stay bounded: one UUID, and at most N ancestors;
//   - a mergelog's sources are exactly the roots of the CPID graph of the
//     observed contexts, computed here independently as the maximal elements
//     of the transitive "is listed as an ancestor of" relation;
//   - a reused CPID is one of those roots, and the only one;
//   - every ancestor an object lists is a true ancestor of its CPID in the
//     merge graph the emitted mergelogs build.
func TestMergeProperties(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 5, 10} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("N=%d/seed=%d", n, seed), func(t *testing.T) {
				simulate(t, n, seed, 500, true)
			})
		}
	}
	// A long run: the walks of the merge graph are left out, they grow with
	// its history; the bound and the sources are still checked at each step.
	t.Run("N=10/long", func(t *testing.T) { simulate(t, 10, 42, 50000, false) })
}

func simulate(t *testing.T, n int, seed uint64, steps int, walk bool) {
	rng := rand.New(rand.NewPCG(seed, seed))
	tr := instrument.New("sim", nil, instrument.WithMaxAncestors(n), instrument.WithIDs(func() instrument.ID {
		var x instrument.ID
		for i := range x {
			x[i] = byte(rng.Uint32())
		}
		return x
	}))
	objs := make([]*corev1.ConfigMap, 8)
	for i := range objs {
		objs[i] = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("o", i)}}
	}
	parents := map[instrument.ID][]instrument.ID{} // the merge graph, from mergelogs
	merges := 0
	for step := 0; step < steps; step++ {
		target := objs[rng.IntN(len(objs))]
		if rng.IntN(10) == 0 {
			c := tr.Root(instrument.Ref(target))
			parents[c.CPID] = nil
			instrument.Inject(target, c)
			continue
		}
		in := []instrument.Context{tr.Extract(target)}
		for range 1 + rng.IntN(4) {
			in = append(in, tr.Extract(objs[rng.IntN(len(objs))]))
		}
		got, m, minted := tr.Plan(instrument.Ref(target), in...)

		roots := referenceRoots(n, in)
		switch {
		case len(roots) == 0:
			if !got.IsZero() || minted {
				t.Fatalf("step %d: merge of no CPID gave %v (minted %v)", step, got, minted)
			}
			continue
		case minted:
			merges++
			if !slices.Equal(m.Sources, roots) {
				t.Fatalf("step %d: sources %v, want the roots %v", step, m.Sources, roots)
			}
			parents[m.CPID] = m.Sources
		default:
			if len(roots) != 1 || got.CPID != roots[0] {
				t.Fatalf("step %d: reused %v, roots %v", step, got.CPID, roots)
			}
		}
		for _, c := range in {
			if walk && !c.IsZero() && !descends(parents, got.CPID, c.CPID) {
				t.Fatalf("step %d: %v does not descend from input %v", step, got.CPID, c.CPID)
			}
		}
		for _, a := range got.Ancestors {
			if a == got.CPID || walk && !descends(parents, got.CPID, a) {
				t.Fatalf("step %d: %v lists %v, not one of its ancestors", step, got.CPID, a)
			}
		}
		instrument.Inject(target, got)
		ann := target.GetAnnotations()
		if len(ann[instrument.KeyCPID]) != 36 {
			t.Fatalf("step %d: CPID annotation %q", step, ann[instrument.KeyCPID])
		}
		if l := len(ann[instrument.KeyAncestors]); l > max(0, 37*n-1) {
			t.Fatalf("step %d: ancestors annotation of %d bytes with N=%d", step, l, n)
		}
	}
	if merges == 0 {
		t.Fatal("no merge happened")
	}
}

// referenceRoots returns, in order of first appearance, the CPIDs of in that
// no other CPID of in descends from, where descent is what the (N-cut)
// ancestor lists say, followed transitively through the lists of in.
func referenceRoots(n int, in []instrument.Context) []instrument.ID {
	known := map[instrument.ID][]instrument.ID{}
	var order []instrument.ID
	for _, c := range in {
		if c.IsZero() {
			continue
		}
		if _, ok := known[c.CPID]; !ok {
			order = append(order, c.CPID)
		}
		known[c.CPID] = append(known[c.CPID], c.Ancestors[:min(n, len(c.Ancestors))]...)
	}
	closure := func(x instrument.ID) map[instrument.ID]bool {
		seen := map[instrument.ID]bool{}
		stack := slices.Clone(known[x])
		for len(stack) > 0 {
			y := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[y] {
				continue
			}
			seen[y] = true
			stack = append(stack, known[y]...)
		}
		return seen
	}
	var roots []instrument.ID
	for _, x := range order {
		root := true
		for _, y := range order {
			if y != x && closure(y)[x] {
				root = false
				break
			}
		}
		if root {
			roots = append(roots, x)
		}
	}
	return roots
}

// descends reports whether x is a or descends from a in the merge graph.
func descends(parents map[instrument.ID][]instrument.ID, x, a instrument.ID) bool {
	seen := map[instrument.ID]bool{}
	stack := []instrument.ID{x}
	for len(stack) > 0 {
		y := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if y == a {
			return true
		}
		if seen[y] {
			continue
		}
		seen[y] = true
		stack = append(stack, parents[y]...)
	}
	return false
}
