package report

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
)

// Markdown writes the report as Markdown (CommonMark with GitHub's
// tables). chart is the relative path of the timeline's SVG written beside
// it (SVG): Markdown viewers show an image file, not inline SVG. With
// chart "" the report says how to get one.
func (r *Report) Markdown(out io.Writer, chart string) error {
	w := bufio.NewWriter(out)
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	c := r.Change

	p("# Post-mortem: %s\n\n", md(r.Title()))
	p("Change %s", code(c.ID))
	if c.Cluster != "" {
		p(" · cluster %s", md(c.Cluster))
	}
	p(" · %s change · started %s\n\n", md(string(c.Trigger)), stamp(c.StartedNS))

	p("| | |\n|---|---|\n")
	row := func(k, v string) { p("| %s | %s |\n", k, v) }
	trigger := md(string(c.Trigger))
	if c.TriggerDetail != "" {
		trigger += ": " + md(c.TriggerDetail)
	}
	row("Trigger", trigger)
	by := md(c.User)
	if a := r.agent(); a != "" {
		by += " (" + md(a) + ")"
	}
	row(r.StartedBy(), by)
	row("Settled after", dur(c.SettledNS-c.StartedNS))
	writes := strconv.Itoa(len(r.Writes))
	if f := r.Failed(); f > 0 {
		writes += fmt.Sprintf(" (%d failed)", f)
	}
	row("Writes", writes)
	row("Objects", strconv.Itoa(c.Objects))
	row("Writers", strconv.Itoa(len(r.Lanes)))
	waits := fmt.Sprintf("%s, %s of waits", present.Plural(len(r.Critical), "write"), dur(r.CriticalNS))
	if s := r.PathShort(); s != "" {
		waits += ", " + s
	}
	row("Critical path", waits)
	row("Slowest hop", dur(c.SlowestHopNS))
	row("CPIDs", fmt.Sprintf("%d (%s)", len(r.Graph.Nodes), r.mergeText()))
	p("\n")
	if len(r.MergedFrom) > 0 {
		p("Merged from other changes (this change's merges took their CPIDs):\n\n")
		for _, l := range r.MergedFrom {
			p("- %s\n", mdChange(l))
		}
		p("\n")
	}
	if len(r.Feeds) > 0 {
		p("Carried on by other changes (their writes carry CPIDs descending from this change's):\n\n")
		for _, l := range r.Feeds {
			p("- %s\n", mdChange(l))
		}
		p("\n")
	}

	p("## Timeline\n\n")
	p("One lane per writer, time from the first request received (%s). Each write is a mark where it completed, "+
		"after a bar from when its cause became visible (the hop); the critical path is drawn in red.", stamp(r.OriginNS))
	if s := r.ChartNote(); s != "" {
		p(" %s", md(s))
	}
	p("\n\n")
	if chart != "" {
		p("![Timeline of the change: one lane per writer, the critical path in red](%s)\n\n", (&url.URL{Path: chart}).EscapedPath())
	} else {
		p("(The chart is written beside the report as an SVG file when `-o` names a file.)\n\n")
	}
	p("The critical path, the chain of causes back from the last write:\n\n")
	p("| After | Writer | Verb | Object | Hop | Why |\n|---:|---|---|---|---:|---|\n")
	for _, t := range r.Critical {
		hop, why := t.hop()
		p("| +%s | %s | %s | %s | %s | %s |\n", dur(t.OffsetNS), md(t.Writer), md(t.Verb), md(t.Object), hop, md(why))
	}
	p("\n")

	p("## Where the time went\n\n")
	if len(r.ByReason) == 0 {
		p("No waits on the critical path: the change is its first write.\n\n")
	} else {
		p("The waits on the critical path (%s in all), by why they waited and by who waited.\n\n", dur(r.CriticalNS))
		if s := r.PathNote(); s != "" {
			p("%s\n\n", md(s))
		}
		for _, part := range []struct {
			head   string
			shares []Share
		}{{"Reason", r.ByReason}, {"Controller", r.ByWriter}} {
			p("| %s | Time | Share |\n|---|---:|---:|\n", part.head)
			for _, s := range part.shares {
				p("| %s | %s | %d%% |\n", md(s.Name), dur(s.NS), s.Percent)
			}
			p("\n")
		}
	}

	p("## SLIs\n\n")
	if len(r.SLIs) == 0 {
		p("No SLI: the change created no Pod and no hop completed.\n\n")
	} else {
		p("Nearest-rank percentiles in apiserver time, as `cpid-tui query sli --change` gives them.\n\n")
		p("| Scope | Name | N | p50 | p90 | p99 | max |\n|---|---|---:|---:|---:|---:|---:|\n")
		for _, s := range r.SLIs {
			p("| %s | %s | %d | %s | %s | %s | %s |\n", s.Scope, md(s.Name), s.N, dur(s.P50NS), dur(s.P90NS), dur(s.P99NS), dur(s.MaxNS))
		}
		p("\n")
	}

	p("## Anomalies and data warnings\n\n")
	if len(r.Anomalies) == 0 {
		p("Reconstruct flagged no anomaly on this change's writes.\n\n")
	}
	for _, a := range r.Anomalies {
		p("- **%s** on %s at +%s: %s\n", md(a.Kind), md(anomalyObject(a)), dur(a.NS-r.OriginNS), md(a.Detail))
	}
	if len(r.Anomalies) > 0 {
		p("\n")
	}
	if len(r.Warnings) == 0 {
		p("No data warning: every cause was found exactly, every wait explained.\n\n")
	}
	for _, s := range r.Warnings {
		p("- Warning: %s\n", md(s))
	}
	if len(r.Warnings) > 0 {
		p("\n")
	}

	p("## Revisions that mattered\n\n")
	p("The writes on the critical path, each against the object's previous stored revision " +
		"(`metadata.managedFields` and `resourceVersion` left out).\n\n")
	for _, d := range r.Revisions {
		t := d.Write
		p("### +%s %s %s %s\n\n", dur(t.OffsetNS), md(t.Writer), md(t.Verb), md(t.Object))
		var say []string
		if t.CauseID != 0 {
			say = append(say, fmt.Sprintf("After a hop of %s (%s, rule %s).", dur(t.HopNS), md(explain(t.Explain)), md(t.Rule)))
		}
		if d.Base != "" {
			say = append(say, "Against "+md(d.Base)+".")
		}
		if d.Note != "" {
			note := strings.ToUpper(d.Note[:1]) + d.Note[1:]
			if !strings.HasSuffix(note, ":") {
				note += "."
			}
			say = append(say, md(note))
		}
		if len(say) > 0 {
			p("%s\n\n", strings.Join(say, " "))
		}
		if len(d.Lines) > 0 {
			lines := d.Lines
			if d.More > 0 {
				lines = append(lines[:len(lines):len(lines)], fmt.Sprintf("… %d more lines", d.More))
			}
			f := fence(lines)
			p("%sdiff\n%s\n%s\n\n", f, strings.Join(lines, "\n"), f)
		}
	}
	if r.RevisionsLeftOut > 0 {
		p("%d more writes on the critical path are left out; `cpid-tui browse` shows every revision.\n\n", r.RevisionsLeftOut)
	}

	p("## Every write\n\n")
	p("◆ critical path, ● write, ✕ failed write; in apiserver order.\n\n")
	p("| | After | Writer | Verb | Object | Hop | Why | Rule | Confidence | CPID from |\n|---|---:|---|---|---|---:|---|---|---|---|\n")
	for _, t := range r.Writes {
		hop, why := t.hop()
		p("| %s | +%s | %s | %s | %s | %s | %s | %s | %s | %s |\n", t.glyph(), dur(t.OffsetNS), md(t.Writer), md(t.Verb), md(t.Object), hop,
			md(why), md(t.Rule), md(string(t.Confidence)), md(t.Origin))
	}
	p("\n")

	p("## Controller log lines\n\n")
	if len(r.Logs.Lines) == 0 {
		p("No controller log line was found for this change.\n")
	} else {
		if r.Logs.Exact {
			p("The log lines of the change's time that carry its CPIDs, with the other lines of their processes and of its writers'")
		} else {
			p("No line carries the change's CPIDs: these are its writers' lines in its time window, a guess")
		}
		if r.Logs.Truncated {
			p(" (the first %d)", len(r.Logs.Lines))
		}
		p(".\n\n")
		var lines []string
		for _, l := range r.Logs.Lines {
			lines = append(lines, r.logLine(l))
		}
		f := fence(lines)
		p("%stext\n%s\n%s\n", f, strings.Join(lines, "\n"), f)
	}
	return w.Flush()
}

// mdChange is one linked change as a list item.
func mdChange(c cpid.ChangeRow) string { return changeLine(c, md, code) }
