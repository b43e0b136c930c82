package present

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Line is one line of a line diff: Op ' ' kept, '-' removed, '+' added
// (0: a gap between Hunks).
type Line struct {
	Op   byte
	Text string
}

// ObjectLines renders a stored object as indented JSON lines with sorted
// keys, without metadata.managedFields unless managed is set: the field
// server-side apply bookkeeping fills, which buries every real change.
func ObjectLines(body string, managed bool) []string {
	if managed {
		return jsonLines(body)
	}
	return jsonLines(body, "managedFields")
}

// jsonLines renders a JSON body as indented lines with sorted keys,
// without the metadata fields named by drop.
func jsonLines(body string, drop ...string) []string {
	if body == "" {
		return nil
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return strings.Split(body, "\n")
	}
	if obj, ok := v.(map[string]any); ok {
		if md, ok := obj["metadata"].(map[string]any); ok {
			for _, k := range drop {
				delete(md, k)
			}
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return strings.Split(body, "\n")
	}
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
}

// maxDiffCells bounds the longest-common-subsequence table; beyond it the
// differing middle is shown as removed then added.
const maxDiffCells = 4 << 20

// DiffLines computes a line diff of a to b: common prefix and suffix, and a
// longest common subsequence of what lies between.
func DiffLines(a, b []string) []Line {
	var out []Line
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		out = append(out, Line{' ', a[p]})
		p++
	}
	sfx := 0
	for sfx < len(a)-p && sfx < len(b)-p && a[len(a)-1-sfx] == b[len(b)-1-sfx] {
		sfx++
	}
	ma, mb := a[p:len(a)-sfx], b[p:len(b)-sfx]
	if len(ma)*len(mb) > maxDiffCells {
		for _, l := range ma {
			out = append(out, Line{'-', l})
		}
		for _, l := range mb {
			out = append(out, Line{'+', l})
		}
	} else {
		// lcs[i][j] is the LCS length of ma[i:] and mb[j:].
		n, m := len(ma), len(mb)
		lcs := make([]int32, (n+1)*(m+1))
		at := func(i, j int) int32 { return lcs[i*(m+1)+j] }
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i*(m+1)+j] = at(i+1, j+1) + 1
				} else {
					lcs[i*(m+1)+j] = max(at(i+1, j), at(i, j+1))
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && ma[i] == mb[j]:
				out = append(out, Line{' ', ma[i]})
				i++
				j++
			case i < n && (j == m || at(i+1, j) >= at(i, j+1)):
				out = append(out, Line{'-', ma[i]})
				i++
			default:
				out = append(out, Line{'+', mb[j]})
				j++
			}
		}
	}
	for _, l := range a[len(a)-sfx:] {
		out = append(out, Line{' ', l})
	}
	return out
}

// Hunks keeps the changed lines of a diff with context lines around them;
// a gap is one op with op 0.
func Hunks(d []Line, context int) []Line {
	keep := make([]bool, len(d))
	for i, o := range d {
		if o.Op == ' ' {
			continue
		}
		for j := max(0, i-context); j <= min(len(d)-1, i+context); j++ {
			keep[j] = true
		}
	}
	var out []Line
	for i, o := range d {
		if keep[i] {
			out = append(out, o)
		} else if len(out) == 0 || out[len(out)-1].Op != 0 {
			out = append(out, Line{Op: 0})
		}
	}
	return out
}

// ObjectDiff is what one revision of an object changed, as a unified-style
// diff of the stored objects prev and cur (JSON; prev "" for the first):
// lines "- " removed, "+ " added, "  " kept around them (context lines),
// "@@" where unchanged lines are left out. The revisions view's
// rendering, without the fields every write changes (metadata.managedFields
// and metadata.resourceVersion); nil when nothing else changed.
func ObjectDiff(prev, cur string, context int) []string {
	noise := []string{"managedFields", "resourceVersion"}
	ops := Hunks(DiffLines(jsonLines(prev, noise...), jsonLines(cur, noise...)), context)
	var out []string
	for i, o := range ops {
		switch o.Op {
		case 0:
			if i > 0 && i < len(ops)-1 {
				out = append(out, "@@")
			}
		case '+', '-':
			out = append(out, string(o.Op)+" "+o.Text)
		default:
			out = append(out, "  "+o.Text)
		}
	}
	return out
}

// JSONLines renders a JSON body (a request, a patch) as indented lines
// with sorted keys, as the revisions view shows it.
func JSONLines(body string) []string { return jsonLines(body, "managedFields") }
