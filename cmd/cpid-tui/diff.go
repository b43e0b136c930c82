package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/cmd/cpid-tui/tui"
)

func init() {
	register(command{name: "diff", summary: "compare two changes hop by hop: where the slower one lost its time", run: runDiff})
}

const diffHelp = `Compares two changes of the same kind (two rollouts, two scale-ups) to
answer "why was this one slower": their timelines side by side, hop by
hop, then the time each writer spent on each change's critical path and
the difference, largest first. ID1 and ID2 are change ids or unique
prefixes of them (cpid-tui query changes lists them).

Writes are matched by step: the same writer, verb and subresource on an
object of the same resource in the same role. An object's role is "root"
for the object the change started on, else its place among the change's
objects of that resource in order of their first write (Pod[3]: the third
Pod the change wrote); a write's step also counts the writes of that
writer, verb and role before it (Deployment[root] (2): the writer's
second such write). So the n-th Pod created by one change meets the n-th
Pod created by the other, whatever their names. A step only one change has
shows "-" on the other side. Steps come in the order of the first change,
the second's own steps at their time in it.

Columns: STEP, AT (since the change started) and HOP (from its cause
becoming visible to the write completing; * on the critical path) in each
change, DELTA (the hop in ID2 less the one in ID1).

Then, per writer, the hops on each change's critical path added up (as
time_by_writer_ns of query changes --output json) and the difference,
largest first. Two more rows make each column add up to the change's
settled time (started to last write): "(start)", from the change's first
request received to the first write of its critical path completing (the
user's own request in the apiserver), and "(overlap)", less than zero
where a write was received before its cause had completed (hops overlap
by that much). Unlike time_by_writer_ns, the wait of a path's first write
on a cause outside the change (a controller-start change: the time the
controller was away) is not counted; a line under the table says it. The
summary line says how much longer ID2 took and which writer most of it
went to.

--output json gives {a, b (the changes), settled_a_ns, settled_b_ns,
delta_ns, steps [{step, writer, verb, resource, role, occurrence, a, b
(event_id, object, at_ns, hop_ns, has_cause, critical, explain),
delta_ns}], writers [{writer, a_ns, b_ns, delta_ns}], before_a, before_b
({writer, hop_ns} or null), summary}.

Examples:
  cpid-tui diff 341ca5b9 5ecff3ef
  cpid-tui diff 341ca5b9 5ecff3ef --output json | jq '.writers[0]'`

func runDiff(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "diff", "ID1 ID2 [flags]", diffHelp)
	var db string
	dbFlag(fs, &db)
	cluster := clusterFlag(fs, "")
	format := fs.String("output", "table", "table, json or csv (csv: the steps)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fs.Usage()
		return errUsage
	}
	db0, err := openStore(ctx, e.stderr, db, readOnly)
	if err != nil {
		return err
	}
	defer db0.close()
	st := db0.view(*cluster)
	r, err := compareChanges(ctx, st, pos[0], pos[1])
	if err != nil {
		db0.hintReconstruct(ctx, e.stderr, db, *cluster)
		return err
	}
	if k1, k2 := changeKind(r.A), changeKind(r.B); k1 != k2 {
		fmt.Fprintln(e.stderr, tui.Printable(fmt.Sprintf("cpid-tui diff: the changes are not of the same kind (%s, %s): steps match where they can", k1, k2)))
	}
	return printDiff(e.stdout, *format, r)
}

// changeKind is what a change did, for telling two kinds apart.
func changeKind(c cpid.ChangeRow) string {
	return c.Verb + " " + c.Resource + sub(c.Subresource) + " (" + string(c.Trigger) + ")"
}

// diffSide is one change's write at a step.
type diffSide struct {
	EventID  int64  `json:"event_id"`
	Object   string `json:"object"`
	AtNS     int64  `json:"at_ns"`
	HopNS    int64  `json:"hop_ns"`
	HasCause bool   `json:"has_cause"`
	Critical bool   `json:"critical"`
	Explain  string `json:"explain"`
}

// diffStep is one step of the two changes: a write of each, or of one.
type diffStep struct {
	Step       string    `json:"step"`
	Writer     string    `json:"writer"`
	Verb       string    `json:"verb"`
	Resource   string    `json:"resource"`
	Role       string    `json:"role"`
	Occurrence int       `json:"occurrence"`
	A          *diffSide `json:"a"`
	B          *diffSide `json:"b"`
	// DeltaNS is B's hop less A's, when both writes have a cause.
	DeltaNS *int64 `json:"delta_ns"`
}

// writerDelta is the time one writer spent on each critical path.
type writerDelta struct {
	Writer  string `json:"writer"`
	ANS     int64  `json:"a_ns"`
	BNS     int64  `json:"b_ns"`
	DeltaNS int64  `json:"delta_ns"`
}

// Rows of the per-writer table that are not writers: together with the
// writers' they add up to each change's settled time.
const (
	rowStart   = "(start)"
	rowOverlap = "(overlap)"
)

// special are those rows, in the order they are listed.
var special = []string{rowStart, rowOverlap}

// diffReport is the comparison of two changes.
type diffReport struct {
	A          cpid.ChangeRow `json:"a"`
	B          cpid.ChangeRow `json:"b"`
	SettledANS int64          `json:"settled_a_ns"`
	SettledBNS int64          `json:"settled_b_ns"`
	DeltaNS    int64          `json:"delta_ns"`
	Steps      []diffStep     `json:"steps"`
	Writers    []writerDelta  `json:"writers"`
	// BeforeA and BeforeB are the waits of the first write of each
	// critical path on a cause outside its change, left out of Writers.
	BeforeA *outsideWait `json:"before_a"`
	BeforeB *outsideWait `json:"before_b"`
	Summary string       `json:"summary"`
}

// outsideWait is the hop of a critical path's first write whose cause is
// outside the change: a controller-start change's first write waited for
// the controller to come back.
type outsideWait struct {
	Writer string `json:"writer"`
	HopNS  int64  `json:"hop_ns"`
}

// compareChanges reads two changes (ids or unique prefixes) and compares
// them.
func compareChanges(ctx context.Context, st cpid.ChangeReader, id1, id2 string) (diffReport, error) {
	var r diffReport
	var cs [2]cpid.ChangeRow
	var ts [2][]cpid.TimelineEntry
	for i, id := range []string{id1, id2} {
		full, err := resolveChange(ctx, st, id)
		if err != nil {
			return r, err
		}
		rows, err := st.ChangesByID(ctx, []string{full})
		if err != nil {
			return r, err
		}
		if len(rows) != 1 {
			return r, fmt.Errorf("no change %q", full)
		}
		cs[i] = rows[0]
		if ts[i], err = st.Timeline(ctx, full); err != nil {
			return r, err
		}
	}
	return compare(cs[0], cs[1], ts[0], ts[1]), nil
}

// compare aligns two timelines step by step and adds up their critical
// paths by writer.
func compare(a, b cpid.ChangeRow, ta, tb []cpid.TimelineEntry) diffReport {
	r := diffReport{A: a, B: b, SettledANS: a.SettledNS - a.StartedNS, SettledBNS: b.SettledNS - b.StartedNS}
	r.DeltaNS = r.SettledBNS - r.SettledANS
	sa, sb := steps(a, ta), steps(b, tb)
	at := map[string]int{}
	for _, s := range sa {
		at[s.key] = len(r.Steps)
		r.Steps = append(r.Steps, s.diffStep)
	}
	for _, s := range sb {
		if i, ok := at[s.key]; ok {
			r.Steps[i].B = s.A
			continue
		}
		s.B, s.A = s.A, nil
		r.Steps = append(r.Steps, s.diffStep)
	}
	for i := range r.Steps {
		if x, y := r.Steps[i].A, r.Steps[i].B; x != nil && y != nil && x.HasCause && y.HasCause {
			d := y.HopNS - x.HopNS
			r.Steps[i].DeltaNS = &d
		}
	}
	// In the first change's order; the second's own steps at their time.
	when := func(s diffStep) int64 {
		if s.A != nil {
			return s.A.AtNS
		}
		return s.B.AtNS
	}
	sort.SliceStable(r.Steps, func(i, j int) bool { return when(r.Steps[i]) < when(r.Steps[j]) })

	wa, beforeA := pathByWriter(a, ta)
	wb, beforeB := pathByWriter(b, tb)
	r.BeforeA, r.BeforeB = beforeA, beforeB
	for w := range wb {
		if _, ok := wa[w]; !ok {
			wa[w] = 0
		}
	}
	var rows []writerDelta
	for w, x := range wa {
		d := writerDelta{Writer: w, ANS: x, BNS: wb[w], DeltaNS: wb[w] - x}
		if slices.Contains(special, w) {
			rows = append(rows, d)
			continue
		}
		r.Writers = append(r.Writers, d)
	}
	sort.Slice(r.Writers, func(i, j int) bool {
		x, y := r.Writers[i], r.Writers[j]
		if abs(x.DeltaNS) != abs(y.DeltaNS) {
			return abs(x.DeltaNS) > abs(y.DeltaNS)
		}
		return x.Writer < y.Writer
	})
	sort.Slice(rows, func(i, j int) bool {
		return slices.Index(special, rows[i].Writer) < slices.Index(special, rows[j].Writer)
	})
	r.Writers = append(r.Writers, rows...)
	r.Summary = summary(r)
	return r
}

// step is a diffStep with the key that matches it across changes; its
// write is in A.
type step struct {
	diffStep
	key string
}

// steps names each write of a change by its step (see diffHelp).
func steps(c cpid.ChangeRow, ts []cpid.TimelineEntry) []step {
	type objKey struct{ group, resource, ns, name string }
	root := objKey{c.APIGroup, c.Resource, c.Namespace, c.Name}
	roles := map[objKey]string{}
	perResource := map[[2]string]int{}
	seen := map[string]int{}
	out := make([]step, 0, len(ts))
	for _, t := range ts {
		k := objKey{t.APIGroup, t.Resource, t.Namespace, t.Name}
		role, ok := roles[k]
		if !ok {
			if k == root {
				role = "root"
			} else {
				perResource[[2]string{t.APIGroup, t.Resource}]++
				role = strconv.Itoa(perResource[[2]string{t.APIGroup, t.Resource}])
			}
			roles[k] = role
		}
		verb := t.Verb + sub(t.Subresource)
		if t.Attempt {
			verb += " (failed)"
		}
		base := strings.Join([]string{t.Writer, verb, t.APIGroup, t.Resource, role}, "\x00")
		seen[base]++
		n := seen[base]
		label := fmt.Sprintf("%s %s %s[%s]", t.Writer, verb, t.Kind, role)
		if n > 1 {
			label += fmt.Sprintf(" (%d)", n)
		}
		out = append(out, step{key: base + "\x00" + strconv.Itoa(n), diffStep: diffStep{Step: label, Writer: t.Writer, Verb: verb,
			Resource: t.Resource, Role: role, Occurrence: n, A: &diffSide{EventID: t.EventID, Object: object(t.Kind, t.Namespace, t.Name),
				AtNS: t.NS - c.StartedNS, HopNS: t.HopNS, HasCause: t.CauseID != 0, Critical: t.Critical, Explain: string(t.Explain)}}})
	}
	return out
}

// pathByWriter adds up the hops of a change's critical path by writer
// (cpid.TimeByReason) within the change, with the rows that make them add
// up to its settled time (see diffHelp): rowStart and rowOverlap. The hop
// of the path's first write, when its cause is outside the change, is
// left out and returned.
func pathByWriter(c cpid.ChangeRow, ts []cpid.TimelineEntry) (map[string]int64, *outsideWait) {
	_, by := cpid.TimeByReason(ts)
	// The path from its last write back to its first (MarkCritical): not
	// in timeline order, where a write may complete before its cause.
	idx := make(map[int64]int, len(ts))
	last := -1
	for i, t := range ts {
		idx[t.EventID] = i
		if t.Critical && !t.Attempt {
			last = i
		}
	}
	if last < 0 {
		by[rowStart] = c.SettledNS - c.StartedNS
		return by, nil
	}
	first := last
	var within int64 // hops from causes on the path
	for range ts {   // a path has at most every write
		j, ok := idx[ts[first].CauseID]
		if !ok || j == first || !ts[j].Critical {
			break
		}
		within += ts[first].HopNS
		first = j
	}
	// The path ends at the last successful write, the change's settled
	// time; SettledNS - last.NS is 0 but keeps the sum exact whatever.
	by[rowStart] = ts[first].NS - c.StartedNS + (c.SettledNS - ts[last].NS)
	by[rowOverlap] = (ts[last].NS - ts[first].NS) - within
	var before *outsideWait
	if f := ts[first]; f.CauseID != 0 {
		before = &outsideWait{Writer: f.Writer, HopNS: f.HopNS}
		if by[f.Writer] -= f.HopNS; by[f.Writer] == 0 {
			delete(by, f.Writer)
		}
	}
	return by, before
}

// summary says how much longer (or shorter) B took than A, and which
// writer most of the difference went to.
func summary(r diffReport) string {
	a, b := shortID(r.A.ID), shortID(r.B.ID)
	if r.DeltaNS == 0 {
		return fmt.Sprintf("%s took as long as %s (%s)", b, a, dur(r.SettledBNS))
	}
	more := "longer"
	if r.DeltaNS < 0 {
		more = "less"
	}
	s := fmt.Sprintf("%s took %s %s than %s (%s against %s)", b, dur(abs(r.DeltaNS)), more, a, dur(r.SettledBNS), dur(r.SettledANS))
	var top *writerDelta
	for i, w := range r.Writers {
		if slices.Contains(special, w.Writer) || (w.DeltaNS > 0) != (r.DeltaNS > 0) || w.DeltaNS == 0 {
			continue
		}
		if top == nil || abs(w.DeltaNS) > abs(top.DeltaNS) {
			top = &r.Writers[i]
		}
	}
	if top != nil {
		s += fmt.Sprintf("; %s of it in %s", dur(abs(top.DeltaNS)), top.Writer)
	}
	return s
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// signed formats a duration difference: +3.2ms, -1.0ms.
func signed(ns int64) string {
	if ns < 0 {
		return "-" + dur(-ns)
	}
	return "+" + dur(ns)
}

// sdur is dur that may be negative.
func sdur(ns int64) string {
	if ns < 0 {
		return "-" + dur(-ns)
	}
	return dur(ns)
}

// printDiff writes the report in the format asked for.
func printDiff(w io.Writer, format string, r diffReport) error {
	head := []string{"STEP", "AT (1)", "HOP (1)", "AT (2)", "HOP (2)", "DELTA"}
	var rows [][]string
	for _, s := range r.Steps {
		side := func(x *diffSide) (string, string) {
			if x == nil {
				return "-", "-"
			}
			hop := "-"
			if x.HasCause {
				hop = "+" + dur(x.HopNS)
			}
			if x.Critical {
				hop += " *"
			}
			return dur(x.AtNS), hop
		}
		at1, hop1 := side(s.A)
		at2, hop2 := side(s.B)
		delta := "-"
		if s.DeltaNS != nil {
			delta = signed(*s.DeltaNS)
		}
		rows = append(rows, []string{s.Step, at1, hop1, at2, hop2, delta})
	}
	switch format {
	case "json":
		if r.Steps == nil {
			r.Steps = []diffStep{}
		}
		return output(w, format, nil, nil, r)
	case "csv":
		return output(w, format, head, rows, nil)
	case "", "table":
	default:
		return fmt.Errorf("unknown --output %q (table, json, csv)", format)
	}
	for i, c := range []cpid.ChangeRow{r.A, r.B} {
		fmt.Fprintln(w, tui.Printable(fmt.Sprintf("(%d) %s  %s %s  %s  %s, settled after %s", i+1, c.ID, c.Verb,
			object(c.Kind, c.Namespace, c.Name)+sub(c.Subresource), clock(c.StartedNS), plural(c.Writes, "write"), dur(c.SettledNS-c.StartedNS))))
	}
	fmt.Fprintln(w)
	if err := output(w, format, head, rows, nil); err != nil {
		return err
	}
	fmt.Fprintln(w)
	rows = nil
	for _, d := range r.Writers {
		rows = append(rows, []string{d.Writer, sdur(d.ANS), sdur(d.BNS), signed(d.DeltaNS)})
	}
	rows = append(rows, []string{"settled after", dur(r.SettledANS), dur(r.SettledBNS), signed(r.DeltaNS)})
	if err := output(w, format, []string{"CRITICAL PATH BY WRITER", "(1)", "(2)", "DELTA"}, rows, nil); err != nil {
		return err
	}
	for i, b := range []*outsideWait{r.BeforeA, r.BeforeB} {
		if b != nil {
			fmt.Fprintln(w, tui.Printable(fmt.Sprintf("(%d): its critical path's first write (%s) waited %s on a cause before the change, not counted above",
				i+1, b.Writer, dur(b.HopNS))))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, tui.Printable(r.Summary))
	return nil
}
