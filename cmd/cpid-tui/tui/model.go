// Package tui is cpid-tui browse: a terminal UI over a cpid database that
// walks root changes, their merge DAG, timelines, controller logs and object
// revisions. Every view reads the store through paged or per-change queries,
// so it opens as fast on a million events as on a thousand.
package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
)

// Options configure a Model.
type Options struct {
	// Change, when set, opens that change on top of the changes list.
	Change string
	// Refresh is how often the database is checked for new data (a tail
	// writing to it); 0 never checks.
	Refresh time.Duration
	// Color enables colors; without it (NO_COLOR) only bold, faint and
	// reverse are used.
	Color bool
	// Now is the clock of the status line; time.Now when nil.
	Now func() time.Time
}

// app is what every screen shares.
type app struct {
	ctx  context.Context
	st   cpid.ChangeReader
	keys keys
	sty  styles
	now  func() time.Time
	// version is the data version last read: its CutoffNS says which
	// writes the next reconstruct may still redo.
	version cpid.DataVersion
	// whole: the lines under every list show their text in full, wrapped,
	// instead of one line each cut with " …" (w).
	whole bool
	// idLen is how many characters of an id the views show: the fewest,
	// minIDLength or more, that no two ids of the database share
	// (cpid.IDLength), read once per data version.
	idLen int
}

// screen is one level of the breadcrumb: the changes list, a change, a list
// of linked changes.
type screen interface {
	// crumb names the screen in the breadcrumb.
	crumb() string
	// load (re)reads the screen's data, keeping its cursor where it is.
	load() tea.Cmd
	// update handles a key, or a message addressed to this screen.
	update(msg tea.Msg) tea.Cmd
	// view renders the screen's body in w x h cells.
	view(w, h int) string
	// status says what is selected.
	status() string
	// help lists the screen's own keys, hints the few shown at the bottom.
	help() []key.Binding
	hints() []key.Binding
	// filterText and setFilter read and set the text filter of the screen
	// (or of its current pane).
	filterText() string
	setFilter(string) tea.Cmd
}

// targeted is a message addressed to one screen: load results. Results for
// a screen no longer on the breadcrumb are dropped.
type targeted interface{ target() screen }

// pushMsg opens a screen on top of the breadcrumb.
type pushMsg struct{ s screen }

// rootMsg goes back to the first screen, the changes list.
type rootMsg struct{}

// noticeMsg shows a line in the status bar until the next key.
type noticeMsg string

// versionMsg is the result of a data version check.
type versionMsg struct {
	v   cpid.DataVersion
	err error
}

// tickMsg asks for a data version check.
type tickMsg struct{}

// idLenMsg is how many characters of an id are unique in the database.
type idLenMsg struct {
	n   int
	err error
}

func push(s screen) tea.Cmd { return func() tea.Msg { return pushMsg{s} } }

// Model is the browse program's Bubble Tea model.
type Model struct {
	a       *app
	opt     Options
	w, h    int
	stack   []screen
	stale   map[screen]bool // screens under the top that missed a refresh
	help    bool
	helpTop int  // the first line of the help shown
	editing bool // the filter input has the keys
	input   textinput.Model
	// commanding: the command line (:) has the keys.
	commanding bool
	cmdline    textinput.Model
	version    cpid.DataVersion
	checked    time.Time
	notice     string
}

// New returns a Model over an open store. ctx bounds every query.
func New(ctx context.Context, st cpid.ChangeReader, opt Options) *Model {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	// Every string the views show comes from the logs: made Printable here.
	a := &app{ctx: ctx, st: present.PrintableReader(st), keys: newKeys(), sty: newStyles(opt.Color), now: opt.Now}
	in := textinput.New()
	in.Prompt = "/"
	in.Placeholder = "type to filter, enter to keep, esc to clear"
	var s textinput.Styles
	s.Focused.Prompt = a.sty.key
	s.Blurred.Prompt = a.sty.key
	s.Focused.Placeholder = a.sty.dim
	s.Blurred.Placeholder = a.sty.dim
	in.SetStyles(s)
	cl := textinput.New()
	cl.Prompt = ":"
	cl.Placeholder = "changes · history TYPE/NAME · anomalies · diff ID1 ID2 · change ID · quit"
	cl.SetStyles(s)
	m := &Model{a: a, opt: opt, input: in, cmdline: cl, stale: map[screen]bool{}, w: 100, h: 30}
	m.stack = []screen{newChanges(a)}
	if opt.Change != "" {
		m.stack = append(m.stack, newChange(a, opt.Change))
	}
	return m
}

// Init loads the first screens and starts the refresh clock.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.checkVersion()}
	for _, s := range m.stack {
		cmds = append(cmds, s.load())
	}
	return tea.Batch(cmds...)
}

func (m *Model) top() screen { return m.stack[len(m.stack)-1] }

func (m *Model) checkVersion() tea.Cmd {
	return func() tea.Msg {
		v, err := m.a.st.DataVersion(m.a.ctx)
		return versionMsg{v, err}
	}
}

// idLength reads how many characters of an id are unique in the
// database: once when it opens and once per new data, never per frame
// (it reads every CPID).
func (m *Model) idLength() tea.Cmd {
	a := m.a
	return func() tea.Msg {
		n, err := cpid.IDLength(a.ctx, a.st, minIDLength)
		return idLenMsg{n, err}
	}
}

func (m *Model) tick() tea.Cmd {
	if m.opt.Refresh <= 0 {
		return nil
	}
	return tea.Tick(m.opt.Refresh, func(time.Time) tea.Msg { return tickMsg{} })
}

// Update handles a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		return m, nil
	case tickMsg:
		return m, m.checkVersion()
	case versionMsg:
		m.checked = m.a.now()
		if msg.err != nil {
			m.notice = msg.err.Error()
			return m, m.tick()
		}
		first := m.version == (cpid.DataVersion{})
		changed := msg.v != m.version
		m.version, m.a.version = msg.v, msg.v
		if first || !changed {
			if first {
				return m, tea.Batch(m.idLength(), m.tick())
			}
			return m, m.tick()
		}
		// New data: reload what is shown now, and the screens under it
		// when they come back on top.
		for _, s := range m.stack[:len(m.stack)-1] {
			m.stale[s] = true
		}
		return m, tea.Batch(m.top().load(), m.idLength(), m.tick())
	case idLenMsg:
		if msg.err != nil {
			m.notice = msg.err.Error()
			return m, nil
		}
		m.a.idLen = msg.n
		return m, nil
	case pushMsg:
		m.stack = append(m.stack, msg.s)
		return m, msg.s.load()
	case rootMsg:
		m.stack = m.stack[:1]
		if t := m.top(); m.stale[t] {
			delete(m.stale, t)
			return m, t.load()
		}
		return m, nil
	case noticeMsg:
		m.notice = string(msg)
		return m, nil
	case targeted:
		for _, s := range m.stack {
			if s == msg.target() {
				return m, s.update(msg)
			}
		}
		return m, nil
	case tea.MouseWheelMsg:
		if m.help || m.editing || m.commanding {
			return m, nil
		}
		k := tea.KeyPressMsg{Code: tea.KeyDown}
		switch msg.Mouse().Button {
		case tea.MouseWheelUp:
			k = tea.KeyPressMsg{Code: tea.KeyUp}
		case tea.MouseWheelDown:
		default:
			return m, nil
		}
		return m, m.top().update(k)
	case tea.KeyPressMsg:
		m.notice = ""
		return m, m.key(msg)
	}
	return m, nil
}

func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	k := &m.a.keys
	if m.commanding {
		switch msg.String() {
		case "enter":
			m.commanding = false
			m.cmdline.Blur()
			line := m.cmdline.Value()
			m.cmdline.SetValue("")
			return m.command(line)
		case "esc":
			m.commanding = false
			m.cmdline.Blur()
			m.cmdline.SetValue("")
			return nil
		case "tab":
			m.cmdline.SetValue(complete(m.cmdline.Value()))
			m.cmdline.CursorEnd()
			return nil
		case "ctrl+c":
			return tea.Quit
		}
		m.cmdline, _ = m.cmdline.Update(msg)
		return nil
	}
	if m.editing {
		switch msg.String() {
		case "enter":
			m.editing = false
			m.input.Blur()
			return nil
		case "esc":
			m.editing = false
			m.input.Blur()
			m.input.SetValue("")
			return m.top().setFilter("")
		case "ctrl+c":
			return tea.Quit
		}
		before := m.input.Value()
		// The input's own commands only blink its cursor; dropped.
		m.input, _ = m.input.Update(msg)
		if v := m.input.Value(); v != before {
			return m.top().setFilter(v)
		}
		return nil
	}
	if m.help {
		switch {
		case key.Matches(msg, k.Quit):
			return tea.Quit
		case key.Matches(msg, k.Help, k.Back):
			m.help = false
		case key.Matches(msg, k.Down, k.PageDown):
			m.helpTop++
		case key.Matches(msg, k.Up, k.PageUp):
			m.helpTop = max(0, m.helpTop-1)
		}
		return nil
	}
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit
	case key.Matches(msg, k.Help):
		m.help, m.helpTop = true, 0
		return nil
	case key.Matches(msg, k.Refresh):
		return tea.Batch(m.top().load(), m.checkVersion())
	case key.Matches(msg, k.Whole):
		m.a.whole = !m.a.whole
		return nil
	case key.Matches(msg, k.Command):
		m.commanding = true
		m.cmdline.SetValue("")
		m.cmdline.Focus()
		return nil
	case key.Matches(msg, k.Filter):
		m.editing = true
		m.input.SetValue(m.top().filterText())
		m.input.CursorEnd()
		m.input.Focus()
		return nil
	case key.Matches(msg, k.Back):
		if m.top().filterText() != "" {
			m.input.SetValue("")
			return m.top().setFilter("")
		}
		if len(m.stack) == 1 {
			return nil
		}
		m.stack = m.stack[:len(m.stack)-1]
		if t := m.top(); m.stale[t] {
			delete(m.stale, t)
			return t.load()
		}
		return nil
	}
	return m.top().update(msg)
}

// View renders the screen.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "cpid-tui browse"
	return v
}

// The smallest screen the views are laid out for.
const (
	minWidth  = 60
	minHeight = 15
)

// Render draws the whole screen as text: the breadcrumb, the body, the
// status line and the key hints (or the filter being typed).
func (m *Model) Render() string {
	w, h := max(m.w, 1), max(m.h, 1)
	s := &m.a.sty
	if w < minWidth || h < minHeight {
		return block(wrap(fmt.Sprintf("cpid-tui browse needs %dx%d cells, this terminal has %dx%d; q quits", minWidth, minHeight, w, h), w), w, h)
	}
	title := m.title(w)
	body := ""
	if m.help {
		body = m.helpView(w, h-3)
	} else {
		body = m.top().view(w, h-3)
	}
	left := m.top().status()
	if m.notice != "" {
		left = m.notice
	}
	status := spreadName(" "+left, m.freshness()+" ", w)
	bottom := m.hintsView(w)
	switch {
	case m.commanding:
		m.cmdline.SetWidth(w - 2)
		bottom = fit(m.cmdline.View(), w)
	case m.editing:
		m.input.SetWidth(w - 2)
		bottom = fit(m.input.View(), w)
	}
	return strings.Join([]string{s.title.Render(title), body, s.status.Render(status), bottom}, "\n")
}

// title is the breadcrumb bar: the screens from the first, the earlier
// ones elided in their middle first when they do not fit.
func (m *Model) title(w int) string {
	right := "? help "
	var crumbs []string
	for _, sc := range m.stack {
		crumbs = append(crumbs, sc.crumb())
	}
	room := w - ansi.StringWidth(right) - 1
	line := func() string { return " cpid › " + strings.Join(crumbs, " › ") }
	for i := 0; i < len(crumbs) && ansi.StringWidth(line()) > room; i++ {
		over := ansi.StringWidth(line()) - room
		crumbs[i] = elide(crumbs[i], max(7, ansi.StringWidth(crumbs[i])-over))
	}
	return spreadName(line(), right, w)
}

// freshness says how new the data is and when it was last checked.
func (m *Model) freshness() string {
	v := m.version
	if v.Events == 0 {
		return "no data"
	}
	s := "data to " + clock(v.NewestNS)
	if behind := v.Events - v.Reconstructed; behind > 0 {
		s += fmt.Sprintf(", %d events not reconstructed", behind)
	}
	if m.opt.Refresh > 0 && !m.checked.IsZero() {
		s += fmt.Sprintf(" · checked %s ago", m.a.now().Sub(m.checked).Truncate(time.Second))
	}
	return s
}

// hintsView lists the keys of the screen on top, as many as fit, then
// the ones of every screen: a hint is shown whole or not at all, in the
// words before the colon of its help.
func (m *Model) hintsView(w int) string {
	k := &m.a.keys
	every := []key.Binding{k.Filter, k.Command, k.Help, k.Quit}
	bs := m.top().hints()
	if len(m.stack) > 1 {
		bs = append([]key.Binding{k.Back}, bs...)
	}
	text := func(b key.Binding) string {
		desc, _, _ := strings.Cut(b.Help().Desc, ":")
		return b.Help().Key + " " + desc
	}
	room := w - 1
	for _, b := range every {
		room -= ansi.StringWidth(text(b)) + 2
	}
	var kept []key.Binding
	for _, b := range bs {
		if n := ansi.StringWidth(text(b)) + 2; n <= room {
			kept, room = append(kept, b), room-n
		}
	}
	line := " "
	for _, b := range append(kept, every...) {
		desc, _, _ := strings.Cut(b.Help().Desc, ":")
		line += m.a.sty.key.Render(b.Help().Key) + " " + desc + "  "
	}
	return fit(line, w)
}
