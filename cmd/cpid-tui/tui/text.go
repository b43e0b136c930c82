package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// clock formats a Unix-ns time of day, UTC, to the millisecond.
func clock(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return time.Unix(0, ns).UTC().Format("15:04:05.000")
}

// stamp formats a Unix-ns time with its date.
func stamp(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05.000 UTC")
}

// dur formats a duration in ns, short.
func dur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d == 0:
		return "0"
	case d < 0:
		return "-" + dur(-ns)
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/1e6)
	case d < time.Hour:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// object formats "Kind namespace/name".
func object(kind, ns, name string) string {
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

// withSub appends "/subresource" to a verb.
func withSub(verb, sub string) string {
	if sub == "" {
		return verb
	}
	return verb + "/" + sub
}

// short abbreviates a CPID (a UUID) to its first 8 characters.
func short(cpid string) string {
	if len(cpid) > 8 {
		return cpid[:8]
	}
	return cpid
}

// agent shortens a user agent to its program: "kubectl/v1.35.0 (linux/amd64)
// kubernetes/abc" is "kubectl".
func agent(ua string) string {
	ua, _, _ = strings.Cut(ua, " ")
	ua, _, _ = strings.Cut(ua, "/")
	return ua
}

// fit truncates s (which may hold ANSI styles) to width w with an ellipsis
// and pads it with spaces to exactly w cells.
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

// wrap breaks plain text into lines of at most w cells.
func wrap(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	return strings.Split(ansi.Hardwrap(ansi.Wordwrap(s, w, " ,"), w, true), "\n")
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

// plural says "1 write", "2 writes".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// mark is the cursor marker column of a list row.
func mark(selected bool) string {
	if selected {
		return "▶ "
	}
	return "  "
}
