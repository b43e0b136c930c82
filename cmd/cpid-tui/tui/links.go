package tui

import (
	"encoding/json"
	"strings"

	"github.com/cpid-dev/cpid"
)

// link finds the write each log line explains: a write of the change by
// the line's process that the line names (its object's name, as a field
// value or namespace/name), the closest in time among those within
// cpid.LogWindowLag of it (a controller logs what it does just before or
// after the write). A line that carries a CPID explains a write of that
// CPID when there is one. Lines that name no write are left out.
func link(ls []cpid.LogLine, ents []cpid.TimelineEntry) map[int64]int64 {
	out := map[int64]int64{}
	// The writers whose process wrote each file: by cpid.WriterPatterns,
	// as the engines choose a change's lines.
	writers := map[string]bool{}
	for _, e := range ents {
		writers[e.Writer] = true
	}
	patterns := map[string][]string{}
	for w := range writers {
		patterns[w] = cpid.WriterPatterns(w)
	}
	type proc struct{ file, comp, writer string }
	owned := map[proc]bool{}
	owns := func(ln cpid.LogLine, writer string) bool {
		k := proc{ln.File, ln.Component, writer}
		o, ok := owned[k]
		if !ok {
			path, comp := strings.ToLower(ln.File), strings.ToLower(ln.Component)
			for _, p := range patterns[writer] {
				o = o || like(path, p) || like(comp, p)
			}
			owned[k] = o
		}
		return o
	}
	for _, ln := range ls {
		text := ln.Msg + " " + ln.Fields
		known := false // the line's process is one of the writers'
		for w := range writers {
			known = known || owns(ln, w)
		}
		// A controller's source file names it (replicaset/replica_set.go:
		// replicaset-controller): then only its writes.
		only := ""
		for w := range writers {
			if stem := letters(strings.TrimSuffix(w, "-controller")); strings.HasSuffix(w, "-controller") && stem != "" &&
				strings.HasPrefix(letters(ln.Component), stem) {
				only = w
			}
		}
		best, bestExact := -1, false
		var bestGap int64
		for i, e := range ents {
			if ln.TimeNS < e.ReceivedNS-cpid.LogWindowLag || ln.TimeNS > e.NS+cpid.LogWindowLag {
				continue
			}
			if known && !owns(ln, e.Writer) || only != "" && e.Writer != only || !mentions(text, e.Namespace, e.Name) {
				continue
			}
			exact := ln.CPID != "" && ln.CPID == e.CPID
			gap := max(ln.TimeNS-e.NS, e.NS-ln.TimeNS)
			if best < 0 || exact && !bestExact || exact == bestExact && gap < bestGap {
				best, bestExact, bestGap = i, exact, gap
			}
		}
		if best >= 0 {
			out[ln.ID] = ents[best].EventID
		}
	}
	return out
}

// mentions reports whether a log line's text names an object: its name as a
// whole JSON string ("name":"web"), or namespace/name anywhere.
func mentions(text, ns, name string) bool {
	if name == "" {
		return false
	}
	if ns != "" && strings.Contains(text, ns+"/"+name) {
		return true
	}
	q, _ := json.Marshal(name)
	return strings.Contains(text, string(q))
}

// letters keeps the lower-case letters of s: replicaset-controller and
// replicaset/replica_set.go both start with "replicaset".
func letters(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// like matches s against a SQL LIKE pattern: % any run, _ any character.
func like(s, p string) bool {
	if p == "" {
		return s == ""
	}
	switch p[0] {
	case '%':
		for i := 0; i <= len(s); i++ {
			if like(s[i:], p[1:]) {
				return true
			}
		}
		return false
	case '_':
		return s != "" && like(s[1:], p[1:])
	}
	return s != "" && s[0] == p[0] && like(s[1:], p[1:])
}
