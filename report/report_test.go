package report

import (
	"bytes"
	"encoding/xml"
	"slices"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
)

// hostile is a report whose strings from the logs are markup in both
// formats: a writer named like a script, an object with table pipes and
// backticks, a log line closing a code block.
func hostile() *Report {
	root := cpid.TimelineEntry{EventID: 1, NS: 1_000, ReceivedNS: 0, Writer: "<script>alert(1)</script>", Verb: "create",
		Kind: "Pod", Namespace: "a|b", Name: "x`y*z_[w](http://evil.example/)", Critical: true}
	next := cpid.TimelineEntry{EventID: 2, NS: 5_000_000, ReceivedNS: 4_000_000, Writer: `ctl" onmouseover="x`, Verb: "update",
		Kind: "Pod", Namespace: "a|b", Name: "p", CauseID: 1, CauseNS: 1_000, HopNS: 4_999_000, Critical: true,
		Explain: cpid.ExplainInformer, Rule: "self", Confidence: cpid.ConfidenceExact}
	r := &Report{Change: cpid.ChangeRow{ID: "c`1", User: "<b>me</b>", Verb: "create", Kind: "Pod", Namespace: "a|b", Name: "x",
		Trigger: cpid.TriggerUser, StartedNS: 0, SettledNS: 5_000_000, Writes: 2, Objects: 1}}
	r.writes([]cpid.TimelineEntry{root, next})
	r.ByReason, r.ByWriter = shares(map[string]int64{"informer": 4_999_000}), shares(map[string]int64{next.Writer: 4_999_000})
	r.Warnings = []string{"<img src=x>"}
	r.Revisions = []RevisionDiff{{Write: r.Writes[1], Base: "#1 `rv`", Lines: []string{"- a", "+ ```", "+ </pre><script>"}}}
	r.Logs = cpid.ChangeLogSet{Exact: true, Lines: []cpid.LogLine{{TimeNS: 2_000, Level: "info", Component: "c", Msg: "```\n# not a heading"}}}
	return r
}

// TestHTMLEscapes: what the logs hold is text in the page, never markup.
func TestHTMLEscapes(t *testing.T) {
	var b bytes.Buffer
	if err := hostile().HTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script", "<b>me", "<img", `onmouseover="x`, "</pre><script>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q as markup", bad)
		}
	}
	for _, good := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;b&gt;me&lt;/b&gt;", "&lt;img src=x&gt;"} {
		if !strings.Contains(page, good) {
			t.Errorf("the page does not show %q as text", good)
		}
	}
	// Each chart is well-formed XML with the hostile names as text.
	for _, l := range []Layout{Wide, Narrow} {
		var svg bytes.Buffer
		if err := hostile().SVG(&svg, l); err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(&svg)
		d.Strict = true
		var names []string
		for {
			tok, err := d.Token()
			if err != nil {
				if err.Error() != "EOF" {
					t.Fatalf("%s chart: %v", l.Name, err)
				}
				break
			}
			if se, ok := tok.(xml.StartElement); ok {
				for _, a := range se.Attr {
					if a.Name.Local == "data-lane" {
						names = append(names, a.Value)
					}
				}
			}
		}
		if want := []string{"<script>alert(1)</script>", `ctl" onmouseover="x`}; !slices.Equal(names, want) {
			t.Errorf("%s chart lanes %q, want %q", l.Name, names, want)
		}
	}
}

// TestMarkdownEscapes: in Markdown, the logs' strings neither make markup
// nor break the tables, and code blocks are not closed early.
func TestMarkdownEscapes(t *testing.T) {
	var b bytes.Buffer
	if err := hostile().Markdown(&b, "chart.svg"); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	for _, want := range []string{
		`\<script\>alert(1)\</script\>`,                       // no raw HTML
		"Pod a\\|b/x\\`y\\*z\\_\\[w\\](http://evil.example/)", // no code span, emphasis or link
		"Change `` c`1 ``",                                    // a code span around a backtick
		"````diff\n- a\n+ ```\n+ </pre><script>\n````",        // the fence outlasts the body's
		"````text\n", // and the log's
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("markdown does not hold %q:\n%s", want, doc)
		}
	}
	// Every table row has the columns of its header.
	var cols int
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(l, "|") {
			cols = 0
			continue
		}
		n := strings.Count(l, "|") - strings.Count(l, `\|`)
		if cols == 0 {
			cols = n
		} else if n != cols {
			t.Errorf("row with %d cells in a table of %d: %s", n-1, cols-1, l)
		}
	}
}

func TestTicks(t *testing.T) {
	for _, c := range []struct {
		name string
		span int64
		n    int
		want string
	}{
		{"140ms in 8", 140_300_000, 8, "0 20ms 40ms 60ms 80ms 100ms 120ms 140ms"},
		{"140ms in 4", 140_300_000, 4, "0 50ms 100ms"},
		{"6.6s in 8", 6_633_000_000, 8, "0 1s 2s 3s 4s 5s 6s"},
		{"1.05s in 4", 1_051_400_000, 4, "0 0.5s 1.0s"},
		{"800µs in 8", 800_000, 8, "0 100µs 200µs 300µs 400µs 500µs 600µs 700µs 800µs"},
		{"one write", 1, 8, "0 1ns"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := ticks(c.span, c.n)
			var got []string
			for _, x := range ts {
				step := int64(1)
				if len(ts) > 1 {
					step = ts[1]
				}
				got = append(got, tickLabel(x, step))
			}
			if s := strings.Join(got, " "); s != c.want {
				t.Errorf("ticks(%d, %d) = %s, want %s", c.span, c.n, s, c.want)
			}
			if len(ts)-1 > c.n+1 {
				t.Errorf("%d intervals, want about %d", len(ts)-1, c.n)
			}
		})
	}
}

// TestAxisTicks: an axis that starts before the change (at a cause it
// waited for) has its ticks at multiples of the step from the change's
// start, before it and after.
func TestAxisTicks(t *testing.T) {
	for _, c := range []struct {
		name     string
		from, to int64
		want     []int64
	}{
		{"from the start", 0, 140_300_000, []int64{0, 20e6, 40e6, 60e6, 80e6, 100e6, 120e6, 140e6}},
		{"a node's heartbeat 31s before", -31_016_995_000, 10_247_638_000, []int64{-30e9, -25e9, -20e9, -15e9, -10e9, -5e9, 0, 5e9, 10e9}},
		{"a cause 3ms before: no tick before 0", -3_000_000, 17_000_000, []int64{0, 5e6, 10e6, 15e6}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, _ := axisTicks(c.from, c.to, 8); !slices.Equal(got, c.want) {
				t.Errorf("axisTicks(%d, %d, 8) = %v, want %v", c.from, c.to, got, c.want)
			}
		})
	}
}
