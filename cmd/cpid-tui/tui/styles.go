package tui

import (
	"image/color"

	"charm.land/lipgloss/v2"
)

// styles are the looks of the UI. Nothing is said by color alone: the
// critical path has its own glyphs (━ ◆) and the cursor is reversed, so a
// NO_COLOR terminal, or a screen captured as text, shows the same things.
type styles struct {
	title    lipgloss.Style // the breadcrumb bar
	header   lipgloss.Style // column headings
	cursor   lipgloss.Style // the selected row
	status   lipgloss.Style // the status line
	tab      lipgloss.Style
	tabOn    lipgloss.Style
	dim      lipgloss.Style // secondary text
	critical lipgloss.Style // the critical path
	failed   lipgloss.Style // failed writes, error log lines
	added    lipgloss.Style // diff +
	removed  lipgloss.Style // diff -
	key      lipgloss.Style // key names in help
	warn     lipgloss.Style // errors and notices in the status line
}

// newStyles returns colored styles, or attribute-only ones (bold, reverse,
// faint) when color is false (NO_COLOR).
func newStyles(useColor bool) styles {
	c := func(s lipgloss.Style, col string) lipgloss.Style {
		if !useColor {
			return s
		}
		return s.Foreground(lipgloss.Color(col))
	}
	bg := func(s lipgloss.Style, col color.Color) lipgloss.Style {
		if !useColor {
			return s
		}
		return s.Background(col)
	}
	n := lipgloss.NewStyle
	return styles{
		title:    bg(n().Bold(true), lipgloss.Color("24")),
		header:   c(n().Bold(true), "244"),
		cursor:   n().Reverse(true),
		status:   n().Reverse(true),
		tab:      c(n(), "244"),
		tabOn:    n().Bold(true).Underline(true),
		dim:      c(n().Faint(!useColor), "244"),
		critical: c(n().Bold(true), "208"),
		failed:   c(n(), "160"),
		added:    c(n(), "34"),
		removed:  c(n(), "160"),
		key:      c(n().Bold(true), "39"),
		warn:     c(n().Bold(true), "214"),
	}
}
