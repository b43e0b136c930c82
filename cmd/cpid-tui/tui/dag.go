package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/cpid-dev/cpid"
)

// dagView shows the part of the merge DAG a change made as a tree: each
// CPID under the first of its merge sources that belongs to the change,
// with the objects it touched and who wrote them. Sources from other changes
// are named on the CPID's line.
type dagView struct {
	c         *changeScreen
	g         cpid.ChangeGraph
	children  map[int][]int // node -> child nodes
	roots     []int
	collapsed map[string]bool
	filter    string
	rows      []dagRow
	cursor    int
	top       int
}

// dagRow is a line of the tree: a CPID (obj < 0) or one of its objects.
type dagRow struct {
	depth int
	node  int
	obj   int
}

func (d *dagView) set(g cpid.ChangeGraph) {
	var keep dagRow
	if d.cursor < len(d.rows) {
		keep = d.rows[d.cursor]
	}
	keepCPID, keepObj := "", keep.obj
	if keep.node < len(d.g.Nodes) {
		keepCPID = d.g.Nodes[keep.node].CPID
	}
	d.g = g
	idx := map[string]int{}
	for i, n := range g.Nodes {
		idx[n.CPID] = i
	}
	d.children, d.roots = map[int][]int{}, nil
	for i, n := range g.Nodes {
		parent := -1
		for _, m := range n.Merges {
			for _, src := range m.Sources {
				if j, ok := idx[src]; ok && j < i && parent < 0 {
					parent = j
				}
			}
		}
		if parent < 0 {
			d.roots = append(d.roots, i)
		} else {
			d.children[parent] = append(d.children[parent], i)
		}
	}
	d.flatten()
	for i, r := range d.rows {
		if d.g.Nodes[r.node].CPID == keepCPID && r.obj == keepObj {
			d.cursor = i
		}
	}
	d.cursor = clamp(d.cursor, len(d.rows))
}

// flatten lays the tree out as rows, honouring collapsed nodes and the
// filter (which keeps the objects and CPIDs it matches, and their CPIDs).
func (d *dagView) flatten() {
	d.rows = d.rows[:0]
	f := strings.ToLower(d.filter)
	var walk func(n, depth int)
	walk = func(n, depth int) {
		node := d.g.Nodes[n]
		var objs []int
		for j, o := range node.Objects {
			if f == "" || strings.Contains(strings.ToLower(d.objectText(o)), f) || strings.Contains(node.CPID, f) {
				objs = append(objs, j)
			}
		}
		start := len(d.rows)
		d.rows = append(d.rows, dagRow{depth: depth, node: n, obj: -1})
		if !d.collapsed[node.CPID] {
			for _, j := range objs {
				d.rows = append(d.rows, dagRow{depth: depth + 1, node: n, obj: j})
			}
		}
		before := len(d.rows)
		if !d.collapsed[node.CPID] {
			for _, ch := range d.children[n] {
				walk(ch, depth+1)
			}
		}
		// With a filter, a CPID that matches nothing and leads to nothing
		// that matches is left out.
		if f != "" && len(objs) == 0 && len(d.rows) == before && !strings.Contains(node.CPID, f) {
			d.rows = d.rows[:start]
		}
	}
	for _, r := range d.roots {
		walk(r, 0)
	}
}

func (d *dagView) objectText(o cpid.GraphObject) string {
	return object(o.Kind, o.Namespace, o.Name) + " " + strings.Join(o.Writers, ", ")
}

func (d *dagView) selectedNode() (cpid.GraphNode, bool) {
	if d.cursor >= len(d.rows) {
		return cpid.GraphNode{}, false
	}
	return d.g.Nodes[d.rows[d.cursor].node], true
}

func (d *dagView) update(msg tea.Msg) tea.Cmd {
	km, ok := msg.(tea.KeyPressMsg)
	if !ok || len(d.rows) == 0 {
		return nil
	}
	k := &d.c.a.keys
	r := d.rows[d.cursor]
	node := d.g.Nodes[r.node]
	switch {
	case key.Matches(km, k.Up):
		d.cursor = clamp(d.cursor-1, len(d.rows))
	case key.Matches(km, k.Down):
		d.cursor = clamp(d.cursor+1, len(d.rows))
	case key.Matches(km, k.PageUp):
		d.cursor = clamp(d.cursor-10, len(d.rows))
	case key.Matches(km, k.PageDown):
		d.cursor = clamp(d.cursor+10, len(d.rows))
	case key.Matches(km, k.Top):
		d.cursor = 0
	case key.Matches(km, k.Bottom):
		d.cursor = len(d.rows) - 1
	case key.Matches(km, k.Open) && r.obj >= 0:
		o := node.Objects[r.obj]
		return d.c.openRevisions(cpid.ObjectKey{Group: o.APIGroup, Resource: o.Resource, Namespace: o.Namespace, Name: o.Name}, o.Kind, 0)
	case key.Matches(km, k.Open, k.Toggle) && r.obj < 0:
		d.toggle(node.CPID, !d.collapsed[node.CPID])
	case key.Matches(km, k.Right):
		d.toggle(node.CPID, false)
	case key.Matches(km, k.Left):
		if r.obj < 0 && !d.collapsed[node.CPID] {
			d.toggle(node.CPID, true)
			break
		}
		// Go up to the CPID's line, or its parent's.
		for i := d.cursor - 1; i >= 0; i-- {
			if d.rows[i].obj < 0 && d.rows[i].depth < r.depth {
				d.cursor = i
				break
			}
		}
	case key.Matches(km, k.Origins):
		return d.c.linked(node.CPID, true)
	case key.Matches(km, k.Related):
		return d.c.linked(node.CPID, false)
	}
	return nil
}

func (d *dagView) toggle(cpid string, collapse bool) {
	d.collapsed[cpid] = collapse
	d.flatten()
	for i, r := range d.rows {
		if r.obj < 0 && d.g.Nodes[r.node].CPID == cpid {
			d.cursor = i
		}
	}
	d.cursor = clamp(d.cursor, len(d.rows))
}

func (d *dagView) view(w, h int) string {
	s := &d.c.a.sty
	lines := []string{s.dim.Render(fmt.Sprintf(" %d CPIDs · %s", len(d.g.Nodes),
		"space folds · enter on an object: its revisions · o origins · r related changes"))}
	listH := h - 1 - 3
	d.top = window(d.top, d.cursor, len(d.rows), listH)
	for i := d.top; i < min(len(d.rows), d.top+listH); i++ {
		line := mark(i == d.cursor) + d.rowText(d.rows[i], w)
		if i == d.cursor {
			line = s.cursor.Render(fit(line, w))
		}
		lines = append(lines, line)
	}
	if len(d.rows) == 0 {
		if d.filter != "" {
			lines = append(lines, "  nothing matches the filter")
		} else {
			lines = append(lines, "  no CPID: the change's writes were not explained")
		}
	}
	for len(lines) < h-3 {
		lines = append(lines, "")
	}
	return block(append(lines[:h-3], d.detail(w)...), w, h)
}

func (d *dagView) rowText(r dagRow, w int) string {
	s := &d.c.a.sty
	node := d.g.Nodes[r.node]
	indent := strings.Repeat("  ", r.depth)
	if r.obj >= 0 {
		o := node.Objects[r.obj]
		writes := plural(o.Writes, "write")
		if o.Attempts > 0 {
			writes += fmt.Sprintf(", %d failed", o.Attempts)
		}
		nameW := max(20, (w-len(indent)-2)/2)
		return indent + "  " + fit(object(o.Kind, o.Namespace, o.Name), nameW) + " " +
			s.dim.Render(strings.Join(o.Writers, ", ")+" · "+writes)
	}
	fold := "▾"
	if d.collapsed[node.CPID] {
		fold = "▸"
	}
	return indent + fold + " " + short(node.CPID) + " " + d.nodeText(node)
}

// nodeText says how a CPID came to be: the user's root, or a merge and of
// what.
func (d *dagView) nodeText(n cpid.GraphNode) string {
	if len(n.Merges) == 0 {
		return n.Origin
	}
	m := n.Merges[0]
	if len(m.Sources) == 0 {
		return fmt.Sprintf("%s · %s", n.Origin, m.Service)
	}
	var srcs []string
	for _, src := range m.Sources {
		t := short(src)
		if chs := d.g.Outside[src]; len(chs) > 0 {
			t += " (change " + short(chs[0]) + ")"
		}
		srcs = append(srcs, t)
	}
	return fmt.Sprintf("merged by %s (%s) ← %s", m.Service, m.Origin, strings.Join(srcs, " + "))
}

// detail describes the selected CPID in full.
func (d *dagView) detail(w int) []string {
	n, ok := d.selectedNode()
	if !ok {
		return nil
	}
	objs, writes := len(n.Objects), 0
	for _, o := range n.Objects {
		writes += o.Writes
	}
	first := fmt.Sprintf(" CPID %s · %s · first write %s · %s, %s", n.CPID, n.Origin, clock(n.FirstNS), plural(objs, "object"), plural(writes, "write"))
	second := " root of the change: the user's write"
	if len(n.Merges) > 0 && len(n.Merges[0].Sources) > 0 {
		m := n.Merges[0]
		second = fmt.Sprintf(" merged at %s by %s from %s", clock(m.TimeNS), m.Service, strings.Join(m.Sources, ", "))
	} else if n.Origin != "root" {
		second = " no merge recorded for it"
	}
	return []string{d.c.a.sty.dim.Render(strings.Repeat("─", w)), first, second}
}

func (d *dagView) status() string {
	n, ok := d.selectedNode()
	if !ok {
		return "DAG"
	}
	r := d.rows[d.cursor]
	if r.obj >= 0 {
		o := n.Objects[r.obj]
		return fmt.Sprintf("DAG %d/%d  %s  %s", d.cursor+1, len(d.rows), short(n.CPID), object(o.Kind, o.Namespace, o.Name))
	}
	return fmt.Sprintf("DAG %d/%d  CPID %s", d.cursor+1, len(d.rows), n.CPID)
}

func (d *dagView) help() []key.Binding {
	k := &d.c.a.keys
	return []key.Binding{k.Up, k.Down, k.Toggle, k.Right, k.Left, k.Open, k.Origins, k.Related}
}

func (d *dagView) hints() []key.Binding {
	k := &d.c.a.keys
	return []key.Binding{k.Toggle, k.Origins, k.Related}
}

func (d *dagView) filterText() string { return d.filter }

func (d *dagView) setFilter(f string) tea.Cmd {
	d.filter = f
	d.flatten()
	d.cursor = clamp(d.cursor, len(d.rows))
	return nil
}
