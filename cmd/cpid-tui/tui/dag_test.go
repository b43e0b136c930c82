package tui

import (
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/cpid-dev/cpid"
)

// TestDAGNestedMerges draws a merge DAG with nested merges and a CPID
// merging two of the change's (a diamond) as a tree: each CPID under its
// first source of the change, ├─ └─ to it and │ down the CPIDs above that
// have more under them, the other source of the change marked ↑, and the
// objects of every depth with their writes in one column.
func TestDAGNestedMerges(t *testing.T) {
	id := func(c byte) string { return strings.Repeat(string(c), 8) + "-0000-4000-8000-000000000000" }
	obj := func(name string, writes int, writers ...string) []cpid.GraphObject {
		return []cpid.GraphObject{{Resource: "pods", Kind: "Pod", Namespace: "ns", Name: name, Writers: writers, Writes: writes}}
	}
	merge := func(by string, srcs ...string) []cpid.Merge {
		return []cpid.Merge{{Origin: "log", Service: by, Sources: srcs}}
	}
	g := cpid.ChangeGraph{Change: id('a'), Nodes: []cpid.GraphNode{
		{CPID: id('a'), Origin: "root", Objects: obj("root-object", 1, "kubectl (me)")},
		{CPID: id('b'), Origin: "log", Merges: merge("ctl-b", id('a'), id('x')), Objects: obj("b-object", 2, "ctl-b")},
		{CPID: id('c'), Origin: "log", Merges: merge("ctl-c", id('b'), id('y')), Objects: obj("c-object-with-a-long-name", 3, "ctl-c", "kwok")},
		{CPID: id('d'), Origin: "log", Merges: merge("ctl-d", id('a'), id('c')), Objects: obj("d-object", 1, "ctl-d")},
	}, Outside: map[string][]string{id('x'): {id('z')}}}
	a := &app{sty: newStyles(false), keys: newKeys()}
	c := newChange(a, id('a'))
	c.dag.set(g)
	var got []string
	for _, r := range c.dag.rows {
		got = append(got, strings.TrimRight(ansi.Strip(c.dag.rowText(r, 100)), " "))
	}
	want := []string{
		"▾ aaaaaaaa root",
		"│ Pod ns/root-object                                      1 write · kubectl (me)",
		"├─▾ bbbbbbbb merged by ctl-b (log) ← aaaaaaaa + xxxxxxxx (change zzzzzzzz)",
		"│ │ Pod ns/b-object                                       2 writes · ctl-b",
		"│ └─▾ cccccccc merged by ctl-c (log) ← bbbbbbbb + yyyyyyyy",
		"│     Pod ns/c-object-with-a-long-name                    3 writes · ctl-c, kwok",
		"└─▾ dddddddd merged by ctl-d (log) ← aaaaaaaa + cccccccc↑",
		"    Pod ns/d-object                                       1 write · ctl-d",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the DAG is drawn\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Folding a CPID hides what hangs under it, and the tree stays drawn.
	c.dag.toggle(id('b'), true)
	got = got[:0]
	for _, r := range c.dag.rows {
		got = append(got, string([]rune(ansi.Strip(c.dag.rowText(r, 100)))[:6]))
	}
	if strings.Join(got, "|") != "▾ aaaa|│ Pod |├─▸ bb|└─▾ dd|    Po" {
		t.Errorf("b folded: %q", got)
	}
}

// writesAt finds where an object row's writes start.
var writesAt = regexp.MustCompile(`\d+ writes?\b`)

// TestDAGAligned: on the real rolling update and figure-5's Service (nested
// merges), every object's writes start in the same column, at 80 and at
// 160 cells, and every name is whole or elided in its middle.
func TestDAGAligned(t *testing.T) {
	for _, fx := range []struct {
		name string
		row  int
	}{{"basic", rollout}, {"figure-5", 0}} {
		for _, w := range []int{80, 160} {
			m := newTestOf(t, fx.name, w, 48, Options{})
			c := openChange(t, m, fx.row)
			depths := map[int]bool{}
			col := -1
			for _, r := range c.dag.rows {
				if r.obj < 0 {
					continue
				}
				depths[r.depth] = true
				text := ansi.Strip(mark(false) + c.dag.rowText(r, w))
				loc := writesAt.FindStringIndex(text)
				if loc == nil {
					t.Fatalf("%s at %d: no writes on %q", fx.name, w, text)
				}
				at := ansi.StringWidth(text[:loc[0]])
				if col >= 0 && at != col && !strings.HasPrefix(text[loc[0]-2:], "! ") {
					t.Errorf("%s at %d: writes at cell %d, others at %d: %q", fx.name, w, at, col, text)
				}
				col = at
				o := c.dag.g.Nodes[r.node].Objects[r.obj]
				name := object(o.Kind, o.Namespace, o.Name)
				if !strings.Contains(text, name) && !strings.Contains(text, name[len(name)-4:]) {
					t.Errorf("%s at %d: %q lost the end of %s", fx.name, w, text, name)
				}
			}
			if len(depths) < 2 {
				t.Errorf("%s: objects at %d depths: no nested merge to align", fx.name, len(depths))
			}
		}
	}
}
