package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
	"github.com/cpid-dev/cpid/reconstruct"
)

func init() {
	register(command{name: "query", use: "changes|timeline ID|spans ID|related CPID|origins CPID|sli|hops|anomalies [flags]",
		summary: "list changes, a change's timeline, spans, related CPIDs, SLIs, hops, anomalies", group: "read",
		help: queryHelp, formats: listFormats, setup: setupQuery})
}

const queryHelp = `Queries what reconstruct derived (run cpid-tui reconstruct first). The
database is opened read-only: never created, never migrated.

  changes            root changes (a user's write, or what the environment
                     did: a node, a controller that started again, a
                     schedule, the garbage collector), newest first:
                     --sort time|duration|size, --filter TEXT, --limit N
                     (0: all), and the filters below
  timeline ID        every write of change ID in apiserver order: writer,
                     object, the write that caused it, the hop latency, why
                     it waited, by which rule and with what confidence
                     (exact: owner references, CPIDs; heuristic: time);
                     '*' marks the critical path to the last write
  spans ID           the spans of change ID: one apiserver span per write
                     (received to completed) and the controller spans of
                     every related CPID (instrumented controllers)
  related CPID       the CPID and every CPID descending from it (paper Table 2)
  origins CPID       the CPID and every CPID it descends from
  hops               the reaction windows beside the hops observed in this
                     database, per rule, writer and resource: the window (docs/CAUSALITY.md),
                     how many hops, p50 and max (p90 and p99 with -o wide), how many were past it
                     and why they waited (--change ID for one change)
  anomalies          what the logs show that a reconstruction must not hide:
                     rv-backwards (a replayed watch, skewed apiservers),
                     clock-skew, repeated-write, transition-backwards (a
                     condition's lastTransitionTime moved back), merge-cycle;
                     each on its write and change (--change ID for one)
  sli                p50/p90/p99 of change start to Pod created, scheduled,
                     Running, Ready; the pod startup phases of the
                     Kubernetes scalability tests; hop latency per
                     controller; all in apiserver time (--change ID for one)

Every change ID (timeline, spans, --change) may be a unique prefix of one
(341ca5b9); a prefix of several fails listing them.

Filters of changes, all together: --since/--until (the change started in
that window: an RFC 3339 time, or a duration back from the newest audit
event in the database, since recorded logs have no "now"), -n/--namespace
(of the object the change started on), --kind (its type, as history takes
it: deploy, deployments.apps, pod), --user (the user's name contains it),
--writer (one of the change's writes is by a writer whose name contains
it: kube-scheduler), --min-duration (started to last write, e.g. 500ms),
--trigger (user, node, controller-start, schedule, gc, unknown).

Tables show strings from the logs without control characters or escape
sequences; --output csv writes them escaped (\x1b), --output json exactly
(docs/SECURITY.md).

--output json gives, for changes: id, started_ns, settled_ns, trigger, user,
verb, kind, api_group, namespace, name, writes, objects, cluster,
time_by_reason_ns and time_by_writer_ns (the critical path's hops added up by
why they waited and by writer)...; for a timeline entry: ns, writer, verb,
kind, namespace, name, subresource, cause_ns, hop_ns, explain, confidence,
origin, critical...

Examples:
  cpid-tui query changes --sort duration --limit 5
  cpid-tui query changes --kind deploy -n default --min-duration 500ms --since 1h
  cpid-tui query timeline 044d68ee-6a4f-47dc-a93e-da38a9ba0d77 --output json | jq '.[] | select(.critical)'`

// queries are the queries of query, for help and completion.
var queries = []string{"changes", "timeline", "spans", "related", "origins", "sli", "hops", "anomalies"}

// sorts are the values of --sort.
var sorts = []string{"time", "duration", "size"}

// idQueries are the queries that take a change id or a CPID.
var idQueries = []string{"timeline", "spans", "related", "origins"}

func setupQuery(c *cobra.Command, e *env) runFunc {
	fs := c.Flags()
	sort := new(string)
	choiceVar(fs, sort, "sort", "time", "changes: time, duration or size", sorts...)
	filter := fs.String("filter", "", "changes: keep those whose namespace, name, kind, user or id contains this, or with a write whose object name (a Pod it created), writer or verb (update/status) does, or whose HTTP code (409) it is")
	limit := fs.Int("limit", 50, "changes: at most this many (0: all)")
	change := fs.String("change", "", "sli, hops, anomalies: only this change (an id or a unique prefix)")
	var f filters
	f.addTime(fs, "changes: keep those started")
	f.addNamespace(fs, "changes: keep those started on an object of this namespace")
	fs.StringVar(&f.kind, "kind", "", "changes: keep those started on an object of this type (deploy, deployments.apps, pod)")
	f.addWho(fs, "changes: keep those whose user name contains this (case-insensitive)",
		"changes: keep those with a write by a writer whose name contains this (kube-scheduler)",
		"changes: keep those started by")
	fs.DurationVar(&f.minDuration, "min-duration", 0, "changes: keep those that took at least this long, started to last write")
	var windows paths
	fs.Var(&windows, "window", "hops: a reaction window `[RULE/]WRITER=DURATION` before the defaults, as given to reconstruct (repeatable)")
	c.RegisterFlagCompletionFunc("change", completeChanges(e))
	f.complete(c, e)
	c.ValidArgsFunction = func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch {
		case len(args) == 0:
			return queries, cobra.ShellCompDirectiveNoFileComp
		case len(args) == 1 && slices.Contains(idQueries, args[0]):
			return completeChanges(e)(c, args, toComplete)
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return func(ctx context.Context, pos []string) error {
		if len(pos) == 0 {
			return usagef("give a query: %s", strings.Join(queries, ", "))
		}
		var err error
		if pos[0], err = oneOf("query", pos[0], queries); err != nil {
			return err
		}
		if *limit < 0 {
			return usagef("--limit %d: give 0 (all) or more", *limit)
		}
		format := e.format(c)
		if format == "name" && !slices.Contains([]string{"changes", "spans", "related", "origins"}, pos[0]) {
			return usagef("-o name: query %s lists no ids (changes, spans, related and origins do)", pos[0])
		}
		want := 0
		if slices.Contains(idQueries, pos[0]) {
			want = 1
		}
		if len(pos) != want+1 {
			return usagef("query %s takes %s", pos[0], present.Plural(want, "argument"))
		}
		// The windows given, before the defaults.
		ws := slices.Clone(reconstruct.DefaultWindows)
		for i := len(windows) - 1; i >= 0; i-- {
			win, err := readWindow(windows[i])
			if err != nil {
				return err
			}
			ws = append([]reconstruct.Window{win}, ws...)
		}
		db0, err := e.openReader(ctx)
		if err != nil {
			return err
		}
		defer db0.close()
		st := db0.view(e.cluster)
		// An empty answer from a database never reconstructed says why, as
		// does an id it does not find there.
		told := false
		empty := func(n int) {
			if n == 0 && !told {
				told = true
				db0.hintReconstruct(ctx, e, e.db, e.cluster)
			}
		}
		if *change != "" {
			if *change, err = resolveChange(ctx, st, *change); err != nil {
				empty(0)
				return err
			}
		}
		q := queryRun{e: e, c: c, st: st, format: format, empty: empty}
		err = q.run(ctx, pos, f, cpid.ChangeQuery{Filter: *filter, Sort: *sort, Limit: *limit}, *change, ws)
		if err != nil && !errors.Is(err, errUsage) && !errors.Is(err, errAmbiguous) {
			empty(0)
		}
		return err
	}
}

// run runs the query pos names, change resolved already.
func (q queryRun) run(ctx context.Context, pos []string, f filters, cq cpid.ChangeQuery, change string, ws []reconstruct.Window) error {
	e, c, st := q.e, q.c, q.st
	switch pos[0] {
	case "changes":
		if cq.Limit == 0 {
			cq.Limit = math.MaxInt // the engines take 0 for their default
		}
		if err := f.changeQuery(ctx, st, &cq); err != nil {
			return usagef("%v", err)
		}
		return q.changes(ctx, cq)
	case "timeline":
		return q.timeline(ctx, pos[1])
	case "related", "origins":
		return q.related(ctx, pos[0], pos[1])
	case "spans":
		return q.spans(ctx, pos[1])
	case "sli":
		return querySLI(ctx, e, c, st, change)
	case "anomalies":
		return q.anomalies(ctx, change)
	}
	return queryHops(ctx, e, c, st, change, ws, q.empty)
}

// queryRun is one run of query: where it reads and how it prints.
type queryRun struct {
	e      *env
	c      *cobra.Command
	st     cpid.ChangeReader
	format string
	empty  func(n int)
}

func (q queryRun) changes(ctx context.Context, cq cpid.ChangeQuery) error {
	cs, err := q.st.Changes(ctx, cq)
	if err != nil {
		return err
	}
	q.empty(len(cs))
	// The cluster is a column of the table when the listing has more than
	// one.
	clusters := map[string]bool{}
	for _, c := range cs {
		clusters[c.Cluster] = true
	}
	fleet := len(clusters) > 1
	l := listing{head: []string{"STARTED", "TRIGGER", "USER", "VERB", "OBJECT", "WRITES", "OBJECTS", "SETTLED AFTER", "SLOWEST HOP", "ID"},
		short: []int{9}, wideOnly: []int{6, 8}}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	if l.idLen, err = idLength(ctx, q.st, q.format, ids...); err != nil {
		return err
	}
	for _, c := range cs {
		l.rows = append(l.rows, []string{clock(c.StartedNS), string(c.Trigger), c.User, c.Verb, object(c.Kind, c.Namespace, c.Name) + sub(c.Subresource),
			strconv.Itoa(c.Writes), strconv.Itoa(c.Objects), dur(c.SettledNS - c.StartedNS), dur(c.SlowestHopNS), c.ID})
		l.names = append(l.names, c.ID)
	}
	if fleet {
		l = l.prepend("CLUSTER", func(i int) string { return cs[i].Cluster })
	}
	// JSON, YAML and CSV add where each change's time went: its critical
	// path's hops by reason and by writer.
	// One read for all of them (not one per change).
	full := make([]changeJSON, len(cs))
	var tls map[string][]cpid.TimelineEntry
	if q.format == "json" || q.format == "yaml" || q.format == "csv" {
		if tls, err = q.st.Timelines(ctx, ids); err != nil {
			return err
		}
	}
	for i, c := range cs {
		full[i].ChangeRow = c
		if tls != nil {
			full[i].TimeByReason, full[i].TimeByWriter = cpid.TimeByReason(tls[c.ID])
		}
	}
	l.data = full
	return q.e.print(q.c, l)
}

func (q queryRun) timeline(ctx context.Context, id string) error {
	full, err := resolveChange(ctx, q.st, id)
	if err != nil {
		return err
	}
	ts, err := q.st.Timeline(ctx, full)
	if err != nil {
		return err
	}
	q.empty(len(ts))
	zero, _ := present.Extent(ts, nil)
	l := listing{head: []string{"", "TIME", "AFTER", "WRITER", "VERB", "OBJECT", "HOP", "WHY", "RULE", "CONFIDENCE", "CPID FROM"},
		wideOnly: []int{1, 8, 10}, data: ts}
	if ts == nil {
		l.data = []cpid.TimelineEntry{}
	}
	for _, t := range ts {
		mark := " "
		if t.Critical {
			mark = "*"
		}
		verb := present.WriteVerb(t.Verb, t.Subresource, t.Attempt, t.Code)
		hop := "-"
		if t.CauseID != 0 {
			hop = "+" + dur(t.HopNS)
		}
		l.rows = append(l.rows, []string{mark, clock(t.NS), "+" + dur(t.NS-zero), t.Writer, verb, object(t.Kind, t.Namespace, t.Name), hop,
			string(t.Explain), t.Rule, string(t.Confidence), t.Origin})
	}
	if q.format != "table" && q.format != "wide" {
		return q.e.print(q.c, l)
	}
	// The table, then what started the change and the evidence behind
	// the explanations that have some, for people.
	if !q.e.noHeaders {
		line := "started " + clock(zero) + " UTC (AFTER counts from it)"
		if cs, err := q.st.ChangesByID(ctx, []string{full}); err == nil && len(cs) == 1 && cs[0].Trigger != "" {
			line += "; trigger: " + string(cs[0].Trigger)
			if cs[0].TriggerDetail != "" {
				line += " (" + cs[0].TriggerDetail + ")"
			}
		}
		fmt.Fprintln(q.e.stdout, present.Printable(line))
	}
	if err := q.e.print(q.c, l); err != nil {
		return err
	}
	if q.e.noHeaders {
		return nil
	}
	for _, t := range ts {
		if t.ExplainDetail != "" {
			fmt.Fprintln(q.e.stdout, present.Printable(fmt.Sprintf("why +%s %s %s: %s: %s", dur(t.NS-zero), object(t.Kind, t.Namespace, t.Name),
				"+"+dur(t.HopNS), t.Explain, t.ExplainDetail)))
		}
	}
	return nil
}

func (q queryRun) spans(ctx context.Context, id string) error {
	full, err := resolveChange(ctx, q.st, id)
	if err != nil {
		return err
	}
	sp, err := q.st.Spans(ctx, full)
	if err != nil {
		return err
	}
	q.empty(len(sp))
	if sp == nil {
		sp = []cpid.SpanRow{}
	}
	l := listing{head: []string{"START", "DURATION", "KIND", "SERVICE", "NAME", "SPAN", "PARENT"}, short: []int{5, 6}, data: sp}
	for _, x := range sp {
		l.rows = append(l.rows, []string{clock(x.StartNS), dur(x.EndNS - x.StartNS), x.Kind, x.Service, x.Name, x.SpanID, x.ParentID})
		l.names = append(l.names, x.SpanID)
	}
	return q.e.print(q.c, l)
}

func (q queryRun) anomalies(ctx context.Context, change string) error {
	as, err := q.st.Anomalies(ctx, change)
	if err != nil {
		return err
	}
	q.empty(len(as))
	if as == nil {
		as = []cpid.AnomalyRow{}
	}
	l := listing{head: []string{"TIME", "ANOMALY", "OBJECT", "CHANGE", "DETAIL"}, text: []int{4}, short: []int{3}, data: as}
	ids := make([]string, 0, len(as))
	for _, a := range as {
		if a.Change != "" {
			ids = append(ids, a.Change)
		}
	}
	if l.idLen, err = idLength(ctx, q.st, q.format, ids...); err != nil {
		return err
	}
	for _, a := range as {
		kind := cpid.KindOf("", a.Resource)
		l.rows = append(l.rows, []string{clock(a.NS), a.Kind, object(kind, a.Namespace, a.Name), a.Change, a.Detail})
	}
	return q.e.print(q.c, l)
}

func sub(s string) string {
	if s == "" {
		return ""
	}
	return "/" + strings.TrimPrefix(s, "/")
}

func querySLI(ctx context.Context, e *env, c *cobra.Command, st cpid.ChangeReader, change string) error {
	ws, err := st.PodWrites(ctx, change)
	if err != nil {
		return err
	}
	hops, err := st.Hops(ctx, change)
	if err != nil {
		return err
	}
	out := reconstruct.SLIs(ws, hops)
	if out == nil {
		out = []reconstruct.SLI{}
	}
	// A change's row says what started it: a node's loss, a controller
	// that started again, a schedule are changes as much as a user's.
	var ids []string
	for _, r := range out {
		if r.Scope == "change" {
			ids = append(ids, r.Name)
		}
	}
	if len(ids) > 0 {
		rows, err := st.ChangesByID(ctx, ids)
		if err != nil {
			return err
		}
		trigger := map[string]cpid.Trigger{}
		for _, r := range rows {
			trigger[r.ID] = r.Trigger
		}
		for i := range out {
			if t := trigger[out[i].Name]; out[i].Scope == "change" && t != "" {
				out[i].Doc = fmt.Sprintf("a change started by %s: its start to Pod Ready, over its Pods", t)
			}
		}
	}
	l := listing{head: []string{"SCOPE", "NAME", "N", "P50", "P90", "P99", "MAX"}, data: out}
	for _, r := range out {
		l.rows = append(l.rows, []string{r.Scope, r.Name, strconv.Itoa(r.N), durOr(r.N, r.P50NS), durOr(r.N, r.P90NS), durOr(r.N, r.P99NS), durOr(r.N, r.MaxNS)})
	}
	return e.print(c, l)
}

func durOr(n int, ns int64) string {
	if n == 0 {
		return "-"
	}
	return dur(ns)
}

// hopRow is one line of `query hops`: the hops of one writer through one
// rule beside the window that explains them (reconstruct.Hops), as JSON.
type hopRow struct {
	Rule     string         `json:"rule"`
	Writer   string         `json:"writer"`
	Resource string         `json:"resource"`
	WindowNS int64          `json:"window_ns"` // the widest band of the writer (reconstruct.DefaultWindows)
	Window   string         `json:"window"`    // every band: "5s informer, 55s node-grace"
	N        int            `json:"n"`
	P50NS    int64          `json:"p50_ns"`
	P90NS    int64          `json:"p90_ns"`
	P99NS    int64          `json:"p99_ns"`
	MaxNS    int64          `json:"max_ns"`
	Past     int            `json:"past_window"` // hops longer than the widest band
	Explain  map[string]int `json:"explain"`     // hops per explanation
}

func queryHops(ctx context.Context, e *env, c *cobra.Command, st cpid.ChangeReader, change string, windows []reconstruct.Window, empty func(int)) error {
	hops, err := st.Hops(ctx, change)
	if err != nil {
		return err
	}
	empty(len(hops))
	out := []hopRow{}
	l := listing{head: []string{"RULE", "WRITER", "RESOURCE", "WINDOW", "HOPS", "P50", "P90", "P99", "MAX", "PAST WINDOW", "WHY"},
		text: []int{3}, wideOnly: []int{6, 7}, data: &out}
	for _, h := range reconstruct.Hops(hops, windows) {
		var names []string
		for _, b := range h.Bands {
			names = append(names, fmt.Sprintf("%s %s", dur(int64(b.Max)), b.Explain))
		}
		r := hopRow{Rule: h.Rule, Writer: h.Writer, Resource: h.Resource, WindowNS: int64(h.Widest), Window: strings.Join(names, ", "),
			N: h.N, P50NS: h.P50, P90NS: h.P90, P99NS: h.P99, MaxNS: h.Max, Past: h.Past, Explain: map[string]int{}}
		var why []string
		for x, n := range h.Explain {
			r.Explain[string(x)] = n
			why = append(why, fmt.Sprintf("%s %d", x, n))
		}
		sort.Strings(why)
		out = append(out, r)
		l.rows = append(l.rows, []string{r.Rule, r.Writer, r.Resource, r.Window, strconv.Itoa(r.N), dur(r.P50NS), dur(r.P90NS), dur(r.P99NS),
			dur(r.MaxNS), strconv.Itoa(r.Past), strings.Join(why, ", ")})
	}
	return e.print(c, l)
}

// changeJSON is a change as `query changes --output json` prints it.
type changeJSON struct {
	cpid.ChangeRow
	// TimeByReason and TimeByWriter add up the hops of the change's critical
	// path, in ns, by explanation and by writer.
	TimeByReason map[string]int64 `json:"time_by_reason_ns"`
	TimeByWriter map[string]int64 `json:"time_by_writer_ns"`
}
