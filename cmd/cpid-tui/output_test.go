package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// runWidth runs cpid-tui as runCmd does, with stdout taken to be a
// terminal of that many columns (0: a pipe).
func runWidth(t *testing.T, columns int, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), &env{stdin: strings.NewReader(""), stdout: &o, stderr: &e, columns: columns}, args)
	return code, o.String(), e.String()
}

// TestFitTable lays one table out at several widths: a pipe and a terminal
// wide enough cut nothing, a narrow one cuts the free text only, in the
// middle, one too narrow for that cuts nothing, wide shows ids whole, and
// --no-headers is the same table without its first line.
func TestFitTable(t *testing.T) {
	id := "0123abcd-6a4f-47dc-a93e-da38a9ba0d77"
	detail := "the node lifecycle controller marked the node NotReady after node-monitor-grace-period 40s"
	l := listing{head: []string{"OBJECT", "TRIGGER", "WRITER", "ID", "DETAIL"}, short: []int{3}, text: []int{4}, idLen: 10,
		rows: [][]string{
			{"Deployment default/a-very-long-deployment-name/scale", "controller-start", "kube-controller-manager/node-lifecycle-controller", id, detail},
			{"Node kwok-node-0", "node", "kubelet", id, "short"},
		}}
	whole := func(out string) {
		t.Helper()
		for _, s := range []string{l.rows[0][0], l.rows[0][1], l.rows[0][2], id[:10] + " "} {
			if !strings.Contains(out, s) {
				t.Errorf("%q is cut:\n%s", s, out)
			}
		}
		if strings.Contains(out, id[:11]) {
			t.Errorf("the id is not cut to 10:\n%s", out)
		}
	}
	table := func(width int, wide, noHeaders bool) string {
		var b strings.Builder
		if err := writeTable(&b, l, wide, layout{noHeaders: noHeaders, width: width}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	piped := table(0, false, false)
	whole(piped)
	if !strings.Contains(piped, detail) {
		t.Errorf("a pipe cuts the detail:\n%s", piped)
	}
	// The table is 225 columns wide, 147 with the detail cut to 12.
	if got := table(240, false, false); got != piped {
		t.Errorf("240 columns: cut although it fits:\n%s\nwant\n%s", got, piped)
	}
	for _, width := range []int{200, 150, 147} {
		got := table(width, false, false)
		whole(got)
		if !strings.Contains(got, "…") || strings.Contains(got, detail) {
			t.Errorf("%d columns: the detail is not cut:\n%s", width, got)
		}
		for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
			if n := utf8.RuneCountInString(line); n > width {
				t.Errorf("%d columns: a line of %d:\n%s", width, n, got)
			}
			if _, cell, ok := strings.Cut(line, id[:10]+"  "); ok && strings.HasPrefix(line, "Deployment") {
				head, tail, _ := strings.Cut(cell, "…")
				if !strings.HasPrefix(detail, head) || !strings.HasSuffix(detail, tail) || len(head) < 5 || len(tail) < 5 {
					t.Errorf("%d columns: the detail is not cut in its middle: %s", width, line)
				}
			}
		}
	}
	// 146 or 80 columns cannot hold the names and ids: nothing is cut, the
	// table wraps.
	for _, width := range []int{146, 80} {
		if got := table(width, false, false); got != piped {
			t.Errorf("%d columns: cut although it cannot fit:\n%s\nwant\n%s", width, got, piped)
		}
	}
	wide := table(120, true, false)
	if !strings.Contains(wide, id) || !strings.Contains(wide, detail) {
		t.Errorf("wide is not whole:\n%s", wide)
	}
	for _, width := range []int{0, 80, 150, 240} {
		for _, w := range []bool{false, true} {
			headed, bare := table(width, w, false), table(width, w, true)
			if _, rest, _ := strings.Cut(headed, "\n"); bare != rest {
				t.Errorf("%d columns, wide %v: --no-headers is not the table without its header:\n%s\nwant\n%s", width, w, bare, rest)
			}
		}
	}
}

// TestTableWidth runs the listings of basic as a terminal of 80, 110 and
// 200 columns and to a pipe: a pipe cuts nothing; a terminal cuts a
// table's free text only (history's CAUSE, hops' WINDOW, anomalies'
// DETAIL), every other cell as the pipe shows it; a table that fits is not
// cut; --no-headers drops the header line and changes no row.
func TestTableWidth(t *testing.T) {
	db := reconstructedFixture(t, "../../fixtures/basic/bundle")
	code, out, _ := runCmd(t, nil, "query", "changes", "--db", db, "-o", "name")
	ids := strings.Fields(out)
	if code != 0 || len(ids) < 2 {
		t.Fatalf("query changes -o name: %d %q", code, out)
	}
	for _, c := range []struct {
		args []string
		// text is the title of the table's free text column, next that
		// of the column after it ("" for none).
		text, next string
		// title is how many lines come before the header.
		title int
	}{
		{args: []string{"query", "changes"}},
		{args: []string{"query", "timeline", ids[1]}, title: 1},
		{args: []string{"query", "related", ids[1]}},
		{args: []string{"query", "sli"}},
		{args: []string{"query", "hops"}, text: "WINDOW", next: "HOPS"},
		{args: []string{"query", "anomalies"}, text: "DETAIL"},
		{args: []string{"history", "deploy/web"}, text: "CAUSE", title: 1},
		{args: []string{"diff", ids[1], ids[2]}},
	} {
		name := strings.Join(c.args[:2], " ")
		args := append(c.args, "--db", db)
		code, piped, e := runWidth(t, 0, args...)
		if code != 0 {
			t.Fatalf("%s: %d %s", name, code, e)
		}
		if strings.Contains(piped, "…") {
			t.Errorf("%s to a pipe cuts a cell:\n%s", name, piped)
		}
		pipedLines := strings.Split(piped, "\n")
		widest := 0
		for _, line := range pipedLines {
			widest = max(widest, utf8.RuneCountInString(line))
		}
		for _, width := range []int{80, 110, 200} {
			code, got, e := runWidth(t, width, args...)
			if code != 0 {
				t.Fatalf("%s at %d: %d %s", name, width, code, e)
			}
			if widest <= width || c.text == "" {
				if got != piped {
					t.Errorf("%s at %d columns is not what a pipe shows:\n%s\nwant\n%s", name, width, got, piped)
				}
			} else {
				sameButText(t, name, width, pipedLines, strings.Split(got, "\n"), c.text, c.next)
			}
			if c.args[0] == "diff" || c.args[1] == "timeline" {
				continue
			}
			// --no-headers: the same rows.
			_, bare, _ := runWidth(t, width, append(args, "--no-headers")...)
			lines := strings.SplitAfter(got, "\n")
			if want := strings.Join(lines[c.title+1:], ""); bare != want {
				t.Errorf("%s at %d --no-headers:\n%s\nwant the table without its header:\n%s", name, width, bare, want)
			}
		}
	}
	// A listing that needs its free text cut to fit does cut it.
	_, got, _ := runWidth(t, 110, "history", "deploy/web", "--db", db)
	if !strings.Contains(got, "…") {
		t.Errorf("history at 110 columns cuts no cause:\n%s", got)
	}
	for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if utf8.RuneCountInString(line) > 110 {
			t.Errorf("history at 110 columns: a line of %d:\n%s", utf8.RuneCountInString(line), line)
		}
	}
}

// sameButText checks that the lines of a table fitted to width differ from
// those of a pipe in the column titled text only (up to the column titled
// next), cut in the middle.
func sameButText(t *testing.T, name string, width int, piped, got []string, text, next string) {
	t.Helper()
	if len(got) != len(piped) {
		t.Errorf("%s at %d: %d lines, want %d", name, width, len(got), len(piped))
		return
	}
	columns := func(lines []string) (from, to int) {
		for _, l := range lines {
			if i := strings.Index(l, "  "+text); i >= 0 {
				from, to = i+2, -1
				if next != "" {
					to = strings.Index(l, "  "+next) + 2
				}
				return from, to
			}
		}
		t.Fatalf("%s: no column %s:\n%s", name, text, strings.Join(lines, "\n"))
		return 0, 0
	}
	pf, pt := columns(piped)
	gf, gt := columns(got)
	for i := range got {
		p, g := []rune(piped[i]), []rune(got[i])
		if len(p) <= pf || len(g) <= gf {
			if piped[i] != got[i] {
				t.Errorf("%s at %d: line %d cut outside %s:\n%s\nwant\n%s", name, width, i, text, got[i], piped[i])
			}
			continue
		}
		pc, gc := string(p[pf:]), string(g[gf:])
		if pt >= 0 && next != "" {
			pc, gc = string(p[pf:pt]), string(g[gf:gt])
			if string(p[pt:]) != string(g[gt:]) {
				t.Errorf("%s at %d: line %d cut after %s:\n%s\nwant\n%s", name, width, i, text, got[i], piped[i])
			}
		}
		if string(p[:pf]) != string(g[:gf]) {
			t.Errorf("%s at %d: line %d cut before %s:\n%s\nwant\n%s", name, width, i, text, got[i], piped[i])
		}
		pc, gc = strings.TrimSpace(pc), strings.TrimSpace(gc)
		if head, tail, cut := strings.Cut(gc, "…"); gc != pc && (!cut || !strings.HasPrefix(pc, head) || !strings.HasSuffix(pc, tail)) {
			t.Errorf("%s at %d: line %d: %q is not %q cut in its middle", name, width, i, gc, pc)
		}
	}
}

// TestUniquePrefix adds to basic's database a change whose id shares its
// first 10 characters with another's, and a CPID that shares 12 with a
// third's: every listing then shows ids by their first 13 characters, and
// those name one change or CPID where 8 are ambiguous.
func TestUniquePrefix(t *testing.T) {
	db := reconstructedFixture(t, "../../fixtures/basic/bundle")
	code, out, _ := runCmd(t, nil, "query", "changes", "--db", db, "-o", "name")
	ids := strings.Fields(out)
	if code != 0 || len(ids) < 3 {
		t.Fatalf("query changes -o name: %d %q", code, out)
	}
	// history deploy/web lists the writes of most changes.
	_, js, _ := runCmd(t, nil, "history", "deploy/web", "--db", db, "-o", "json")
	var h struct{ Writes []struct{ Change string } }
	if err := json.Unmarshal([]byte(js), &h); err != nil {
		t.Fatal(err)
	}
	x, y := h.Writes[0].Change, h.Writes[len(h.Writes)-1].Change
	if x == "" || y == "" || x == y {
		t.Fatalf("history deploy/web: changes %q and %q", x, y)
	}
	other := func(id string, i int) string {
		c := byte('0')
		if id[i] == c {
			c = '1'
		}
		return id[:i] + string(c) + id[i+1:]
	}
	twin, cpid := other(x, 10), other(y, 12)
	s, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := s.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`CREATE TEMP TABLE twin AS SELECT * FROM changes WHERE id = ?`, []any{x}},
		{`UPDATE twin SET id = ?`, []any{twin}},
		{`INSERT INTO changes SELECT * FROM twin`, nil},
		{`INSERT INTO mergelogs (cpid, ts_ns, service, origin, cluster) SELECT ?, ts_ns, service, origin, cluster FROM mergelogs WHERE cpid = ?`, []any{cpid, y}},
	} {
		if _, err := conn.ExecContext(context.Background(), q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	conn.Close()
	s.Close()

	// Pasting 8 characters is ambiguous; 13 name one.
	for _, c := range [][]string{{"query", "timeline", x[:8]}, {"query", "related", y[:12]}} {
		if code, _, e := runCmd(t, nil, append(c, "--db", db)...); code == 0 || !strings.Contains(e, "ambiguous") {
			t.Errorf("%v: exit %d, %s; want ambiguous", c, code, e)
		}
	}
	for _, c := range [][]string{{"query", "timeline", x[:13]}, {"query", "timeline", twin[:13]}, {"query", "related", y[:13]}} {
		if code, _, e := runCmd(t, nil, append(c, "--db", db)...); code != 0 {
			t.Errorf("%v: exit %d, %s", c, code, e)
		}
	}
	shows := func(args []string, want ...string) {
		t.Helper()
		code, out, e := runCmd(t, nil, append(args, "--db", db)...)
		if code != 0 {
			t.Fatalf("%v: %d %s", args, code, e)
		}
		for _, id := range want {
			if !strings.Contains(out, id[:13]) || strings.Contains(out, id[:14]) {
				t.Errorf("%v: want %s shown by its first 13 characters:\n%s", args, id, out)
			}
		}
	}
	shows([]string{"query", "changes"}, append(ids, twin)...)
	var changes []string
	for _, w := range h.Writes {
		if w.Change != "" {
			changes = append(changes, w.Change)
		}
	}
	shows([]string{"history", "deploy/web"}, changes...)
	if _, out, _ := runCmd(t, nil, "query", "related", x, "--db", db); !strings.Contains(out, "  "+x[:13]+"\n") {
		t.Errorf("query related: want its CHANGES by their first 13 characters:\n%s", out)
	}
	// diff's summary names the two changes by the same prefix.
	if code, out, e := runCmd(t, nil, "diff", x, twin, "--db", db); code != 0 || !strings.Contains(out, "\n"+twin[:13]+" took as long as "+x[:13]+" (") {
		t.Errorf("diff: exit %d, want the twin named by its first 13 characters:\n%s%s", code, out, e)
	}
	// -o wide shows them whole.
	if _, out, _ := runCmd(t, nil, "query", "changes", "--db", db, "-o", "wide"); !strings.Contains(out, twin) || !strings.Contains(out, x) {
		t.Errorf("query changes -o wide: ids not whole:\n%s", out)
	}
	if _, out, _ := runCmd(t, nil, "history", "deploy/web", "--db", db, "-o", "wide"); !strings.Contains(out, x) {
		t.Errorf("history -o wide: ids not whole:\n%s", out)
	}
}
