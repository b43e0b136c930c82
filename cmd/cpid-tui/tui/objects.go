package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/cpid-dev/cpid"
)

// objectsScreen lists objects to open the history of one (enter): those
// a reference of :history names when it names several (web in two
// namespaces), or every object of a resource (:pods).
type objectsScreen struct {
	a *app
	// what is the crumb, title the line above the list.
	what, title string
	all         []cpid.ObjectMatch
	rows        []cpid.ObjectMatch
	filter      string
	cursor      int
	top         int
}

func newObjects(a *app, what, title string, ms []cpid.ObjectMatch) *objectsScreen {
	return &objectsScreen{a: a, what: what, title: title, all: ms, rows: ms}
}

func (o *objectsScreen) crumb() string { return o.what }

func (o *objectsScreen) load() tea.Cmd { return nil }

func (o *objectsScreen) name(m cpid.ObjectMatch) string {
	return object(o.kind(m), m.Namespace, m.Name)
}

// kind is m's kind, with its API group when it has one: two objects of
// one name may differ only there.
func (o *objectsScreen) kind(m cpid.ObjectMatch) string {
	if m.Group != "" {
		return cpid.KindOf("", m.Resource) + "." + m.Group
	}
	return cpid.KindOf("", m.Resource)
}

func (o *objectsScreen) update(msg tea.Msg) tea.Cmd {
	km, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	k := &o.a.keys
	n := len(o.rows)
	switch {
	case key.Matches(km, k.Up):
		o.cursor = clamp(o.cursor-1, n)
	case key.Matches(km, k.Down):
		o.cursor = clamp(o.cursor+1, n)
	case key.Matches(km, k.Top):
		o.cursor = 0
	case key.Matches(km, k.Bottom):
		o.cursor = clamp(n-1, n)
	case key.Matches(km, k.Open):
		if o.cursor < n {
			m := o.rows[o.cursor]
			return push(newHistory(o.a, m.ObjectKey, cpid.KindOf("", m.Resource), "", 0))
		}
	}
	return nil
}

func (o *objectsScreen) view(w, h int) string {
	s := &o.a.sty
	clusters := len(o.all) > 0 && o.all[0].Cluster != o.all[len(o.all)-1].Cluster
	lines := []string{s.dim.Render(lines1(" "+o.title+": enter opens the history of one", w))}
	// The cluster's column only when there are several; else its room
	// goes to the names.
	nameW, head := max(20, w-47), ""
	if clusters {
		nameW, head = max(20, w-4-11-30-10), "CLUSTER"
	}
	lines = append(lines, s.header.Render(fit("    "+fit("OBJECT", nameW+1)+right("ALL WRITES", 10)+"  "+fit("FIRST TO LAST", 29)+head, w)))
	listH := max(1, h-len(lines))
	o.top = window(o.top, o.cursor, len(o.rows), listH)
	for i := o.top; i < min(len(o.rows), o.top+listH); i++ {
		m := o.rows[i]
		cl := ""
		if clusters {
			cl = m.Cluster
		}
		line := mark(i == o.cursor) + "  " + objectName(o.kind(m), m.Namespace, m.Name, nameW) + " " + right(fmt.Sprint(m.Writes), 10) + "  " +
			fit(clock(m.FirstNS)+" to "+clock(m.LastNS), 29) + cl
		if i == o.cursor {
			line = s.cursor.Render(fit(line, w))
		}
		lines = append(lines, line)
	}
	if len(o.rows) == 0 {
		lines = append(lines, "  no object matches the filter")
	}
	return block(lines, w, h)
}

func (o *objectsScreen) status() string {
	if o.cursor < len(o.rows) {
		return fmt.Sprintf("object %d/%d  %s", o.cursor+1, len(o.rows), o.name(o.rows[o.cursor]))
	}
	return o.crumb()
}

func (o *objectsScreen) help() []key.Binding {
	k := &o.a.keys
	return []key.Binding{k.Up, k.Down, k.Top, k.Bottom, k.Open}
}

func (o *objectsScreen) hints() []key.Binding { return []key.Binding{o.a.keys.Open} }

func (o *objectsScreen) filterText() string { return o.filter }

func (o *objectsScreen) setFilter(f string) tea.Cmd {
	o.filter = f
	o.rows = o.rows[:0:0]
	for _, m := range o.all {
		if strings.Contains(strings.ToLower(o.name(m)+" "+m.Cluster), strings.ToLower(f)) {
			o.rows = append(o.rows, m)
		}
	}
	o.cursor = clamp(o.cursor, len(o.rows))
	return nil
}
