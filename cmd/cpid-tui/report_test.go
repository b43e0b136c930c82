package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
)

// realBundles are the real recorded bundles, fixtures/NAME/bundle
// (fixtures/README.md), by name.
func realBundles(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob("../../fixtures/*/bundle")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixture bundles: %v", err)
	}
	names := make([]string, len(dirs))
	for i, d := range dirs {
		names[i] = filepath.Base(filepath.Dir(d))
	}
	return names
}

// TestReportFixtures renders the report of each real fixture's first and
// largest change in both formats and checks them against what query
// reads of the same change: the HTML is well formed and its SVG charts
// are well-formed XML, each chart has one lane per writer (and per
// service of a controller span) and one mark per write of the timeline,
// the critical path's writes marked as such; the write table has a row
// per write; nothing in the page would load anything (no script, no
// link, no image, no URL in an attribute or a style). The Markdown's
// chart file passes the same checks, and its table has a row per write.
func TestReportFixtures(t *testing.T) {
	t.Parallel()
	for _, f := range realBundles(t) {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			db := reconstructedFixture(t, filepath.Join("../../fixtures", f, "bundle"))
			cs := queryJSON[[]cpid.ChangeRow](t, "query", "changes", "--db", db, "--limit", "0", "--output", "json")
			if len(cs) == 0 {
				t.Fatal("query changes: no change")
			}
			first, largest := cs[0], cs[0]
			for _, c := range cs {
				if c.StartedNS < first.StartedNS {
					first = c
				}
				if c.Writes > largest.Writes || c.Writes == largest.Writes && c.StartedNS < largest.StartedNS {
					largest = c
				}
			}
			picked := []cpid.ChangeRow{first}
			if largest.ID != first.ID {
				picked = append(picked, largest)
			}
			for _, c := range picked {
				checkReport(t, db, c.ID)
			}
		})
	}
}

// checkReport renders change id in both formats and checks them.
func checkReport(t *testing.T, db, id string) {
	t.Helper()
	ts := queryJSON[[]cpid.TimelineEntry](t, "query", "timeline", id, "--db", db, "--output", "json")
	spans := queryJSON[[]cpid.SpanRow](t, "query", "spans", id, "--db", db, "--output", "json")
	// The lanes: the writers in order of their first write, then the
	// services of controller spans that wrote nothing.
	var lanes []string
	for _, x := range ts {
		if w := present.Printable(x.Writer); !slices.Contains(lanes, w) {
			lanes = append(lanes, w)
		}
	}
	for _, s := range spans {
		if s.Kind == "controller" && !slices.Contains(lanes, present.Printable(s.Service)) {
			lanes = append(lanes, present.Printable(s.Service))
		}
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if code, _, e := runCmd(t, nil, "report", id, "--db", db, "-o", page); code != 0 {
		t.Fatalf("report %s: %d %s", id, code, e)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	checkPage(t, string(b))
	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(string(b), -1)
	if len(svgs) != 2 {
		t.Fatalf("%s: %d SVG charts in the page, want 2 (wide and narrow)", id, len(svgs))
	}
	for _, s := range svgs {
		checkChart(t, id, s, ts, lanes)
	}
	for _, x := range ts {
		if n := strings.Count(string(b), fmt.Sprintf(`<tr id="w%d"`, x.EventID)); n != 1 {
			t.Errorf("%s: write %d has %d rows in the table, want 1", id, x.EventID, n)
		}
	}

	// Markdown, named by a prefix of the id, with its chart beside it.
	doc := filepath.Join(dir, "post-mortem.md")
	if code, _, e := runCmd(t, nil, "report", id[:13], "--db", db, "-o", doc); code != 0 {
		t.Fatalf("report %s --format md: %d %s", id[:13], code, e)
	}
	mdb, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	checkMarkdown(t, string(mdb), "post-mortem.timeline.svg", len(ts))
	svg, err := os.ReadFile(filepath.Join(dir, "post-mortem.timeline.svg"))
	if err != nil {
		t.Fatal(err)
	}
	checkChart(t, id, string(svg), ts, lanes)
	if strings.Contains(string(svg), "narrow") {
		t.Errorf("%s: the Markdown's chart is the narrow one", id)
	}
}

// queryJSON runs a cpid-tui command and decodes its JSON output.
func queryJSON[T any](t *testing.T, args ...string) T {
	t.Helper()
	var v T
	code, out, e := runCmd(t, nil, args...)
	if code != 0 {
		t.Fatalf("%s: %d %s", strings.Join(args, " "), code, e)
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return v
}

// voidElements have no end tag in HTML.
var voidElements = map[string]bool{"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true}

// fetching are elements that load or run something; a report has none.
var fetching = map[string]bool{"script": true, "link": true, "img": true, "iframe": true, "frame": true, "object": true,
	"embed": true, "image": true, "use": true, "foreignobject": true, "audio": true, "video": true, "source": true,
	"base": true, "form": true, "picture": true, "track": true, "portal": true}

// urlAttrs are attributes that name something to load or go to.
var urlAttrs = map[string]bool{"src": true, "href": true, "srcset": true, "action": true, "formaction": true, "poster": true,
	"data": true, "xlink:href": true, "background": true, "ping": true, "http-equiv": true, "manifest": true}

// checkPage checks that page is well-formed HTML (each element closed in
// order, a doctype first) that loads nothing.
func checkPage(t *testing.T, page string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(page))
	var stack []string
	doctype := false
	inStyle := false
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Fatalf("html: %v", z.Err())
			}
			break
		}
		tok := z.Token()
		switch tt {
		case html.DoctypeToken:
			doctype = len(stack) == 0 && strings.EqualFold(tok.Data, "html")
		case html.StartTagToken, html.SelfClosingTagToken:
			name := strings.ToLower(tok.Data)
			if fetching[name] {
				t.Errorf("html: a <%s> element", name)
			}
			for _, a := range tok.Attr {
				k, v := strings.ToLower(a.Key), strings.ToLower(strings.TrimSpace(a.Val))
				if a.Namespace != "" {
					k = a.Namespace + ":" + k
				}
				if k == "xmlns" && v == "http://www.w3.org/2000/svg" {
					continue // a namespace name, never fetched
				}
				if urlAttrs[k] || strings.Contains(v, "url(") || strings.HasPrefix(v, "http:") || strings.HasPrefix(v, "https:") ||
					strings.HasPrefix(v, "//") || strings.HasPrefix(v, "javascript:") || strings.HasPrefix(k, "on") {
					t.Errorf("html: <%s %s=%q> names something to load or run", name, a.Key, a.Val)
				}
			}
			if tt == html.StartTagToken && !voidElements[name] {
				stack = append(stack, name)
			}
			inStyle = name == "style"
		case html.EndTagToken:
			name := strings.ToLower(tok.Data)
			if len(stack) == 0 || stack[len(stack)-1] != name {
				t.Fatalf("html: </%s> closes %v", name, stack)
			}
			stack = stack[:len(stack)-1]
			inStyle = false
		case html.TextToken:
			if inStyle && (strings.Contains(tok.Data, "url(") || strings.Contains(tok.Data, "@import") || strings.Contains(tok.Data, "@font-face")) {
				t.Errorf("html: a style loads something: %.80q", tok.Data)
			}
		}
	}
	if !doctype {
		t.Error("html: no <!DOCTYPE html> first")
	}
	if len(stack) != 0 {
		t.Errorf("html: elements left open: %v", stack)
	}
}

// svgNode is an element of a chart, as encoding/xml reads it.
type svgNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []svgNode  `xml:",any"`
}

func (n svgNode) attr(name string) (string, bool) {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

func (n svgNode) walk(fn func(svgNode)) {
	fn(n)
	for _, c := range n.Nodes {
		c.walk(fn)
	}
}

// checkChart checks that a chart is well-formed XML with one lane per
// name of lanes (in order) and one mark per write of ts, the writes of
// the critical path marked critical and the failed ones failed.
func checkChart(t *testing.T, id, svg string, ts []cpid.TimelineEntry, lanes []string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	d.Strict = true
	var root svgNode
	if err := d.Decode(&root); err != nil {
		t.Fatalf("%s: the chart is not well-formed XML: %v", id, err)
	}
	if root.XMLName.Space != "http://www.w3.org/2000/svg" || root.XMLName.Local != "svg" {
		t.Fatalf("%s: the chart's root is %v", id, root.XMLName)
	}
	layout, _ := root.attr("data-layout")
	var plot [2]float64
	var span [2]int64
	pa, _ := root.attr("data-plot")
	na, _ := root.attr("data-ns")
	if n, err := fmt.Sscan(pa, &plot[0], &plot[1]); n != 2 || plot[1] <= plot[0] {
		t.Fatalf("%s %s: data-plot %q: %v", id, layout, pa, err)
	}
	if n, err := fmt.Sscan(na, &span[0], &span[1]); n != 2 || span[1] <= span[0] {
		t.Fatalf("%s %s: data-ns %q: %v", id, layout, na, err)
	}
	var gotLanes []string
	marks := map[int64]string{}
	hops := map[int64]float64{} // the length of each write's hop
	root.walk(func(n svgNode) {
		if ev, ok := n.attr("data-hop"); ok {
			var e int64
			var x1, x2 float64
			fmt.Sscan(ev, &e)
			a1, _ := n.attr("x1")
			a2, _ := n.attr("x2")
			fmt.Sscan(a1, &x1)
			fmt.Sscan(a2, &x2)
			hops[e] = x2 - x1
		}
		if l, ok := n.attr("data-lane"); ok {
			gotLanes = append(gotLanes, l)
		}
		if ev, ok := n.attr("data-event"); ok {
			var e int64
			fmt.Sscan(ev, &e)
			class, _ := n.attr("class")
			if _, dup := marks[e]; dup {
				t.Errorf("%s %s: write %d marked twice", id, layout, e)
			}
			marks[e] = class
		}
	})
	if !slices.Equal(gotLanes, lanes) {
		t.Errorf("%s %s: lanes\n%q\nwant one per writer\n%q", id, layout, gotLanes, lanes)
	}
	if len(marks) != len(ts) {
		t.Errorf("%s %s: %d marks, want %d writes", id, layout, len(marks), len(ts))
	}
	for _, x := range ts {
		class, ok := marks[x.EventID]
		want := "mark write"
		switch {
		case x.Attempt:
			want = "mark failed"
		case x.Critical:
			want = "mark critical"
		}
		if !ok {
			t.Errorf("%s %s: no mark of write %d (%s %s %s)", id, layout, x.EventID, x.Writer, x.Verb, x.Name)
		} else if class != want {
			t.Errorf("%s %s: write %d is marked %q, want %q", id, layout, x.EventID, class, want)
		}
		// Every wait is drawn whole, from when its cause became visible,
		// however long before the change that was.
		if x.CauseID == 0 || x.HopNS <= 0 {
			continue
		}
		want2 := float64(x.HopNS) / float64(span[1]-span[0]) * (plot[1] - plot[0])
		if got, ok := hops[x.EventID]; !ok || got < want2-0.25 || got > want2+0.25 || x.CauseNS < span[0] {
			t.Errorf("%s %s: write %d (%s %s %s) waited %dns from %d: its hop is %.1f long (drawn: %v), want %.1f on an axis from %d",
				id, layout, x.EventID, x.Writer, x.Verb, x.Name, x.HopNS, x.CauseNS, got, ok, want2, span[0])
		}
	}
}

// checkMarkdown checks that the Markdown shows its chart from the file
// beside it, links and loads nothing else, leaves no raw HTML outside
// code blocks, and lists every write.
func checkMarkdown(t *testing.T, doc, chart string, writes int) {
	t.Helper()
	images := regexp.MustCompile(`!\[[^\]]*\]\(([^)]*)\)`).FindAllStringSubmatch(doc, -1)
	if len(images) != 1 || images[0][1] != chart {
		t.Errorf("markdown: images %q, want the chart %s alone", images, chart)
	}
	fenceRe := regexp.MustCompile("^(`{3,})")
	fence, rows, inWrites := "", 0, false
	for i, l := range strings.Split(doc, "\n") {
		if m := fenceRe.FindString(l); m != "" && (fence == "" || strings.TrimSpace(l) == fence) {
			if fence == "" {
				fence = m
			} else {
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		if strings.Contains(l, "](http") || strings.Contains(l, "](//") || strings.Contains(l, "<http") {
			t.Errorf("markdown line %d links out: %s", i+1, l)
		}
		if regexp.MustCompile(`(^|[^\\])<`).MatchString(l) {
			t.Errorf("markdown line %d has raw HTML: %s", i+1, l)
		}
		if strings.HasPrefix(l, "## ") {
			inWrites = l == "## Every write"
		}
		if inWrites && (strings.HasPrefix(l, "| ● |") || strings.HasPrefix(l, "| ◆ |") || strings.HasPrefix(l, "| ✕ |")) {
			rows++
		}
	}
	if fence != "" {
		t.Error("markdown: a code block is left open")
	}
	if rows != writes {
		t.Errorf("markdown: %d rows of writes, want %d", rows, writes)
	}
}

// TestReportGolden compares the Markdown report of figure-5's Service
// change (its EndpointSlice merges the Deployment's change, the paper's
// Figure 5) with testdata/figure-5.report.golden.md (go test -update
// rewrites it).
func TestReportGolden(t *testing.T) {
	db := reconstructedFixture(t, "../../fixtures/figure-5/bundle")
	code, out, e := runCmd(t, nil, "report", "1e84d899-0591-415d-b8be-839e77cdfeca", "--db", db, "--format", "md")
	if code != 0 {
		t.Fatalf("report: %d %s", code, e)
	}
	if !strings.Contains(out, "Merged from other changes") || !strings.Contains(out, "create Deployment default/web") {
		t.Errorf("the Service change's report does not name the Deployment's change its EndpointSlice merged:\n%s", out)
	}
	golden := "testdata/figure-5.report.golden.md"
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(want, []byte(out)) {
		wl, gl := strings.Split(string(want), "\n"), strings.Split(out, "\n")
		for i := range min(len(wl), len(gl)) {
			if wl[i] != gl[i] {
				t.Errorf("line %d:\n  golden: %s\n  now:    %s", i+1, wl[i], gl[i])
				break
			}
		}
		t.Errorf("the report differs from %s (go test -update rewrites it after a deliberate change)", golden)
	}
}

// TestReportWaitsAddUp: on the recordings where the critical path's waits
// exceed the settled time, the report says why and how they add up: a
// node's loss whose first write waited 31 s on its node's last heartbeat,
// before the change (node-loss), hops that overlap (leader-gap-scale's
// Node create); the chart starts at the earliest cause, its ticks before
// the change's start counted back from it. Where they do not (kcm-restart's
// scale, 31.8 s of which 30.4 s a restart) it says nothing. The first
// writer is named for the change's trigger: "Started by" a user, "First
// write by" for a node's change.
func TestReportWaitsAddUp(t *testing.T) {
	for _, c := range []struct {
		fixture, id string
		trigger     cpid.Trigger
		want        []string
	}{
		{"node-loss", "498ba361", cpid.TriggerNode, []string{"| First write by | system:serviceaccount:kube-system:node-controller",
			"31.0s before the change started |", "31.0s of it is the wait of the path's first write (node-controller) on a cause before the change started",
			"The axis starts 31.0s before the change"}},
		{"leader-gap-scale", "8b76fbd2", cpid.TriggerUser, []string{"| Started by | kubernetes-admin", "overlapping by ", "is counted twice"}},
		{"kcm-restart", "75e00125", cpid.TriggerUser, []string{"| Started by | kubernetes-admin", "restart | 30.4s"}},
	} {
		t.Run(c.fixture, func(t *testing.T) {
			db := reconstructedFixture(t, filepath.Join("../../fixtures", c.fixture, "bundle"))
			code, out, e := runCmd(t, nil, "report", c.id, "--db", db, "--format", "md")
			if code != 0 {
				t.Fatalf("report %s: %d %s", c.id, code, e)
			}
			cs := queryJSON[[]cpid.ChangeRow](t, "query", "changes", "--db", db, "--limit", "0", "--output", "json")
			i := slices.IndexFunc(cs, func(x cpid.ChangeRow) bool { return strings.HasPrefix(x.ID, c.id) })
			if i < 0 || cs[i].Trigger != c.trigger {
				t.Fatalf("no %s change %s among %v", c.trigger, c.id, cs)
			}
			byReason, _ := cpid.TimeByReason(queryJSON[[]cpid.TimelineEntry](t, "query", "timeline", cs[i].ID, "--db", db, "--output", "json"))
			var waits int64
			for _, ns := range byReason {
				waits += ns
			}
			settled := regexp.MustCompile(`\| Settled after \| (\S+) \|`).FindStringSubmatch(out)
			if settled == nil {
				t.Fatalf("no settled time in the report:\n%s", out)
			}
			note := regexp.MustCompile(`The waits on the critical path \(\S+\) are more than the (\S+) the change took to settle: .*= (\S+)\.\n`).FindStringSubmatch(out)
			switch {
			case waits > cs[i].SettledNS-cs[i].StartedNS && note == nil:
				t.Errorf("the waits on the critical path (%dns) exceed the settled time (%dns), and the report does not say why:\n%s",
					waits, cs[i].SettledNS-cs[i].StartedNS, out)
			case waits <= cs[i].SettledNS-cs[i].StartedNS && note != nil:
				t.Errorf("the waits do not exceed the settled time, yet the report says: %s", note[0])
			case note != nil && (note[1] != settled[1] || note[2] != settled[1]):
				t.Errorf("the note does not add up to the settled time %s: %s", settled[1], note[0])
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("the report does not say %q:\n%s", w, out)
				}
			}
			checkReport(t, db, cs[i].ID)
		})
	}
}

// TestReportUsage: a wrong format or no id is a usage error, an unknown
// change a failure that says how to list them.
func TestReportUsage(t *testing.T) {
	db := reconstructedFixture(t, "../../fixtures/figure-5/bundle")
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no id", []string{"report", "--db", db}, 2, "Usage: cpid-tui report"},
		{"two ids", []string{"report", "--db", db, "a", "b"}, 2, "Usage: cpid-tui report"},
		{"format", []string{"report", "--db", db, "--format", "pdf", "1e84d899"}, 2, `--format "pdf": want one of html, md`},
		{"unknown change", []string{"report", "--db", db, "ffffffff"}, 1, "query changes lists them"},
		{"help", []string{"report", "-h"}, 0, "nothing fetched"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, e := runCmd(t, nil, c.args...)
			if c.name == "help" {
				e = out // help goes to standard output
			}
			if code != c.code || !strings.Contains(e, c.want) {
				t.Errorf("exit %d, want %d; stderr:\n%s\nwant %q", code, c.code, e, c.want)
			}
		})
	}
}
