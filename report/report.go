// Package report writes a post-mortem of one change as a document: a
// summary, a timeline chart (SVG) with one lane per controller and the
// critical path, where the time went, the SLIs, anomalies and data
// warnings, and the revisions on the critical path with their diffs. It
// reads everything through cpid.ChangeReader, as the terminal UI does, and
// writes Markdown or one self-contained HTML file (no scripts, nothing
// fetched).
package report

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
	"github.com/cpid-dev/cpid/reconstruct"
)

// Limits keep a report of a very large change readable.
const (
	// historyLimit is how many writes of an object, up to a write on the
	// critical path, are read to find the revision before it.
	historyLimit = 20
	// maxRevisions is how many critical-path writes get a diff.
	maxRevisions = 40
	// maxDiffLines is how many lines of one diff are shown.
	maxDiffLines = 120
	// logLimit is how many controller log lines are shown.
	logLimit = 60
)

// Report is the post-mortem of one change, every string Printable.
type Report struct {
	Change cpid.ChangeRow
	// OriginNS is time zero of the report: the earliest request of the
	// change received (its first writer's: a user, a node controller...),
	// as the TUI's timeline starts.
	OriginNS int64
	// EndNS is the last write's completion (or a span's end).
	EndNS int64
	// ChartNS is where the chart's time axis starts: OriginNS, or the
	// earliest cause a write waited for when it is earlier (a node's last
	// heartbeat before the change), so that every wait is drawn.
	ChartNS int64
	Writes  []Write
	// Lanes are the writers in order of their first write, then the
	// services of controller spans that wrote nothing.
	Lanes    []string
	Spans    []cpid.ChangeSpan
	Critical []Write // the critical path, in order
	// CriticalNS adds up the hops of the critical path; Path says how
	// they make the settled time.
	CriticalNS       int64
	Path             PathTime
	ByReason         []Share
	ByWriter         []Share
	SLIs             []reconstruct.SLI
	Anomalies        []cpid.AnomalyRow
	Warnings         []string
	Revisions        []RevisionDiff
	RevisionsLeftOut int // critical-path writes beyond maxRevisions
	Graph            cpid.ChangeGraph
	// MergedFrom are other changes whose CPIDs this one's merges took
	// (it descends from them), Feeds the changes descending from this one.
	MergedFrom, Feeds []cpid.ChangeRow
	Logs              cpid.ChangeLogSet
}

// Write is one write of the change, as the report shows it.
type Write struct {
	cpid.TimelineEntry
	Lane     int
	Object   string // "Kind namespace/name"
	Verb     string // "verb/subresource", "(failed 409)" added
	OffsetNS int64  // NS - Report.OriginNS
	// Cause is the write that caused this one, nil for the root or a
	// cause outside the change.
	Cause *Write
}

// Share is a part of the critical path's waits: a reason or a writer.
type Share struct {
	Name    string
	NS      int64
	Percent int
}

// RevisionDiff is a write on the critical path and what it changed.
type RevisionDiff struct {
	Write Write
	// Base names the revision compared with ("" for none).
	Base string
	// Note says what the diff is when it is not one between two stored
	// objects: a request body, no body at all.
	Note string
	// Lines are the diff: "+ " added, "- " removed, "  " kept, "@@" where
	// unchanged lines are left out.
	Lines []string
	// More is how many lines were left out at the end.
	More int
}

// Build reads change id through st and assembles its report.
func Build(ctx context.Context, st cpid.ChangeReader, id string) (*Report, error) {
	st = present.PrintableReader(st)
	rows, err := st.ChangesByID(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no change %q (cpid-tui query changes lists them; was reconstruct run?)", id)
	}
	r := &Report{Change: rows[0]}
	ts, err := st.Timeline(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("change %s has no writes", id)
	}
	if r.Spans, err = st.ChangeSpans(ctx, id); err != nil {
		return nil, err
	}
	r.writes(ts)

	byReason, byWriter := cpid.TimeByReason(ts)
	r.ByReason, r.ByWriter = shares(byReason), shares(byWriter)
	for _, ns := range byReason {
		r.CriticalNS += ns
	}
	r.Path = r.pathTime()

	pods, err := st.PodWrites(ctx, id)
	if err != nil {
		return nil, err
	}
	hops, err := st.Hops(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, s := range reconstruct.SLIs(pods, hops) {
		if s.N > 0 {
			r.SLIs = append(r.SLIs, s)
		}
	}
	if r.Anomalies, err = st.Anomalies(ctx, id); err != nil {
		return nil, err
	}
	if err := r.linked(ctx, st); err != nil {
		return nil, err
	}
	if r.Logs, err = st.ChangeLogs(ctx, id, logLimit); err != nil {
		return nil, err
	}
	if err := r.revisions(ctx, st); err != nil {
		return nil, err
	}
	bodied, err := r.bodied(ctx, st)
	if err != nil {
		return nil, err
	}
	v, err := st.DataVersion(ctx)
	if err != nil {
		return nil, err
	}
	r.warnings(bodied, v)
	return r, nil
}

// writes fills the writes, the lanes, the time range and the critical path.
func (r *Report) writes(ts []cpid.TimelineEntry) {
	lane := map[string]int{}
	addLane := func(name string) int {
		i, ok := lane[name]
		if !ok {
			i = len(r.Lanes)
			lane[name] = i
			r.Lanes = append(r.Lanes, name)
		}
		return i
	}
	r.OriginNS, r.EndNS = present.Extent(ts, r.Spans)
	r.ChartNS = r.OriginNS
	for _, t := range ts {
		if t.CauseID != 0 && t.HopNS > 0 {
			r.ChartNS = min(r.ChartNS, t.CauseNS)
		}
	}
	idx := map[int64]int{}
	r.Writes = make([]Write, len(ts))
	for i, t := range ts {
		r.Writes[i] = Write{TimelineEntry: t, Lane: addLane(t.Writer), Object: object(t.Kind, t.Namespace, t.Name),
			Verb:     present.WriteVerb(t.Verb, t.Subresource, t.Attempt, t.Code),
			OffsetNS: t.NS - r.OriginNS}
		idx[t.EventID] = i
	}
	for i := range r.Writes {
		w := &r.Writes[i]
		if j, ok := idx[w.CauseID]; ok && w.CauseID != 0 && j != i {
			w.Cause = &r.Writes[j]
		}
		if w.Critical {
			r.Critical = append(r.Critical, *w)
		}
	}
	for _, s := range r.Spans {
		addLane(s.Service)
	}
}

// shares sorts a breakdown largest first, with each part's percentage.
func shares(m map[string]int64) []Share {
	var total int64
	for _, ns := range m {
		total += ns
	}
	out := make([]Share, 0, len(m))
	for k, ns := range m {
		s := Share{Name: k, NS: ns}
		if total > 0 {
			s.Percent = int((100*ns + total/2) / total)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].NS != out[j].NS {
			return out[i].NS > out[j].NS
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// linked reads the merge graph and the changes linked to this one through
// it: those its merges took CPIDs from, those that descend from it.
func (r *Report) linked(ctx context.Context, st cpid.ChangeReader) error {
	g, err := st.ChangeGraph(ctx, r.Change.ID)
	if err != nil {
		return err
	}
	r.Graph = g
	from := map[string]bool{}
	for _, cs := range g.Outside {
		for _, c := range cs {
			from[c] = true
		}
	}
	delete(from, r.Change.ID)
	if len(from) > 0 {
		if r.MergedFrom, err = st.ChangesByID(ctx, slices.Sorted(maps.Keys(from))); err != nil {
			return err
		}
	}
	feeds := map[string]cpid.ChangeRow{}
	for _, n := range g.Nodes {
		cs, err := st.LinkedChanges(ctx, r.Change.ID, n.CPID, false)
		if err != nil {
			return err
		}
		for _, c := range cs {
			feeds[c.ID] = c
		}
	}
	r.Feeds = slices.SortedFunc(maps.Values(feeds), func(a, b cpid.ChangeRow) int {
		return cmp.Or(cmp.Compare(a.StartedNS, b.StartedNS), strings.Compare(a.ID, b.ID))
	})
	return nil
}

// bodied returns the writes of the change's objects whose resources the
// rules read (cpid.BodiedResources) in the change's time, by object.
func (r *Report) bodied(ctx context.Context, st cpid.ChangeReader) (map[cpid.ObjectKey][]cpid.ObjectWrite, error) {
	bodied := map[cpid.ObjectKey][]cpid.ObjectWrite{}
	for _, w := range r.Writes {
		k := keyOf(w.TimelineEntry, r.Change.Cluster)
		if _, ok := bodied[k]; ok || !cpid.BodiedResources[w.Resource] {
			continue
		}
		ws, _, err := st.ObjectHistory(ctx, cpid.HistoryQuery{Object: k, SinceNS: r.OriginNS, UntilNS: r.EndNS + 1, Bodies: true})
		if err != nil {
			return nil, err
		}
		bodied[k] = ws
	}
	return bodied, nil
}

// revisions diffs the critical path's writes against the revision before
// each.
func (r *Report) revisions(ctx context.Context, st cpid.ChangeReader) error {
	for _, w := range r.Critical {
		if w.Attempt {
			continue
		}
		if len(r.Revisions) == maxRevisions {
			r.RevisionsLeftOut++
			continue
		}
		// The write and the ones before it, back to one that stored the
		// object (a status patch, a binding store none).
		ws, more, err := st.ObjectHistory(ctx, cpid.HistoryQuery{Object: keyOf(w.TimelineEntry, r.Change.Cluster), UntilNS: w.NS + 1,
			Limit: historyLimit, Bodies: true})
		if err != nil {
			return err
		}
		r.Revisions = append(r.Revisions, diffOf(w, ws, more))
	}
	return nil
}

func keyOf(t cpid.TimelineEntry, cluster string) cpid.ObjectKey {
	return cpid.ObjectKey{Group: t.APIGroup, Resource: t.Resource, Namespace: t.Namespace, Name: t.Name, Cluster: cluster}
}

// diffOf is what write w changed: the diff of its stored object against
// the closest earlier write that stored one (ws are the object's last
// writes up to w's, more says there were earlier ones), as the TUI's
// revisions view shows it (present.ObjectDiff: managedFields and
// resourceVersion left out).
func diffOf(w Write, ws []cpid.ObjectWrite, more bool) RevisionDiff {
	d := RevisionDiff{Write: w}
	at := slices.IndexFunc(ws, func(x cpid.ObjectWrite) bool { return x.EventID == w.EventID })
	if at < 0 {
		d.Note = "the object's history does not have this write: see cpid-tui history"
		return d
	}
	rv := ws[at]
	prev := ""
	for i := at - 1; i >= 0; i-- {
		if ws[i].Object != "" {
			prev = ws[i].Object
			d.Base = present.Revision(ws[i].Seq, ws[i].ResourceVersion, ws[i].Writer, ws[i].Verb, ws[i].Subresource)
			break
		}
	}
	var lines []string
	switch present.Changed(present.Written{Attempt: rv.Attempt, Verb: rv.Verb, Level: rv.Level, Object: rv.Object, Request: rv.Request}, prev != "") {
	case present.ChangeFailed:
		d.Base, d.Note = "", fmt.Sprintf("failed with %d: it changed nothing", rv.Code)
	case present.ChangeRequest:
		d.Base, d.Note = "", "stored no object in the audit log; its request body:"
		for _, l := range present.JSONLines(rv.Request) {
			lines = append(lines, "  "+l)
		}
	case present.ChangeMetadata:
		d.Base, d.Note = "", "audited at Metadata level: the audit log has no body of it"
	case present.ChangeDeleted, present.ChangeNoObject:
		d.Base, d.Note = "", "the audit log has no object of it (a delete's or a subresource's response, or a truncated event)"
	case present.ChangeFirst:
		d.Note = "the first stored object, whole:"
		if more {
			d.Note = fmt.Sprintf("none of the %d writes before it stored the object; the whole object:", at)
		}
		lines = present.ObjectDiff("", rv.Object, 3)
	default:
		lines = present.ObjectDiff(prev, rv.Object, 3)
		if len(lines) == 0 {
			d.Note = "no difference in spec, status or metadata (besides resourceVersion and managedFields)"
		}
	}
	if len(lines) > maxDiffLines {
		d.More = len(lines) - maxDiffLines
		lines = lines[:maxDiffLines]
	}
	d.Lines = lines
	return d
}

// warnings says what the data cannot tell about this change: objects the
// rules read audited without them, causes found by time alone, waits
// nothing explains, log lines guessed, writes after the last settle
// cutoff.
func (r *Report) warnings(bodied map[cpid.ObjectKey][]cpid.ObjectWrite, v cpid.DataVersion) {
	// Writes of the resources whose objects the rules read, with the
	// object [0] and without it [1], counted as reconstruct counts them.
	bodies := map[string]*[2]int{}
	inChange := map[int64]bool{}
	for _, w := range r.Writes {
		inChange[w.EventID] = true
	}
	for k, ws := range bodied {
		for _, rv := range ws {
			// rv.Object is "" for a subresource's response too: only the
			// object's own writes and status writes count.
			if !inChange[rv.EventID] || rv.Attempt || rv.Verb == "delete" || rv.Verb == "deletecollection" ||
				(rv.Subresource != "" && rv.Subresource != "status") {
				continue
			}
			n := bodies[k.Resource]
			if n == nil {
				n = &[2]int{}
				bodies[k.Resource] = n
			}
			if rv.Object == "" {
				n[1]++
			} else {
				n[0]++
			}
		}
	}
	for _, res := range slices.Sorted(maps.Keys(bodies)) {
		n := bodies[res]
		if n[1] == 0 {
			continue
		}
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %d of %d writes of this change carry no object (audited at Metadata level, or truncated): %s",
			res, n[1], n[0]+n[1], reconstruct.BlindReason(res)))
	}
	var caused, heuristic int
	var unexplained int64
	for _, w := range r.Writes {
		if w.CauseID == 0 {
			continue
		}
		caused++
		if w.Confidence == cpid.ConfidenceHeuristic {
			heuristic++
		}
		if w.Critical && (w.Explain == cpid.ExplainUnexplained || w.Explain == "") {
			unexplained += w.HopNS
		}
	}
	if heuristic > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d of %d causes were found by time alone (confidence heuristic): no CPID or owner reference names them",
			heuristic, caused))
	}
	if unexplained > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s of the critical path's waits is unexplained: nothing in the logs says why", dur(unexplained)))
	}
	if !r.Logs.Exact && len(r.Logs.Lines) > 0 {
		r.Warnings = append(r.Warnings, "no log line carries the change's CPIDs: the log lines shown are its writers' in its time window, a guess")
	}
	if r.Logs.Truncated {
		r.Warnings = append(r.Warnings, fmt.Sprintf("more than %d log lines: the first %d are shown", logLimit, logLimit))
	}
	if v.CutoffNS != 0 && r.EndNS > v.CutoffNS {
		r.Warnings = append(r.Warnings, "the change's last writes are within the settle lag of the newest write reconstruct saw: "+
			"provisional, redone by the next reconstruct if logs of that time are ingested later")
	}
}

// Title names the change for people: "create Service default/web".
func (r *Report) Title() string {
	c := r.Change
	return present.Verb(c.Verb, c.Subresource) + " " + object(c.Kind, c.Namespace, c.Name)
}

// agent is the program and version of the user agent that started the
// change ("kubectl/v1.37.2"), "" when it is the user's name.
func (r *Report) agent() string {
	a, _, _ := strings.Cut(r.Change.UserAgent, " ")
	if a == r.Change.User {
		return ""
	}
	return cut(a, 60)
}

// Failed counts the failed writes.
func (r *Report) Failed() int {
	n := 0
	for _, w := range r.Writes {
		if w.Attempt {
			n++
		}
	}
	return n
}

// Merges counts the change's merges, by origin.
func (r *Report) Merges() map[string]int {
	out := map[string]int{}
	for _, n := range r.Graph.Nodes {
		for _, m := range n.Merges {
			out[m.Origin]++
		}
	}
	return out
}

func object(kind, ns, name string) string { return cpid.ObjectName(kind, ns, name) }

// PathTime is how the critical path's waits make the change's settled
// time (docs/CAUSALITY.md, "Time by reason", as cpid-tui diff adds them
// up): settled = StartNS + (waits - BeforeNS) + OverlapNS.
type PathTime struct {
	// SettledNS is from the change's first request received to its last
	// write.
	SettledNS int64
	// StartNS is from the first request received to the critical path's
	// first write completing: no wait, the request in the apiserver.
	StartNS int64
	// BeforeNS is the wait of the path's first write on a cause outside
	// the change, before the change started (a node's last heartbeat, a
	// controller away), and BeforeWriter who waited.
	BeforeNS     int64
	BeforeWriter string
	// OverlapNS, 0 or less, is where a write of the path was received
	// before its cause completed: a hop runs from the earlier of the two,
	// so consecutive hops count that time twice.
	OverlapNS int64
}

// pathTime reconciles the critical path's waits with the settled time.
func (r *Report) pathTime() PathTime {
	p := PathTime{SettledNS: r.Change.SettledNS - r.Change.StartedNS}
	if len(r.Critical) == 0 {
		p.StartNS = p.SettledNS
		return p
	}
	// The path from its last write back to its first: not in timeline
	// order, where a write may complete before its cause.
	var last *Write
	for i := range r.Writes {
		if w := &r.Writes[i]; w.Critical && !w.Attempt {
			last = w
		}
	}
	if last == nil {
		p.StartNS = p.SettledNS
		return p
	}
	first := last
	var within int64     // hops from causes on the path
	for range r.Writes { // a path has at most every write
		if first.Cause == nil || !first.Cause.Critical {
			break
		}
		within += first.HopNS
		first = first.Cause
	}
	p.StartNS = first.NS - r.Change.StartedNS + (r.Change.SettledNS - last.NS)
	p.OverlapNS = (last.NS - first.NS) - within
	if first.CauseID != 0 {
		p.BeforeNS, p.BeforeWriter = first.HopNS, first.Writer
	}
	return p
}

// PathNote says why the critical path's waits exceed the settled time,
// "" when they do not (the time before the path's first write completed,
// the first request in the apiserver, is the rest).
func (r *Report) PathNote() string {
	p := r.Path
	if r.CriticalNS <= p.SettledNS || len(r.Critical) == 0 {
		return ""
	}
	var parts []string
	if p.BeforeNS > 0 {
		parts = append(parts, fmt.Sprintf("%s of it is the wait of the path's first write (%s) on a cause before the change started", dur(p.BeforeNS), p.BeforeWriter))
	}
	if p.OverlapNS < 0 {
		parts = append(parts, fmt.Sprintf("%s is counted twice, where a write was received before its cause had completed (its hop runs from when it was received, so hops overlap)", dur(-p.OverlapNS)))
	}
	if p.StartNS > 0 {
		parts = append(parts, fmt.Sprintf("the %s from the change's first request to the path's first write completing is no wait", dur(p.StartNS)))
	}
	s := fmt.Sprintf("The waits on the critical path (%s) are more than the %s the change took to settle: ", dur(r.CriticalNS), dur(p.SettledNS)) +
		strings.Join(parts, "; ") + fmt.Sprintf(". %s", dur(r.CriticalNS))
	if p.BeforeNS > 0 {
		s += " − " + dur(p.BeforeNS)
	}
	if p.OverlapNS < 0 {
		s += " − " + dur(-p.OverlapNS)
	}
	return s + fmt.Sprintf(" + %s = %s.", dur(p.StartNS), dur(p.SettledNS))
}

// PathShort says in a few words why the critical path's waits are not the
// settled time, "" when they are.
func (r *Report) PathShort() string {
	var parts []string
	if r.Path.BeforeNS > 0 {
		parts = append(parts, dur(r.Path.BeforeNS)+" before the change started")
	}
	if r.Path.OverlapNS < 0 && r.CriticalNS > r.Path.SettledNS {
		parts = append(parts, "overlapping by "+dur(-r.Path.OverlapNS))
	}
	return strings.Join(parts, ", ")
}

// ChartNote says where the chart's axis starts when before the change: at
// the earliest cause a write waited for.
func (r *Report) ChartNote() string {
	if r.ChartNS >= r.OriginNS {
		return ""
	}
	return fmt.Sprintf("The axis starts %s before the change, at the earliest cause a write of it waited for (%s), so that every wait is drawn; 0 is the change's start.",
		dur(r.OriginNS-r.ChartNS), stamp(r.ChartNS))
}

// StartedBy names who made the change's first write for its trigger: a
// user starts a change; a node, a controller starting, a schedule or the
// garbage collector is what started it, and the user only wrote first.
func (r *Report) StartedBy() string {
	if r.Change.Trigger == cpid.TriggerUser {
		return "Started by"
	}
	return "First write by"
}
