package browser

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The test needs a cpid-tui binary and Chromium; make verify-report gives
// both (and installs Chromium from Debian when it is missing).
var (
	cpidTUI  = os.Getenv("CPID_TUI")
	chromium = os.Getenv("CHROMIUM")
	// shots is where the figure-5 screenshots go (docs/ when updating
	// them); none when empty.
	shots = os.Getenv("REPORT_SHOTS")
)

// fixtures are the real recorded bundles, ../../fixtures/NAME/bundle, by
// name.
func fixtures(t *testing.T) []string {
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

// critical is the color of the critical path in the charts (#d1495b).
var critical = [3]uint8{0xd1, 0x49, 0x5b}

func need(t *testing.T) {
	t.Helper()
	if cpidTUI == "" || chromium == "" {
		t.Skip("CPID_TUI and CHROMIUM not set: run make verify-report")
	}
}

func browser(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	bctx, stop := Start(ctx, chromium)
	t.Cleanup(stop)
	return bctx
}

// cpid runs cpid-tui and returns its stdout.
func cpid(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(cpidTUI, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cpid-tui %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// TestReportsInChromium opens the report of each real fixture's first and
// largest change in Chromium, offline, at a desktop's and a phone's width:
// the page requests nothing but itself and logs no warning or error; the
// chart that fits the width is shown and the other hidden; every write of
// the change (as query timeline lists it) is a mark laid out with a size,
// in one lane per writer; the critical path's red is painted; the page
// is no wider than a phone (only the tables scroll sideways). Figure-5's
// Deployment change is screenshotted into $REPORT_SHOTS.
func TestReportsInChromium(t *testing.T) {
	need(t)
	bctx := browser(t)
	for _, f := range fixtures(t) {
		t.Run(f, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "cpid.db")
			cpid(t, "ingest", "--quiet", "--db", db, filepath.Join("../../fixtures", f, "bundle"))
			cpid(t, "reconstruct", "--db", db)
			var cs []struct {
				ID        string `json:"id"`
				StartedNS int64  `json:"started_ns"`
				Writes    int    `json:"writes"`
				Verb      string `json:"verb"`
				Kind      string `json:"kind"`
			}
			if err := json.Unmarshal(cpid(t, "query", "changes", "--db", db, "--limit", "0", "--output", "json"), &cs); err != nil || len(cs) == 0 {
				t.Fatalf("query changes: %v, %d changes", err, len(cs))
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
			ids := []string{first.ID}
			if largest.ID != first.ID {
				ids = append(ids, largest.ID)
			}
			// The screenshots of the docs are of figure-5's Deployment.
			docID := ""
			for _, c := range cs {
				if f == "figure-5" && c.Verb == "create" && c.Kind == "Deployment" {
					docID = c.ID
				}
			}
			if docID != "" && !slices.Contains(ids, docID) {
				ids = append(ids, docID)
			}
			for _, id := range ids {
				var ts []struct {
					Writer string `json:"writer"`
				}
				if err := json.Unmarshal(cpid(t, "query", "timeline", id, "--db", db, "--output", "json"), &ts); err != nil {
					t.Fatal(err)
				}
				writers := map[string]bool{}
				for _, x := range ts {
					writers[x.Writer] = true
				}
				page := filepath.Join(dir, id+".html")
				cpid(t, "report", id, "--db", db, "-o", page)
				for _, v := range []Viewport{Desktop, Phone} {
					// The checks look at the page down to the chart; the
					// desktop screenshot of the docs down to the SLIs.
					shotUntil := "timeline"
					docs := id == docID && shots != ""
					if docs && v == Desktop {
						shotUntil = "sli"
					}
					p, err := Open(bctx, page, v, shotUntil)
					if err != nil {
						t.Fatal(err)
					}
					checkPage(t, id, v, p, len(ts), len(writers))
					if docs {
						small, err := Paletted(p.Shot)
						if err != nil {
							t.Fatal(err)
						}
						name := filepath.Join(shots, "report-figure-5-"+v.Name+".png")
						if err := os.WriteFile(name, small, 0o644); err != nil {
							t.Fatal(err)
						}
						size, _ := Size(small)
						t.Logf("wrote %s (%dx%d, %d bytes)", name, size.X, size.Y, len(small))
					}
				}
			}
		})
	}
}

// checkPage checks what Chromium saw of a report of a change of writes
// writes by writers writers.
func checkPage(t *testing.T, id string, v Viewport, p Page, writes, writers int) {
	t.Helper()
	if len(p.Requests) != 1 || !strings.HasPrefix(p.Requests[0], "file://") {
		t.Errorf("%s %s: requests %q, want the page alone", id, v.Name, p.Requests)
	}
	for _, m := range p.Problems {
		t.Errorf("%s %s: %s", id, v.Name, m)
	}
	want := "wide"
	if v == Phone {
		want = "narrow"
	}
	l := p.Layout
	if len(l.Charts) != 2 {
		t.Fatalf("%s %s: %d charts, want 2", id, v.Name, len(l.Charts))
	}
	for _, c := range l.Charts {
		if c.Marks != writes {
			t.Errorf("%s %s: the %s chart has %d marks, want %d writes", id, v.Name, c.Layout, c.Marks, writes)
		}
		if c.Lanes < writers {
			t.Errorf("%s %s: the %s chart has %d lanes for %d writers", id, v.Name, c.Layout, c.Lanes, writers)
		}
		switch {
		case c.Layout == want && !c.Shown:
			t.Errorf("%s %s: the %s chart is not shown", id, v.Name, c.Layout)
		case c.Layout == want && c.Drawn != writes:
			t.Errorf("%s %s: %d of %d marks of the %s chart are laid out", id, v.Name, c.Drawn, writes, c.Layout)
		case c.Layout != want && c.Shown:
			t.Errorf("%s %s: the %s chart is shown too", id, v.Name, c.Layout)
		}
		if c.Layout == want && c.Width > float64(l.Width) && v == Phone {
			t.Errorf("%s %s: the chart is %.0f px wide on a %d px screen", id, v.Name, c.Width, l.Width)
		}
	}
	if l.Rows != writes {
		t.Errorf("%s %s: %d rows in the write table, want %d", id, v.Name, l.Rows, writes)
	}
	if l.ScrollWidth > l.Width {
		t.Errorf("%s %s: the page is %d px wide in a %d px window", id, v.Name, l.ScrollWidth, l.Width)
	}
	n, err := Pixels(p.Shot, critical)
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Errorf("%s %s: %d pixels of the critical path's color painted", id, v.Name, n)
	}
}

// TestChecksFail is the negative control: a page that fetches an image
// and a style sheet and logs an error is caught on each count, so that the
// checks above can fail.
func TestChecksFail(t *testing.T) {
	need(t)
	bctx := browser(t)
	page := filepath.Join(t.TempDir(), "bad.html")
	bad := `<!DOCTYPE html><html><head><link rel="stylesheet" href="https://example.com/a.css"></head>
<body><img src="http://192.0.2.1/x.png" alt=""><script>console.error("boom")</script></body></html>`
	if err := os.WriteFile(page, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Open(bctx, page, Desktop, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"https://example.com/a.css", "http://192.0.2.1/x.png"} {
		if !slices.Contains(p.Requests, u) {
			t.Errorf("the request of %s was not seen: %q", u, p.Requests)
		}
	}
	if !slices.ContainsFunc(p.Problems, func(m string) bool { return strings.Contains(m, "boom") }) {
		t.Errorf("console.error was not seen: %q", p.Problems)
	}
	if !slices.ContainsFunc(p.Problems, func(m string) bool { return strings.HasPrefix(m, "log error network") }) {
		t.Errorf("the failed loads were not logged: %q", p.Problems)
	}
	if n, err := Pixels(p.Shot, critical); err != nil || n != 0 {
		t.Errorf("%d pixels of the critical path's color on a page without it (%v)", n, err)
	}
}
