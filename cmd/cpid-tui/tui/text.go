package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
)

// clock formats a Unix-ns time of day (present.Clock).
func clock(ns int64) string { return present.Clock(ns) }

// stamp formats a Unix-ns time with its date (present.Stamp).
func stamp(ns int64) string { return present.Stamp(ns) }

// dur formats a duration in ns as every view does (present.Duration).
func dur(ns int64) string { return present.Duration(ns) }

// offset formats a time since the change's time zero (present.Offset).
func offset(ns int64) string { return present.Offset(ns) }

// object formats "Kind namespace/name".
func object(kind, ns, name string) string { return cpid.ObjectName(kind, ns, name) }

// objectName is object() in at most w cells: the namespace elided first,
// then the middle of the whole; padded to w.
func objectName(kind, ns, name string, w int) string {
	full := object(kind, ns, name)
	if ansi.StringWidth(full) <= w {
		return fit(full, w)
	}
	if room := w - ansi.StringWidth(kind) - 2 - ansi.StringWidth(name); ns != "" && room >= 2 {
		return fit(kind+" "+elide(ns, room)+"/"+name, w)
	}
	return fitName(full, w)
}

// minIDLength is the fewest characters of an id (a change's, a CPID) a
// view shows.
const minIDLength = present.MinIDLength

// short abbreviates a CPID or a change's id (a UUID) to the shortest
// prefix unique in the database (app.idLen, 8 or more), as git does.
func (a *app) short(cpid string) string { return present.ShortID(cpid, a.idLen) }

// agent shortens a user agent to its program: "kubectl/v1.35.0 (linux/amd64)
// kubernetes/abc" is "kubectl".
func agent(ua string) string {
	ua, _, _ = strings.Cut(ua, " ")
	ua, _, _ = strings.Cut(ua, "/")
	return ua
}

// fit truncates s (which may hold ANSI styles) to width w with an ellipsis
// and pads it with spaces to exactly w cells. Names go through fitName.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-n)
}

// elide shortens a name (plain text) to at most w cells by cutting out its
// middle: a name's end tells objects apart (web-69d9c47cb6-89jcz), its
// start says what it is, so neither is ever cut.
func elide(s string, w int) string {
	n := ansi.StringWidth(s)
	if n <= w {
		return s
	}
	if w <= 1 {
		return ansi.Truncate(s, w, "")
	}
	head := (w - 1) / 2
	tail := w - 1 - head
	h, t := ansi.Truncate(s, head, ""), ansi.TruncateLeft(s, n-tail, "")
	// Not "web… patch": the cut against a space would read as a word cut
	// at its end.
	if strings.HasPrefix(t, " ") {
		h, t = ansi.Truncate(s, head+1, ""), t[1:]
	}
	return h + "…" + t
}

// fitName is fit for a name: elided in the middle, then padded.
func fitName(s string, w int) string { return fit(elide(s, w), w) }

// right aligns s to the right of w cells.
func right(s string, w int) string {
	n := ansi.StringWidth(s)
	if n >= w {
		return fit(s, w)
	}
	return strings.Repeat(" ", w-n) + s
}

// block makes lines exactly h lines of exactly w cells.
func block(lines []string, w, h int) string {
	out := make([]string, h)
	for i := range out {
		if i < len(lines) {
			out[i] = fit(lines[i], w)
		} else {
			out[i] = strings.Repeat(" ", w)
		}
	}
	return strings.Join(out, "\n")
}

// spread puts left and right on one line of w cells, truncating left first.
func spread(left, rightS string, w int) string {
	rw := ansi.StringWidth(rightS)
	if rw+1 >= w {
		return fit(left, w)
	}
	return fit(left, w-rw-1) + " " + rightS
}

// spreadName is spread for a plain left part: elided in its middle, so
// that the names at its end stay whole.
func spreadName(left, rightS string, w int) string {
	rw := ansi.StringWidth(rightS)
	if rw+1 >= w {
		return fitName(left, w)
	}
	return fitName(left, w-rw-1) + " " + rightS
}

// wrap breaks plain text into lines of at most w cells.
func wrap(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	return strings.Split(ansi.Hardwrap(ansi.Wordwrap(s, w, " ,"), w, true), "\n")
}

// lines lays sentences out in n lines of w cells: each wrapped at its
// words, continued one cell in, every sentence given a line before any
// gets a second. A sentence cut short ends with " …" between words, so
// that no name is cut.
func lines(w, n int, texts ...string) []string {
	wrapped := make([][]string, len(texts))
	alloc := make([]int, len(texts))
	left := n
	for i, t := range texts {
		for j, l := range wrap(strings.TrimPrefix(t, " "), w-1) {
			if j == 0 {
				wrapped[i] = append(wrapped[i], " "+l)
			} else {
				wrapped[i] = append(wrapped[i], " "+strings.TrimLeft(l, " "))
			}
		}
		if left > 0 {
			alloc[i], left = 1, left-1
		}
	}
	for i := range texts {
		extra := min(left, len(wrapped[i])-alloc[i])
		if extra > 0 {
			alloc[i], left = alloc[i]+extra, left-extra
		}
	}
	var out []string
	for i, t := range texts {
		ls := wrapped[i][:min(alloc[i], len(wrapped[i]))]
		if len(ls) == 1 && len(wrapped[i]) > 1 {
			// One line of a longer sentence: cut between words, not
			// where wrapping would break a name (web-69d9…).
			ls = []string{cutWords(" "+strings.TrimPrefix(t, " "), w)}
		} else if len(ls) < len(wrapped[i]) && len(ls) > 0 {
			// Cut short: wrapped again with room for " …".
			short := wrap(strings.TrimPrefix(t, " "), w-3)
			ls = ls[:0]
			for j, l := range short[:len(wrapped[i][:alloc[i]])] {
				if j > 0 {
					l = strings.TrimLeft(l, " ")
				}
				ls = append(ls, " "+l)
			}
			ls[len(ls)-1] = cutWords(ls[len(ls)-1], w)
		}
		out = append(out, ls...)
	}
	return out
}

// whole lays a sentence out in full, in as many lines of w cells as it
// wraps to.
func whole(w int, text string) []string {
	return lines(w, len(wrap(strings.TrimPrefix(text, " "), w-1)), text)
}

// details lays out the sentences under a list in n lines, as lines does;
// when the app shows text whole (w), every sentence in full, in at most
// most lines.
func (a *app) details(w, n, most int, texts ...string) []string {
	if !a.whole {
		return lines(w, n, texts...)
	}
	all := 0
	for _, t := range texts {
		all += len(wrap(strings.TrimPrefix(t, " "), w-1))
	}
	return lines(w, max(n, min(all, most)), texts...)
}

// cutWords ends a line that goes on: its last words dropped until " …"
// fits in w cells.
func cutWords(l string, w int) string {
	l = strings.TrimRight(l, " ")
	for ansi.StringWidth(l)+2 > w {
		i := strings.LastIndex(strings.TrimRight(l, " "), " ")
		if i <= 0 {
			return ansi.Truncate(l, w-2, "") + " …"
		}
		l = l[:i]
	}
	return l + " …"
}

// window returns the first visible index of a list of n rows shown in h
// rows so that cursor stays visible, moving as little as possible from top.
func window(top, cursor, n, h int) int {
	if h <= 0 {
		return 0
	}
	if cursor < top {
		top = cursor
	}
	if cursor >= top+h {
		top = cursor - h + 1
	}
	top = min(top, max(0, n-h))
	return max(0, top)
}

// clamp keeps i within [0, n).
func clamp(i, n int) int {
	return max(0, min(i, n-1))
}

// plural says "1 write", "2 writes" (Plural).
func plural(n int, noun string) string { return present.Plural(n, noun) }

// count says "1 anomaly", "2 anomalies": plural for nouns without an s.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// writes counts writes as every view does: the successful ones, and the
// failed ones beside them: "45 writes, 3 failed".
func writes(ok, failed int) string {
	if failed == 0 {
		return plural(ok, "write")
	}
	return fmt.Sprintf("%s, %d failed", plural(ok, "write"), failed)
}

// mark is the cursor marker column of a list row.
func mark(selected bool) string {
	if selected {
		return "▶ "
	}
	return "  "
}
