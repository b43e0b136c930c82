package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
)

// revisionLimit bounds the revisions read for one object: the latest ones.
const revisionLimit = 500

// revisionsView lists an object's successive writes and shows the diff
// between two of them: the base (b) and the one under the cursor.
type revisionsView struct {
	c         *changeScreen
	requested bool
	loaded    bool
	seq       int
	err       error
	ref       cpid.ObjectKey
	kind      string
	revs      []cpid.Revision
	more      bool
	shown     []int // indexes into revs that the filter keeps
	filter    string
	cursor    int // index into shown
	top       int
	base      int   // index into revs; -1: the previous stored object
	focus     int64 // event to put the cursor on once loaded
	managed   bool
	diffTop   int
}

type revisionsLoaded struct {
	to   *changeScreen
	seq  int
	ref  cpid.ObjectKey
	revs []cpid.Revision
	more bool
	err  error
}

func (m revisionsLoaded) target() screen { return m.to }

// open shows the revisions of an object, the cursor on event eventID (or
// on the change's last write of it when 0).
func (r *revisionsView) open(ref cpid.ObjectKey, kind string, eventID int64) tea.Cmd {
	if ref != r.ref {
		r.loaded, r.revs, r.shown = false, nil, nil
	}
	r.ref, r.kind, r.focus, r.base, r.diffTop = ref, kind, eventID, -1, 0
	if r.loaded {
		r.place()
	}
	return r.load()
}

func (r *revisionsView) load() tea.Cmd {
	r.requested = true
	r.seq++
	seq, st, ctx, ref, c := r.seq, r.c.a.st, r.c.a.ctx, r.ref, r.c
	return func() tea.Msg {
		revs, more, err := st.ObjectRevisions(ctx, ref, revisionLimit)
		return revisionsLoaded{to: c, seq: seq, ref: ref, revs: revs, more: more, err: err}
	}
}

// place puts the cursor on the focused event, else on the change's last
// write of the object, else on the last revision.
func (r *revisionsView) place() {
	at := -1
	for i, j := range r.shown {
		rv := r.revs[j]
		if r.focus != 0 && rv.EventID == r.focus {
			at = i
			break
		}
		if r.focus == 0 && rv.ChangeID == r.c.id {
			at = i
		}
	}
	if at < 0 {
		at = len(r.shown) - 1
	}
	r.cursor = clamp(at, len(r.shown))
}

func (r *revisionsView) apply() {
	r.shown = r.shown[:0:0]
	f := strings.ToLower(r.filter)
	for i, rv := range r.revs {
		hay := strings.ToLower(strings.Join([]string{rv.Writer, present.Verb(rv.Verb, rv.Subresource), fmt.Sprint(rv.Code), rv.ResourceVersion,
			rv.ChangeID, rv.CPID}, " "))
		if f == "" || strings.Contains(hay, f) {
			r.shown = append(r.shown, i)
		}
	}
	r.cursor = clamp(r.cursor, len(r.shown))
}

func (r *revisionsView) current() (int, bool) {
	if r.cursor < 0 || r.cursor >= len(r.shown) {
		return 0, false
	}
	return r.shown[r.cursor], true
}

// baseOf is the revision the cursor's one is compared with: the chosen
// base, or the closest earlier write that stored the object.
func (r *revisionsView) baseOf(cur int) int {
	if r.base >= 0 && r.base != cur {
		return r.base
	}
	for i := cur - 1; i >= 0; i-- {
		if r.revs[i].Object != "" {
			return i
		}
	}
	return -1
}

func (r *revisionsView) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case revisionsLoaded:
		if msg.seq != r.seq || msg.ref != r.ref {
			return nil
		}
		keep := int64(0)
		if i, ok := r.current(); ok && r.loaded {
			keep = r.revs[i].EventID
		}
		r.loaded, r.err, r.revs, r.more = true, msg.err, msg.revs, msg.more
		r.apply()
		if keep != 0 {
			r.focus = keep
		}
		r.place()
	case tea.KeyPressMsg:
		k := &r.c.a.keys
		n := len(r.shown)
		prev := r.cursor
		switch {
		case key.Matches(msg, k.Up):
			r.cursor = clamp(r.cursor-1, n)
		case key.Matches(msg, k.Down):
			r.cursor = clamp(r.cursor+1, n)
		case key.Matches(msg, k.Top):
			r.cursor = 0
		case key.Matches(msg, k.Bottom):
			r.cursor = clamp(n-1, n)
		case key.Matches(msg, k.Base):
			if i, ok := r.current(); ok {
				if r.base == i {
					r.base = -1
				} else {
					r.base = i
				}
				r.diffTop = 0
			}
		case key.Matches(msg, k.Managed):
			r.managed = !r.managed
			r.diffTop = 0
		case key.Matches(msg, k.DiffDown, k.PageDown):
			r.diffTop += 10
		case key.Matches(msg, k.DiffUp, k.PageUp):
			r.diffTop = max(0, r.diffTop-10)
		}
		if r.cursor != prev {
			r.diffTop = 0
		}
	}
	return nil
}

func (r *revisionsView) view(w, h int) string {
	s := &r.c.a.sty
	if !r.loaded {
		return block([]string{"", " loading revisions of " + object(r.kind, r.ref.Namespace, r.ref.Name) + "…"}, w, h)
	}
	if r.err != nil {
		return block([]string{"", " " + s.warn.Render("error: "+r.err.Error())}, w, h)
	}
	order := ""
	if len(r.revs) > 0 {
		order = ", ordered by " + r.revs[0].OrderBy
	}
	more := ""
	if r.more {
		more = fmt.Sprintf(" (the last %d)", len(r.revs))
	}
	mf := "managedFields hidden (m shows)"
	if r.managed {
		mf = "managedFields shown (m hides)"
	}
	good, failed := 0, 0
	for _, rv := range r.revs {
		if rv.Attempt {
			failed++
		} else {
			good++
		}
	}
	lines := []string{s.dim.Render(lines1(fmt.Sprintf(" %s: %s%s%s · b marks the diff base · %s",
		object(r.kind, r.ref.Namespace, r.ref.Name), writes(good, failed), more, order, mf), w))}
	// The verb (update/status 409) whole first, the writer's name in what
	// is left, elided in its middle.
	verbW := 17
	writerW := max(10, min(26, w-4-5-8-13-verbW-2-5-12))
	lines = append(lines, s.header.Render(fit("    "+fit("SEQ", 5)+fit("RV", 8)+fit("TIME", 13)+fit("WRITER", writerW+1)+
		fit("VERB", verbW+1)+"BODY CHANGE", w)))
	listH := max(2, min(len(r.shown), (h-2)/3))
	r.top = window(r.top, r.cursor, len(r.shown), listH)
	cur, ok := r.current()
	base := -1
	if ok {
		base = r.baseOf(cur)
	}
	for i := r.top; i < min(len(r.shown), r.top+listH); i++ {
		j := r.shown[i]
		rv := r.revs[j]
		b := " "
		if j == base {
			b = "B"
		}
		verb := present.Verb(rv.Verb, rv.Subresource)
		if rv.Attempt {
			verb += fmt.Sprintf(" %d", rv.Code)
		}
		ch := ""
		switch {
		case rv.ChangeID == r.c.id:
			ch = "this"
		case rv.ChangeID != "":
			ch = r.c.a.short(rv.ChangeID)
		}
		body := "yes "
		switch {
		case rv.Attempt:
			body = "✕   "
		case rv.Object == "":
			body = "-   "
		}
		flag := " "
		if len(r.c.tl.anoms[rv.EventID]) > 0 {
			flag = "!"
		}
		line := mark(i == r.cursor) + b + flag + fit(fmt.Sprintf("#%d", rv.Seq), 5) + fit(rv.ResourceVersion, 8) + fit(clock(rv.StageNS), 13) +
			fitName(rv.Writer, writerW) + " " + fit(verb, verbW) + " " + body + " " + ch
		switch {
		case i == r.cursor:
			line = s.cursor.Render(fit(line, w))
		case rv.Attempt:
			line = s.failed.Render(line)
		}
		lines = append(lines, line)
	}
	if len(r.shown) == 0 {
		lines = append(lines, "  no revisions")
	}
	lines = append(lines, s.dim.Render(strings.Repeat("─", w)))
	if ok {
		lines = append(lines, r.diffView(cur, base, w, h-len(lines))...)
	}
	return block(lines, w, h)
}

// diffView renders the diff from revision base to cur in h lines.
func (r *revisionsView) diffView(cur, base, w, h int) []string {
	s := &r.c.a.sty
	rv := r.revs[cur]
	label := func(x cpid.Revision) string {
		return present.Revision(x.Seq, x.ResourceVersion, x.Writer, x.Verb, x.Subresource)
	}
	var head string
	var ops []present.Line
	change := present.Changed(present.Written{Attempt: rv.Attempt, Verb: rv.Verb, Level: rv.Level, Object: rv.Object, Request: rv.Request}, base >= 0)
	if change == present.ChangeFailed {
		// A failed write changed nothing: the view shows what it tried.
		change = present.ChangeNoObject
		if rv.Request != "" {
			change = present.ChangeRequest
		}
	}
	switch change {
	case present.ChangeRequest:
		head = fmt.Sprintf(" %s stored no object in the audit log; its request body:", label(rv))
		for _, l := range present.ObjectLines(rv.Request, r.managed) {
			ops = append(ops, present.Line{Op: ' ', Text: l})
		}
	case present.ChangeDeleted, present.ChangeMetadata, present.ChangeNoObject:
		head = fmt.Sprintf(" %s has no body in the audit log (Metadata level, or a binding, Scale or Status response)", label(rv))
	case present.ChangeFirst:
		head = fmt.Sprintf(" %s: the first stored object, whole", label(rv))
		for _, l := range present.ObjectLines(rv.Object, r.managed) {
			ops = append(ops, present.Line{Op: '+', Text: l})
		}
	default:
		head = fmt.Sprintf(" diff %s → %s", label(r.revs[base]), label(rv))
		ops = present.Hunks(present.DiffLines(present.ObjectLines(r.revs[base].Object, r.managed), present.ObjectLines(rv.Object, r.managed)), 3)
		if len(ops) <= 1 && (len(ops) == 0 || ops[0].Op == 0) {
			ops = []present.Line{{Op: ' ', Text: "(no difference)"}}
		}
	}
	out := []string{s.header.Render(lines1(head, w))}
	r.diffTop = max(0, min(r.diffTop, len(ops)-(h-1)))
	for _, o := range ops[min(r.diffTop, len(ops)):] {
		if len(out) >= h {
			break
		}
		switch o.Op {
		case 0:
			out = append(out, s.dim.Render(" ⋯"))
		case '+':
			out = append(out, s.added.Render(fit("+ "+o.Text, w)))
		case '-':
			out = append(out, s.removed.Render(fit("- "+o.Text, w)))
		default:
			out = append(out, "  "+o.Text)
		}
	}
	return out
}

func (r *revisionsView) status() string {
	i, ok := r.current()
	if !ok {
		return "revisions of " + object(r.kind, r.ref.Namespace, r.ref.Name)
	}
	rv := r.revs[i]
	return fmt.Sprintf("revision %d/%d  #%d rv %s  %s %s", r.cursor+1, len(r.shown), rv.Seq, rv.ResourceVersion, rv.Writer,
		present.Verb(rv.Verb, rv.Subresource))
}

func (r *revisionsView) help() []key.Binding {
	k := &r.c.a.keys
	return []key.Binding{k.Up, k.Down, k.Base, k.Managed, k.DiffDown, k.DiffUp}
}

func (r *revisionsView) hints() []key.Binding {
	k := &r.c.a.keys
	return []key.Binding{k.Base, k.Managed, k.DiffDown}
}

func (r *revisionsView) filterText() string { return r.filter }

func (r *revisionsView) setFilter(f string) tea.Cmd {
	r.filter = f
	r.apply()
	return nil
}
