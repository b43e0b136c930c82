package tui

import "charm.land/bubbles/v2/key"

// helpView lists the keys of the screen on top beside the global ones, and
// how to read the timeline.
func (m *Model) helpView(w, h int) string {
	s := &m.a.sty
	k := &m.a.keys
	row := func(b key.Binding) string {
		return "   " + s.key.Render(fit(b.Help().Key, 12)) + " " + b.Help().Desc
	}
	here := []string{s.header.Render(" Keys here (" + m.top().crumb() + ")")}
	seen := map[string]bool{}
	for _, b := range m.top().help() {
		if !seen[b.Help().Key] {
			seen[b.Help().Key] = true
			here = append(here, row(b))
		}
	}
	every := []string{s.header.Render(" Everywhere")}
	for _, b := range []key.Binding{k.Filter, k.Back, k.Refresh, k.Help, k.Quit} {
		every = append(every, row(b))
	}
	legend := []string{"",
		" Times are UTC; +N is the time since the user's request reached the apiserver.",
		" Timeline: ◆ ━ the critical path, ● a write, ─ its hop from its cause, ✕ a failed write, ▬ a span.",
		" The mouse wheel moves the cursor. esc or ? closes this help."}
	lines := []string{""}
	if w >= 76 {
		colW := w / 2
		for i := 0; i < max(len(here), len(every)); i++ {
			l := ""
			if i < len(here) {
				l = here[i]
			}
			l = fit(l, colW)
			if i < len(every) {
				l += every[i]
			}
			lines = append(lines, l)
		}
	} else {
		lines = append(append(append(lines, here...), ""), every...)
	}
	for _, l := range legend {
		for _, part := range wrap(l, w) {
			lines = append(lines, s.dim.Render(part))
		}
	}
	return block(lines, w, h)
}
