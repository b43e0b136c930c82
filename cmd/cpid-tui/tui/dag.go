package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cpid-dev/cpid"
)

// dagView shows the part of the merge DAG a change made as a tree: each
// CPID under the first of its merge sources that belongs to the change,
// with the objects it touched and who wrote them. Sources from other changes
// are named on the CPID's line.
type dagView struct {
	c         *changeScreen
	g         cpid.ChangeGraph
	children  map[int][]int  // node -> child nodes
	index     map[string]int // CPID -> node
	roots     []int
	collapsed map[string]bool
	filter    string
	rows      []dagRow
	cursor    int
	top       int
}

// dagRow is a line of the tree: a CPID (obj < 0) or one of its objects.
// pre draws the tree to its left: │ where a CPID above has more children
// below, ├─ and └─ before a CPID under another.
type dagRow struct {
	depth int
	node  int
	obj   int
	pre   string
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
	d.index = idx
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
	for _, r := range d.roots {
		d.rows = append(d.rows, d.subtree(r, 0, strings.ToLower(d.filter))...)
	}
}

// subtree is the rows of node n and what hangs under it, drawn as if it
// were a root; nil when the filter keeps nothing of it.
func (d *dagView) subtree(n, depth int, f string) []dagRow {
	node := d.g.Nodes[n]
	self := f == "" || strings.Contains(node.CPID, f)
	var objs []int
	for j, o := range node.Objects {
		if self || strings.Contains(strings.ToLower(d.objectText(o)), f) {
			objs = append(objs, j)
		}
	}
	var kids [][]dagRow
	if !d.collapsed[node.CPID] {
		for _, ch := range d.children[n] {
			if rows := d.subtree(ch, depth+1, f); len(rows) > 0 {
				kids = append(kids, rows)
			}
		}
	}
	// With a filter, a CPID that matches nothing and leads to nothing that
	// matches is left out.
	if !self && len(objs) == 0 && len(kids) == 0 {
		return nil
	}
	rows := []dagRow{{depth: depth, node: n, obj: -1}}
	if !d.collapsed[node.CPID] {
		bar := "  "
		if len(kids) > 0 {
			bar = "│ "
		}
		for _, j := range objs {
			rows = append(rows, dagRow{depth: depth + 1, node: n, obj: j, pre: bar})
		}
	}
	for i, k := range kids {
		first, rest := "├─", "│ "
		if i == len(kids)-1 {
			first, rest = "└─", "  "
		}
		for j, r := range k {
			if j == 0 {
				r.pre = first + r.pre
			} else {
				r.pre = rest + r.pre
			}
			rows = append(rows, r)
		}
	}
	return rows
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
	if c, ok := k.move(km, d.cursor, len(d.rows)); ok {
		d.cursor = c
		return nil
	}
	switch {
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
	lines := []string{s.dim.Render(lines1(fmt.Sprintf(" %s · %s", plural(len(d.g.Nodes), "CPID"),
		"space folds · enter on an object: its revisions · o origins · r related changes"), w))}
	detail := d.detail(w, h/2)
	listH := h - 1 - len(detail)
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
	for len(lines) < h-len(detail) {
		lines = append(lines, "")
	}
	return block(append(lines[:h-len(detail)], detail...), w, h)
}

// infoWidth is the width of the objects' writes and writers, the same
// column for every object whatever its depth.
func infoWidth(w int) int { return min(50, max(26, w*2/5)) }

func (d *dagView) rowText(r dagRow, w int) string {
	s := &d.c.a.sty
	node := d.g.Nodes[r.node]
	room := w - 2 - ansi.StringWidth(r.pre) // after the cursor mark and the tree
	if r.obj >= 0 {
		o := node.Objects[r.obj]
		infoW := infoWidth(w)
		nameW := max(8, room-infoW-1)
		info := writes(o.Writes, o.Attempts) + " · "
		if d.anomalous(o) {
			info = "! " + info
		}
		info += names(o.Writers, infoW-ansi.StringWidth(info))
		return r.pre + objectName(o.Kind, o.Namespace, o.Name, nameW) + " " + s.dim.Render(info)
	}
	fold := "▾"
	if d.collapsed[node.CPID] {
		fold = "▸"
	}
	text := fold + " " + d.c.a.short(node.CPID) + " " + d.nodeText(node)
	if ansi.StringWidth(text) > room {
		text = cutWords(text, room)
	}
	return r.pre + text
}

// anomalous reports whether one of the change's writes of o has an
// anomaly.
func (d *dagView) anomalous(o cpid.GraphObject) bool {
	for _, as := range d.c.tl.anoms {
		for _, a := range as {
			if a.Resource == o.Resource && a.APIGroup == o.APIGroup && a.Namespace == o.Namespace && a.Name == o.Name {
				return true
			}
		}
	}
	return false
}

// names lists names in at most w cells: as many whole as fit, then how
// many more ("+2"); a first name too long for the room elided in its
// middle.
func names(ns []string, w int) string {
	out := ""
	for i, n := range ns {
		sep := ""
		if i > 0 {
			sep = ", "
		}
		more := ""
		if i < len(ns)-1 {
			more = fmt.Sprintf(" +%d", len(ns)-1-i)
		}
		if ansi.StringWidth(out+sep+n+more) <= w {
			out += sep + n
			continue
		}
		if i == 0 {
			return elide(n, max(1, w-ansi.StringWidth(more))) + more
		}
		return out + fmt.Sprintf(" +%d", len(ns)-i)
	}
	return out
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
		t := d.c.a.short(src)
		if chs := d.g.Outside[src]; len(chs) > 0 {
			t += " (change " + d.c.a.short(chs[0]) + ")"
		}
		srcs = append(srcs, t)
	}
	// The tree shows a CPID under its first source of this change; the
	// others of this change are above it, marked ↑.
	first := true
	for i, src := range m.Sources {
		if _, inside := d.index[src]; inside {
			if !first {
				srcs[i] += "↑"
			}
			first = false
		}
	}
	return fmt.Sprintf("merged by %s (%s) ← %s", m.Service, m.Origin, strings.Join(srcs, " + "))
}

// detail describes the selected CPID, in full with w, in at most most
// lines.
func (d *dagView) detail(w, most int) []string {
	n, ok := d.selectedNode()
	if !ok {
		return nil
	}
	good, failed := 0, 0
	for _, o := range n.Objects {
		good, failed = good+o.Writes, failed+o.Attempts
	}
	first := fmt.Sprintf(" CPID %s · %s · first write %s · %s, %s", n.CPID, n.Origin, clock(n.FirstNS), plural(len(n.Objects), "object"),
		writes(good, failed))
	second := " root of the change: " + rootWrite(d.c.row.Trigger)
	if len(n.Merges) > 0 && len(n.Merges[0].Sources) > 0 {
		m := n.Merges[0]
		second = fmt.Sprintf(" merged at %s by %s from %s", clock(m.TimeNS), m.Service, strings.Join(m.Sources, ", "))
	} else if n.Origin != "root" {
		second = " no merge recorded for it"
	}
	return append([]string{d.c.a.sty.dim.Render(strings.Repeat("─", w))}, d.c.a.details(w, 2, most, first, second)...)
}

// rootWrite names the write a change of trigger started with.
func rootWrite(t cpid.Trigger) string {
	switch t {
	case cpid.TriggerUser:
		return "the user's write"
	case cpid.TriggerNode:
		return "the write that showed the node's change"
	case cpid.TriggerControllerStart:
		return "the first write of the controller that started again"
	case cpid.TriggerSchedule:
		return "the CronJob controller's write on its schedule"
	case cpid.TriggerGC:
		return "the garbage collector's write"
	}
	return "its first write (" + string(t) + ")"
}

func (d *dagView) status() string {
	n, ok := d.selectedNode()
	if !ok {
		return "DAG"
	}
	r := d.rows[d.cursor]
	if r.obj >= 0 {
		o := n.Objects[r.obj]
		return fmt.Sprintf("DAG %d/%d  %s  %s", d.cursor+1, len(d.rows), d.c.a.short(n.CPID), object(o.Kind, o.Namespace, o.Name))
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
