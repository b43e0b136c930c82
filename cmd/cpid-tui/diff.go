package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
	"github.com/cpid-dev/cpid/reconstruct"
)

func init() {
	register(command{name: "diff", use: "ID1 ID2 [flags]", group: "read", summary: "compare two changes hop by hop: where the slower one lost its time",
		help: diffHelp, formats: dataFormats, setup: setupDiff})
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

func setupDiff(c *cobra.Command, e *env) runFunc {
	c.ValidArgsFunction = argChanges(e, 2)
	return func(ctx context.Context, pos []string) error {
		if len(pos) != 2 {
			return usagef("give two change ids")
		}
		db, err := e.openReader(ctx)
		if err != nil {
			return err
		}
		defer db.close()
		r, err := compareChanges(ctx, db.view(e.cluster), pos[0], pos[1])
		if err != nil {
			db.hintReconstruct(ctx, e, e.db, e.cluster)
			return err
		}
		if k1, k2 := changeKind(r.A), changeKind(r.B); k1 != k2 {
			fmt.Fprintln(e.stderr, present.Printable(fmt.Sprintf("cpid-tui diff: the changes are not of the same kind (%s, %s): steps match where they can", k1, k2)))
		}
		return printDiff(e.stdout, e.format(c), e.layout(), r)
	}
}

// changeKind is what a change did, for telling two kinds apart.
func changeKind(c cpid.ChangeRow) string {
	return c.Verb + " " + c.Resource + sub(c.Subresource) + " (" + string(c.Trigger) + ")"
}

// The comparison itself is reconstruct.Compare, which the TUI shows too.
type (
	diffReport  = reconstruct.Comparison
	diffStep    = reconstruct.Step
	outsideWait = reconstruct.OutsideWait
)

// special are the rows of the per-writer table that are not writers.
var special = reconstruct.NotWriters

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
	r = reconstruct.Compare(cs[0], cs[1], ts[0], ts[1])
	n, err := cpid.IDLength(ctx, st, minIDLength, cs[0].ID, cs[1].ID)
	if err != nil {
		return r, err
	}
	r.Summary = present.CompareSummary(r, n)
	return r, nil
}

// printDiff writes the report in the format asked for.
func printDiff(w io.Writer, format string, lay layout, r diffReport) error {
	head := []string{"STEP", "AT (1)", "HOP (1)", "AT (2)", "HOP (2)", "DELTA"}
	var rows [][]string
	for _, s := range r.Steps {
		at1, hop1 := present.StepSide(s.A, dur)
		at2, hop2 := present.StepSide(s.B, dur)
		delta := "-"
		if s.DeltaNS != nil {
			delta = present.Signed(*s.DeltaNS)
		}
		rows = append(rows, []string{s.Step, at1, hop1, at2, hop2, delta})
	}
	if r.Steps == nil {
		r.Steps = []diffStep{}
	}
	steps := listing{head: head, rows: rows, data: r, csv: r.Steps}
	if format != "table" && format != "wide" {
		return steps.write(w, format, lay)
	}
	for i, c := range []cpid.ChangeRow{r.A, r.B} {
		fmt.Fprintln(w, present.Printable(fmt.Sprintf("(%d) %s  %s %s  %s  %s, settled after %s", i+1, c.ID, c.Verb,
			object(c.Kind, c.Namespace, c.Name)+sub(c.Subresource), clock(c.StartedNS), present.Plural(c.Writes, "write"), dur(c.SettledNS-c.StartedNS))))
	}
	fmt.Fprintln(w)
	if err := steps.write(w, format, lay); err != nil {
		return err
	}
	fmt.Fprintln(w)
	rows = nil
	for _, d := range r.Writers {
		rows = append(rows, []string{d.Writer, dur(d.ANS), dur(d.BNS), present.Signed(d.DeltaNS)})
	}
	rows = append(rows, []string{"settled after", dur(r.SettledANS), dur(r.SettledBNS), present.Signed(r.DeltaNS)})
	byWriter := listing{head: []string{"CRITICAL PATH BY WRITER", "(1)", "(2)", "DELTA"}, rows: rows}
	if err := byWriter.write(w, format, lay); err != nil {
		return err
	}
	for i, b := range []*outsideWait{r.BeforeA, r.BeforeB} {
		if b != nil {
			fmt.Fprintln(w, present.Printable(fmt.Sprintf("(%d): its critical path's first write (%s) waited %s on a cause before the change, not counted above",
				i+1, b.Writer, dur(b.HopNS))))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, present.Printable(r.Summary))
	return nil
}
