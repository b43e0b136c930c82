package report

import (
	"fmt"
	"strings"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
)

// dur formats a duration in ns as the report says it (present.Precise).
func dur(ns int64) string { return present.Precise(ns) }

// stamp formats a Unix-ns time with its date and zone (present.Stamp).
func stamp(ns int64) string { return present.Stamp(ns) }

// explain names why a hop waited; an empty one is unexplained.
func explain(e cpid.Explain) string {
	if e == "" {
		return string(cpid.ExplainUnexplained)
	}
	return string(e)
}

// short abbreviates a CPID or change id (a UUID) to its first 8
// characters (present.ShortID).
func short(id string) string { return present.ShortID(id, present.MinIDLength) }

// mdEscaper escapes what Markdown would read as markup in a line of text
// or a table cell (CommonMark's backslash escapes of ASCII punctuation).
var mdEscaper = strings.NewReplacer(`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`, `<`, `\<`, `>`, `\>`,
	`|`, `\|`, `#`, `\#`, `&`, `\&`, `!`, `\!`, `~`, `\~`)

// md is s as Markdown text that shows s.
func md(s string) string { return mdEscaper.Replace(s) }

// fence returns a code fence longer than any run of backticks in lines.
func fence(lines []string) string {
	return strings.Repeat("`", max(3, longestTicks(lines)+1))
}

// longestTicks is the longest run of backticks in lines.
func longestTicks(lines []string) int {
	longest := 0
	for _, l := range lines {
		run := 0
		for _, c := range l {
			if c == '`' {
				run++
				longest = max(longest, run)
			} else {
				run = 0
			}
		}
	}
	return longest
}

// code is s as a Markdown code span, delimited by more backticks than
// any run in s.
func code(s string) string {
	n := longestTicks([]string{s})
	if n == 0 {
		return "`" + s + "`"
	}
	f := strings.Repeat("`", n+1)
	return f + " " + s + " " + f
}

// text is a string as it is: html/template escapes what it writes.
func text(s string) string { return s }

// changeLine is a linked change in one line: what it did, when, its
// trigger, its writes and its id; esc escapes the text, id writes the id.
func changeLine(c cpid.ChangeRow, esc, id func(string) string) string {
	return fmt.Sprintf("%s %s at %s (%s, %s, %s)", esc(present.Verb(c.Verb, c.Subresource)), esc(object(c.Kind, c.Namespace, c.Name)),
		stamp(c.StartedNS), esc(string(c.Trigger)), present.Plural(c.Writes, "write"), id(c.ID))
}

// anomalyObject names the object of an anomaly.
func anomalyObject(a cpid.AnomalyRow) string {
	return object(cpid.KindOf("", a.Resource), a.Namespace, a.Name)
}

// logLine is a controller log line: its time of day, its offset from the
// report's time zero, its level, component and message.
func (r *Report) logLine(l cpid.LogLine) string {
	return fmt.Sprintf("%s +%-9s %-5s %s  %s", present.Clock(l.TimeNS), dur(l.TimeNS-r.OriginNS), l.Level, l.Component, l.Msg)
}

// glyph marks a write in the tables: ✕ failed, ◆ on the critical path, ●
// any other.
func (w Write) glyph() string {
	switch {
	case w.Attempt:
		return "✕"
	case w.Critical:
		return "◆"
	}
	return "●"
}

// hop is the wait before a write and why, "–" and "" for a write without
// a cause.
func (w Write) hop() (hop, why string) {
	if w.CauseID == 0 {
		return "–", ""
	}
	return "+" + dur(w.HopNS), explain(w.Explain)
}
