package tui

import (
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// keys are the bindings that k9s and less users expect. Views read them
// through key.Matches, and the help screen lists them from here.
type keys struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Left, Right                             key.Binding
	Open, Back, Filter, Tab, BackTab        key.Binding
	Help, Quit, Refresh, Command            key.Binding
	Whole                                   key.Binding // every screen: cut text in full

	Sort, Mark, Compare key.Binding // changes

	Slowest, NextCritical, PrevCritical key.Binding // a change, the changes

	Tab1, Tab2, Tab3, Tab4 key.Binding // a change's panes

	Toggle, Origins, Related key.Binding // DAG

	ZoomIn, ZoomOut, ZoomReset, Lanes key.Binding // timeline

	Base, Managed, DiffDown, DiffUp key.Binding // revisions

	History key.Binding // a change's timeline and revisions
}

func newKeys() keys {
	b := func(help, desc string, ks ...string) key.Binding {
		return key.NewBinding(key.WithKeys(ks...), key.WithHelp(help, desc))
	}
	return keys{
		Up:       b("↑/k", "up", "up", "k"),
		Down:     b("↓/j", "down", "down", "j"),
		PageUp:   b("pgup/ctrl+b", "page up", "pgup", "ctrl+b"),
		PageDown: b("pgdn/ctrl+f", "page down", "pgdown", "ctrl+f"),
		Top:      b("g/home", "first", "g", "home"),
		Bottom:   b("G/end", "last", "G", "end"),
		Left:     b("←/h", "previous, collapse", "left", "h"),
		Right:    b("→/l", "next, expand", "right", "l"),
		Open:     b("enter", "open", "enter"),
		Back:     b("esc", "back", "esc", "backspace"),
		Filter:   b("/", "filter", "/"),
		Tab:      b("tab", "next pane", "tab"),
		BackTab:  b("shift+tab", "previous pane", "shift+tab"),
		Help:     b("?", "help", "?"),
		Quit:     b("q", "quit", "q", "ctrl+c"),
		Refresh:  b("ctrl+r", "reload now", "ctrl+r"),
		Command:  b(":", "command: changes, history TYPE/NAME, anomalies, diff ID1 ID2, change ID", ":"),
		// w as k9s's wrap: the lines under a list show what they cut.
		Whole: b("w", "wrap: the text under the list in full, not cut (w again: cut)", "w"),

		Sort:    b("s", "sort: time, duration, size", "s"),
		Mark:    b("space", "mark: the change to compare (d)", "space"),
		Compare: b("d", "diff: compare the marked change with this one", "d"),

		Slowest:      b("S", "slowest hop: jump to the write that waited longest for its cause", "S"),
		NextCritical: b("]", "critical path: the next write on it", "]"),
		PrevCritical: b("[", "critical path: the previous write on it", "["),

		Tab1: b("1", "DAG", "1"),
		Tab2: b("2", "timeline", "2"),
		Tab3: b("3", "logs", "3"),
		Tab4: b("4", "revisions", "4"),

		Toggle:  b("space", "expand/collapse", "space"),
		Origins: b("o", "origins: changes it came from", "o"),
		Related: b("r", "related: changes it led to", "r"),

		ZoomIn:    b("+", "zoom in", "+", "="),
		ZoomOut:   b("-", "zoom out", "-"),
		ZoomReset: b("0", "fit", "0"),
		Lanes:     b("v", "lanes: controller/object", "v"),

		Base:     b("b/space", "diff base", "b", "space"),
		Managed:  b("m", "managedFields", "m"),
		DiffDown: b("J/ctrl+d", "scroll diff down", "J", "ctrl+d"),
		DiffUp:   b("K/ctrl+u", "scroll diff up", "K", "ctrl+u"),

		History: b("H", "object history: its writes across changes", "H"),
	}
}

// move is where a list's cursor goes on a key that moves it (a row, a
// page of 10, the top, the bottom) among n rows; false for other keys.
func (k *keys) move(msg tea.KeyPressMsg, cursor, n int) (int, bool) {
	switch {
	case key.Matches(msg, k.Up):
		return clamp(cursor-1, n), true
	case key.Matches(msg, k.Down):
		return clamp(cursor+1, n), true
	case key.Matches(msg, k.PageUp):
		return clamp(cursor-10, n), true
	case key.Matches(msg, k.PageDown):
		return clamp(cursor+10, n), true
	case key.Matches(msg, k.Top):
		return 0, true
	case key.Matches(msg, k.Bottom):
		return clamp(n-1, n), true
	}
	return cursor, false
}
