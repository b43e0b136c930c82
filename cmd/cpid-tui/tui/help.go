package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"github.com/charmbracelet/x/ansi"
)

// helpView lists the keys of the screen on top beside the global ones, and
// how to read the timeline.
func (m *Model) helpView(w, h int) string {
	s := &m.a.sty
	k := &m.a.keys
	colW := w
	if w >= 76 {
		colW = w / 2
	}
	// A key's description in one line, cut; whole with w.
	row := func(b key.Binding) []string {
		descs := []string{lines1(b.Help().Desc, colW-17)}
		if m.a.whole {
			descs = strings.Split(ansi.Hardwrap(ansi.Wordwrap(b.Help().Desc, colW-17, ""), colW-17, true), "\n")
		}
		out := []string{"   " + s.key.Render(fit(b.Help().Key, 12)) + " " + descs[0]}
		for _, d := range descs[1:] {
			out = append(out, strings.Repeat(" ", 16)+strings.TrimLeft(d, " "))
		}
		return out
	}
	here := []string{s.header.Render(" Keys here (" + elide(m.top().crumb(), colW-14) + ")")}
	seen := map[string]bool{}
	for _, b := range m.top().help() {
		if !seen[b.Help().Key] {
			seen[b.Help().Key] = true
			here = append(here, row(b)...)
		}
	}
	every := []string{s.header.Render(" Everywhere")}
	for _, b := range []key.Binding{k.Filter, k.Command, k.Back, k.Whole, k.Refresh, k.Help, k.Quit} {
		every = append(every, row(b)...)
	}
	every = append(every, "", s.header.Render(" Commands (:, tab completes)"))
	for _, c := range commands {
		every = append(every, "   "+s.key.Render(c.usage)+" "+lines1(strings.Join(c.aliases, " "), colW-4-len(c.usage)))
	}
	legend := []string{"",
		" Times are UTC; +N is the time since the change's first request reached the apiserver. / matches names, writers, verbs and HTTP codes.",
		" Timeline: ◆ ━ the critical path, ● a write, ─ its hop from its cause, ✕ a failed write, ▬ a span. ! an anomaly, ? a cause found by time alone, → a log line that explains a write, * a change marked for a diff.",
		" Coming from k9s: :pods, :deploy, :no (any resource by kubectl's names) list its objects, :pods NAME opens one's history; d is diff here (describe in k9s), l expands a DAG node (logs in k9s: 3 shows a change's logs); w wraps as in k9s; esc goes back, / filters, : commands as there.",
		" The mouse wheel moves the cursor. esc or ? closes this help."}
	out := []string{""}
	if w >= 76 {
		for i := 0; i < max(len(here), len(every)); i++ {
			l := ""
			if i < len(here) {
				l = here[i]
			}
			l = fit(l, colW)
			if i < len(every) {
				l += every[i]
			}
			out = append(out, l)
		}
	} else {
		out = append(append(append(out, here...), ""), every...)
	}
	for _, l := range legend {
		for _, part := range lines(w, 10, l) {
			out = append(out, s.dim.Render(part))
		}
	}
	// Longer than the screen: j/k scroll it.
	if len(out) > h {
		m.helpTop = min(m.helpTop, len(out)-h+1)
		more := len(out) - (m.helpTop + h - 1)
		out = append(out[m.helpTop:m.helpTop+h-1], s.dim.Render(fmt.Sprintf(" ↓/j ↑/k scroll the help (%d more below, %d above)", more, m.helpTop)))
	}
	return block(out, w, h)
}
