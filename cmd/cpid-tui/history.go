package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
)

func init() {
	register(command{name: "history", use: "TYPE/NAME [-n NAMESPACE] [flags]", group: "read", summary: "every write of one object (deploy/web): who, which change, what caused it, what it changed",
		help: historyHelp, formats: dataFormats, setup: setupHistory})
}

const historyHelp = `Lists every write of one object in order: when (and how long after the
write before it), the verb and response code, the writer (as reconstruct
names it) and its user agent, the change the write belongs to with what
started that change, and the cause: the rule that found it, the write it
reacted to and the hop latency, why it waited. Failed writes are listed
too, with their code. Run cpid-tui reconstruct first. In cpid-tui browse,
H on a change shows the same history of the object under the cursor.

TYPE/NAME is a kubectl-style reference, case-insensitive: a resource's
plural, singular or short name or its kind (deployments/web,
deployment/web, deploy/web, Deployment/web), optionally with its API group
(deployments.apps/web) or version and group (deployments.v1.apps/web);
TYPE NAME as two arguments works too. Built-in resources know their group
and scope (pod/x, node/n1: nodes are cluster-scoped, -n is ignored for
them); any other type is matched by its spelling as typed and with s, es
or y->ies added (widget/w finds widgets.example.com/w), in its group if
given, else in any.

Without -n, or with -A (which wins over -n, as in kubectl), every
namespace is searched: the default namespace is not assumed, since
nothing in recorded logs says which namespace a kubeconfig would have
chosen. When objects of that name exist in several namespaces
(sa/default), groups or clusters, the command fails listing them; pick one
with -n, TYPE.GROUP/NAME or --cluster.

--diff shows what each write changed: a unified-style diff of the object
it stored against the one the write before it stored (spec, status,
metadata labels and annotations...; metadata.managedFields and
resourceVersion, which every write changes, left out), the request body
for a write whose response has no object (a patch at Metadata level), the
whole object for the first. It reads the bodies of every earlier write.

--output json gives {object, earlier_left_out, writes: [...]} with for each
write: ns, received_ns, verb, subresource, code, attempt, writer, user,
user_agent, resource_version, change, trigger, rule, cause {event_id,
writer, verb, resource, namespace, name...}, hop_ns, explain, confidence,
after_ns (since the write before), and diff (lines) with --diff.

Examples:
  cpid-tui history deploy/web -n default
  cpid-tui history pod/web-6c8d95c7f5-jrvns --diff
  cpid-tui history node/kwok-node-0 --since 10m --writer kubelet
  cpid-tui history deployments.apps/web --output json | jq '.writes[] | {writer, verb, change}'`

// historyOptions is what `history` was asked for, past its flags: the
// function the command runs, callable from another command front-end.
type historyOptions struct {
	ref     cpid.ObjectRef
	filters filters
	limit   int
	diff    bool
	format  string
	layout  layout
}

func setupHistory(c *cobra.Command, e *env) runFunc {
	fs := c.Flags()
	var o historyOptions
	o.filters.addNamespace(fs, "the object's namespace (default: search every namespace, and fail listing them when several hold the name)")
	o.filters.addTime(fs, "list the writes completed")
	o.filters.addWho(fs, "list the writes whose user name contains this (case-insensitive)",
		"list the writes whose writer contains this (deployment-controller, kube-scheduler, kubectl)",
		"list the writes of changes started by")
	fs.IntVar(&o.limit, "limit", 200, "list the last this many writes (0: all)")
	fs.BoolVar(&o.diff, "diff", false, "show what each write changed: a diff of its object against the one the write before stored")
	o.filters.complete(c, e)
	c.ValidArgsFunction = completeRefs(e, o.filters.ns)
	return func(ctx context.Context, pos []string) error {
		if len(pos) == 0 {
			return usagef("give TYPE/NAME (deploy/web)")
		}
		var err error
		if o.ref, err = cpid.ParseRef(pos); err != nil {
			return usagef("%v", err)
		}
		if o.limit < 0 {
			return usagef("--limit %d: give 0 (all) or more", o.limit)
		}
		o.format = e.format(c)
		o.layout = e.layout()
		db, err := e.openReader(ctx)
		if err != nil {
			return err
		}
		defer db.close()
		err = history(ctx, e, db.view(e.cluster), o)
		if err != nil && !errors.Is(err, errAmbiguous) && !errors.Is(err, errUsage) {
			db.hintReconstruct(ctx, e, e.db, e.cluster)
		}
		return err
	}
}

// historyWrite is a write as history prints it in JSON.
type historyWrite struct {
	cpid.ObjectWrite
	AfterNS int64    `json:"after_ns"` // since the write before (0 for the first listed)
	Diff    []string `json:"diff,omitempty"`
}

// history lists the writes of the object o names.
func history(ctx context.Context, e *env, st cpid.ChangeReader, o historyOptions) error {
	m, err := findObject(ctx, st, e.stderr, o.ref, o.filters.ns())
	if err != nil {
		return err
	}
	q := cpid.HistoryQuery{Object: m.ObjectKey, Limit: o.limit, Writer: o.filters.writer, User: o.filters.user, Trigger: cpid.Trigger(o.filters.trigger)}
	if q.SinceNS, q.UntilNS, err = o.filters.window(ctx, st); err != nil {
		return usagef("%v", err)
	}
	ws, more, err := st.ObjectHistory(ctx, q)
	if err != nil {
		return err
	}
	// Listed in the order they completed: a failed write comes in the
	// object's order after the revision it was based on, which may have
	// completed after it; diffs follow the object's order (addDiffs).
	sort.SliceStable(ws, func(i, j int) bool {
		if ws[i].NS != ws[j].NS {
			return ws[i].NS < ws[j].NS
		}
		return ws[i].EventID < ws[j].EventID
	})
	out := make([]historyWrite, len(ws))
	for i, w := range ws {
		out[i].ObjectWrite = w
		if i > 0 {
			out[i].AfterNS = w.NS - ws[i-1].NS
		}
	}
	if o.diff && len(ws) > 0 {
		if err := addDiffs(ctx, st, m.ObjectKey, out); err != nil {
			return err
		}
	}
	kind := o.ref.Kind
	if o.ref.Scope == cpid.ScopeUnknown {
		kind = cpid.KindOf("", m.Resource)
	}
	type objectJSON struct {
		Cluster   string `json:"cluster"`
		APIGroup  string `json:"api_group"`
		Resource  string `json:"resource"`
		Kind      string `json:"kind"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	}
	l := listing{head: []string{"TIME", "AFTER", "VERB", "CODE", "WRITER", "AGENT", "CHANGE", "CAUSE", "RV"},
		text: []int{7}, wideOnly: []int{5, 8}, csv: out,
		data: struct {
			Object objectJSON     `json:"object"`
			More   bool           `json:"earlier_left_out"`
			Writes []historyWrite `json:"writes"`
		}{objectJSON{m.Cluster, m.Group, m.Resource, kind, m.Namespace, m.Name}, more, out}}
	if o.format != "table" && o.format != "wide" {
		return l.write(e.stdout, o.format, o.layout)
	}
	head := l.head
	changes := make([]string, 0, len(out))
	for _, w := range out {
		if w.Change != "" {
			changes = append(changes, w.Change)
		}
	}
	n, err := idLength(ctx, st, o.format, changes...)
	if err != nil {
		return err
	}
	rows := make([][]string, len(out))
	for i, w := range out {
		after := "-"
		if i > 0 {
			after = "+" + dur(w.AfterNS)
		}
		rows[i] = []string{timeOfDay(w.NS), after, w.Verb + sub(w.Subresource), strconv.Itoa(w.Code), w.Writer, agent(w.UserAgent),
			changeText(w.ObjectWrite, n), causeText(w.ObjectWrite, m.ObjectKey, true), orDash(w.ResourceVersion)}
		if o.format == "wide" {
			rows[i][0] = rfc3339(w.NS)
		}
	}
	l.rows = rows
	title := fmt.Sprintf("%s: %s", describeMatch(m, false), present.Plural(len(out), "write"))
	if more {
		title += fmt.Sprintf(" (the last %d; --limit 0 lists them all)", len(out))
	}
	if len(ws) > 0 {
		title += fmt.Sprintf(" in the order they completed, from %s UTC", clock(ws[0].NS))
	}
	if !o.layout.noHeaders {
		fmt.Fprintln(e.stdout, present.Printable(title))
	}
	if !o.diff {
		return l.write(e.stdout, o.format, o.layout)
	}
	// With diffs, as git log -p: each write's row, then what it changed,
	// the rows aligned as one table.
	lines := aligned(append([][]string{head}, rows...))
	fmt.Fprintln(e.stdout, lines[0])
	for i, l := range lines[1:] {
		fmt.Fprintln(e.stdout, l)
		diffLines(e.stdout, out[i].Diff)
	}
	return nil
}

// aligned lays rows out as the table format does (present.Printable cells, two
// spaces between columns) and returns them as lines, so that other lines
// may come between them.
func aligned(rows [][]string) []string {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(present.Printable(c)))
		}
	}
	out := make([]string, len(rows))
	for j, r := range rows {
		var b strings.Builder
		for i, c := range r {
			c = present.Printable(c)
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
			}
		}
		out[j] = b.String()
	}
	return out
}

// diffLines writes diff lines indented, each Printable.
func diffLines(w io.Writer, lines []string) {
	for _, l := range lines {
		fmt.Fprintln(w, "    "+present.Printable(l))
	}
}

// addDiffs sets the diff of each write: its object against the object
// the closest earlier write of the object stored, whether listed or not.
func addDiffs(ctx context.Context, st cpid.ChangeReader, k cpid.ObjectKey, ws []historyWrite) error {
	// Every write up to the last listed, unfiltered, with bodies: the base
	// of a listed write may be one the filters left out.
	all, _, err := st.ObjectHistory(ctx, cpid.HistoryQuery{Object: k, UntilNS: ws[len(ws)-1].NS + 1, Bodies: true})
	if err != nil {
		return err
	}
	at := make(map[int64]int, len(all))
	for i, a := range all {
		at[a.EventID] = i
	}
	for i := range ws {
		j, ok := at[ws[i].EventID]
		if !ok {
			continue // written after the listing was read
		}
		cur := all[j]
		base := ""
		for b := j - 1; b >= 0; b-- {
			if all[b].Object != "" {
				base = all[b].Object
				break
			}
		}
		switch present.Changed(present.Written{Attempt: cur.Attempt, Verb: cur.Verb, Level: cur.Level, Object: cur.Object, Request: cur.Request}, base != "") {
		case present.ChangeFailed:
			ws[i].Diff = []string{fmt.Sprintf("(failed with %d: changed nothing)", cur.Code)}
		case present.ChangeRequest:
			ws[i].Diff = append([]string{"(no object stored in the audit log; the request body:)"}, indent(present.JSONLines(cur.Request))...)
		case present.ChangeDeleted:
			ws[i].Diff = []string{"(deleted)"}
		case present.ChangeMetadata, present.ChangeNoObject:
			ws[i].Diff = []string{"(no body in the audit log: Metadata level, or a binding, Scale or Status response)"}
		case present.ChangeFirst:
			ws[i].Diff = append([]string{"(the first object stored, whole)"}, present.ObjectDiff("", cur.Object, 0)...)
		default:
			ws[i].Diff = present.ObjectDiff(base, cur.Object, 3)
			if len(ws[i].Diff) == 0 {
				ws[i].Diff = []string{"(no change but metadata.resourceVersion and managedFields)"}
			}
		}
	}
	return nil
}

// indent indents each line by two spaces.
func indent(ls []string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = "  " + l
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// agent is the product of a user agent: kube-controller-manager/v1.37.2
// of "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abc/...".
func agent(ua string) string {
	p, _, _ := strings.Cut(ua, " ")
	return p
}

// shortID is the first n characters of an id (0: all of it): with n from
// idLength, a prefix unique in the database, which every command takes.
func shortID(id string, n int) string {
	if n > 0 && utf8.RuneCountInString(id) > n {
		return string([]rune(id)[:n])
	}
	return id
}

// changeText names a write's change, by its first n characters (0: whole),
// and what started it.
func changeText(w cpid.ObjectWrite, n int) string {
	if w.Change == "" {
		return "- (background)"
	}
	return shortID(w.Change, n) + " " + string(w.Trigger)
}

// causeText says why a write happened: the rule, the write it reacted to,
// the hop and why it took that long; or that it started its change. The
// cause's object is named in full unless it is self.
func causeText(w cpid.ObjectWrite, self cpid.ObjectKey, short bool) string {
	if w.Cause == nil {
		switch {
		case w.Origin == "root" && w.TriggerDetail != "":
			return "starts the change: " + w.TriggerDetail
		case w.Origin == "root":
			return "starts the change"
		case w.Attempt:
			return "-"
		}
		return "none found"
	}
	c := w.Cause
	obj := object(cpid.KindOf("", c.Resource), c.Namespace, c.Name)
	if c.Resource == self.Resource && c.APIGroup == self.Group && c.Namespace == self.Namespace && c.Name == self.Name {
		obj = "itself"
	} else if short && c.Namespace == self.Namespace {
		obj = cpid.KindOf("", c.Resource) + " " + c.Name
	}
	s := fmt.Sprintf("%s: %s %s %s", w.Rule, c.Writer, c.Verb+sub(c.Subresource), obj)
	if short {
		s += fmt.Sprintf(" +%s %s", dur(w.HopNS), w.Explain)
	}
	return s
}
