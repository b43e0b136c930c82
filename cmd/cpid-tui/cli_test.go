package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

const figure5 = "../../fixtures/figure-5/bundle"

// figure5Reconstructed is a database of figure-5, ingested and
// reconstructed (a fraction of a second).
func figure5Reconstructed(t *testing.T) string {
	t.Helper()
	return reconstructedFixture(t, figure5)
}

// figureChanges returns the ids of figure-5's changes.
func figureChanges(t *testing.T, db string) []string {
	t.Helper()
	code, out, e := runCmd(t, nil, "query", "changes", "--db", db, "-o", "name")
	if code != 0 {
		t.Fatalf("query changes -o name: %d %s", code, e)
	}
	ids := strings.Fields(out)
	if len(ids) != 5 {
		t.Fatalf("figure-5 has %d changes, want 5: %q", len(ids), out)
	}
	return ids
}

// TestQuietIngest: -q prints no summary (it did: the defect), but the bad
// lines still, on stderr; without -q the summary is there.
func TestQuietIngest(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	good, err := os.ReadFile(filepath.Join(basicBundle, "audit", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, append(good, "not json\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, nil, "ingest", "-q", "--db", filepath.Join(dir, "q.db"), log)
	if code != 0 || out != "" {
		t.Errorf("ingest -q: exit %d, stdout %q; want 0 and nothing", code, out)
	}
	if !strings.Contains(errOut, "bad lines: 1") || !strings.Contains(errOut, "audit.log:") || strings.Contains(errOut, "ingested") {
		t.Errorf("ingest -q: stderr %q; want the bad line alone", errOut)
	}
	code, out, _ = runCmd(t, nil, "ingest", "--db", filepath.Join(dir, "v.db"), log)
	if code != 0 || !strings.Contains(out, "ingested 1 file,") || !strings.Contains(out, "bad lines: 1") {
		t.Errorf("ingest: exit %d, stdout %q; want 0 and the summary", code, out)
	}
	// reconstruct -q prints nothing either.
	code, out, _ = runCmd(t, nil, "reconstruct", "-q", "--db", filepath.Join(dir, "v.db"))
	if code != 0 || out != "" {
		t.Errorf("reconstruct -q: exit %d, stdout %q", code, out)
	}
}

// TestExitCodes: 0, 1, 2 and 3 as the root's help documents them.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join(basicBundle, "audit", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	some := filepath.Join(dir, "some.log")
	os.WriteFile(some, append(good, "not json\n"...), 0o644)
	all := filepath.Join(dir, "all.log")
	os.WriteFile(all, []byte("not json\nnor this\n"), 0o644)
	// What a bulk load that died leaves: its lock file, held by nobody.
	os.WriteFile(filepath.Join(dir, "died.db.partial"), nil, 0o600)
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad lines, not strict", []string{"ingest", "--db", filepath.Join(dir, "a.db"), some}, 0, ""},
		{"bad lines, strict", []string{"ingest", "--strict", "--db", filepath.Join(dir, "b.db"), some}, 3, "1 bad line skipped (--strict)"},
		{"every line bad", []string{"ingest", "--db", filepath.Join(dir, "c.db"), all}, 1, "no line could be decoded"},
		{"every line bad, strict", []string{"ingest", "--strict", "--db", filepath.Join(dir, "d.db"), all}, 1, "no line could be decoded"},
		{"unknown command", []string{"qeury"}, 2, `unknown command "qeury" (did you mean query?)`},
		{"unknown flag", []string{"query", "changes", "--nope"}, 2, "unknown flag: --nope"},
		{"no command", nil, 2, "Load and derive:"},
		{"output a command does not print", []string{"ingest", "-o", "json", some}, 2, "ingest prints no listing"},
		{"missing database", []string{"query", "changes", "--db", filepath.Join(dir, "none.db")}, 1, "no database at"},
		{"reconstruct, missing database", []string{"reconstruct", "--db", filepath.Join(dir, "none.db")}, 1, "no database at"},
		{"prune, missing database", []string{"prune", "--max-cpids", "10", "--db", filepath.Join(dir, "none.db")}, 1, "no database at"},
		{"reconstruct, the lock file of a load that died", []string{"reconstruct", "--db", filepath.Join(dir, "died.db")}, 1, "no database at"},
		{"expire, SQLite", []string{"expire", "--before", "1h", "--db", filepath.Join(dir, "none.db")}, 1, "ingest the audit files to keep into a new database"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := runCmd(t, nil, c.args...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.want)
			}
		})
	}
	for _, f := range []string{"none.db", "died.db"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("query, reconstruct, prune or expire created the missing database %s: %v", f, err)
		}
	}
}

// TestOutputFormats reads every listing of figure-5 in every format: CSV
// is data (RFC 4180, the JSON's columns whatever the rows, raw values),
// JSON and YAML have an RFC 3339 time beside each time in ns and agree,
// -o name are the ids, a table printed to a pipe is cut nowhere and wide
// shows ids whole (TestTableWidth fits tables to terminals).
func TestOutputFormats(t *testing.T) {
	db := figure5Reconstructed(t)
	ids := figureChanges(t, db)
	lists := [][]string{{"query", "changes"}, {"query", "timeline", ids[1]}, {"query", "spans", ids[1]}, {"query", "related", ids[0]},
		{"query", "origins", ids[0]}, {"query", "sli"}, {"query", "hops"}, {"query", "anomalies"}, {"history", "deploy/web"},
		{"diff", ids[0], ids[1]}, {"prune", "--max-cpids", "1", "--dry-run"}}
	for _, l := range lists {
		t.Run(strings.Join(l[:2], " "), func(t *testing.T) {
			args := append(slices.Clone(l), "--db", db)
			code, js, e := runCmd(t, nil, append(args, "-o", "json")...)
			if code != 0 {
				t.Fatalf("-o json: %d %s", code, e)
			}
			var v, exact any
			if err := json.Unmarshal([]byte(js), &v); err != nil {
				t.Fatalf("-o json: %v\n%s", err, js)
			}
			dec := json.NewDecoder(strings.NewReader(js))
			dec.UseNumber()
			dec.Decode(&exact)
			checkTimes(t, exact, "")
			code, ys, e := runCmd(t, nil, append(args, "-o", "yaml")...)
			if code != 0 {
				t.Fatalf("-o yaml: %d %s", code, e)
			}
			var y any
			if err := yaml.Unmarshal([]byte(ys), &y); err != nil {
				t.Fatalf("-o yaml: %v", err)
			}
			if !reflect.DeepEqual(y, v) {
				t.Errorf("-o yaml is not -o json:\n%s\n%s", ys, js)
			}
			code, cs, e := runCmd(t, nil, append(args, "-o", "csv")...)
			if code != 0 {
				t.Fatalf("-o csv: %d %s", code, e)
			}
			recs, err := csv.NewReader(strings.NewReader(cs)).ReadAll()
			if err != nil || len(recs) == 0 {
				t.Fatalf("-o csv is not RFC 4180 (%v):\n%s", err, cs)
			}
			checkCSV(t, recs)
			code, nh, _ := runCmd(t, nil, append(args, "-o", "csv", "--no-headers")...)
			if code != 0 || nh != strings.Join(strings.SplitAfter(cs, "\n")[1:], "") {
				t.Errorf("-o csv --no-headers is not -o csv without its first line:\n%s", nh)
			}
			for _, format := range []string{"table", "wide"} {
				code, out, e := runCmd(t, nil, append(args, "-o", format)...)
				if code != 0 {
					t.Fatalf("-o %s: %d %s", format, code, e)
				}
				if strings.Contains(out, "…") {
					t.Errorf("-o %s to a pipe cuts a cell:\n%s", format, out)
				}
			}
		})
	}
	// -o name is what json lists as ids; wide shows them whole, table
	// a prefix of 8.
	code, js, _ := runCmd(t, nil, "query", "changes", "--db", db, "-o", "json")
	var cs []struct{ ID string }
	if code != 0 || json.Unmarshal([]byte(js), &cs) != nil {
		t.Fatal(js)
	}
	for i, c := range cs {
		if ids[i] != c.ID {
			t.Errorf("-o name %d: %s, json %s", i, ids[i], c.ID)
		}
	}
	_, table, _ := runCmd(t, nil, "query", "changes", "--db", db)
	_, wide, _ := runCmd(t, nil, "query", "changes", "--db", db, "-o", "wide")
	if strings.Contains(table, ids[0]) || !strings.Contains(table, ids[0][:8]) || !strings.Contains(wide, ids[0]) {
		t.Errorf("table:\n%s\nwide:\n%s\nwant %s cut to 8 in the table, whole in wide", table, wide, ids[0])
	}
	_, nh, _ := runCmd(t, nil, "query", "changes", "--db", db, "--no-headers")
	if strings.Contains(nh, "STARTED") || len(strings.Split(strings.TrimSpace(nh), "\n")) != 5 {
		t.Errorf("--no-headers:\n%s", nh)
	}
	// Formats a listing does not print are usage errors.
	for _, args := range [][]string{{"query", "sli", "-o", "name"}, {"query", "changes", "-o", "xml"}, {"history", "deploy/web", "-o", "name"}} {
		if code, _, e := runCmd(t, nil, append(args, "--db", db)...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, e)
		}
	}
}

// checkTimes walks a JSON value: every member that holds a Unix time in
// ns (a number past 2001) has its RFC 3339 twin, the same instant.
func checkTimes(t *testing.T, v any, path string) {
	t.Helper()
	switch v := v.(type) {
	case []any:
		for i, x := range v {
			checkTimes(t, x, path+"["+strconv.Itoa(i)+"]")
		}
	case map[string]any:
		for k, x := range v {
			checkTimes(t, x, path+"."+k)
			num, ok := x.(json.Number)
			n, err := num.Int64()
			if !ok || err != nil || !strings.HasSuffix("_"+k, "_ns") || n < 1e18 || strings.HasPrefix(path, ".time_by") {
				continue
			}
			tk := strings.TrimSuffix(k, "ns") + "time"
			if k == "ns" {
				tk = "time"
			}
			s, _ := v[tk].(string)
			at, err := time.Parse(time.RFC3339Nano, s)
			if err != nil || at.UnixNano() != n {
				t.Errorf("%s.%s = %d: %s is %q, want the same time in RFC 3339", path, k, n, tk, s)
			}
		}
	}
}

// checkCSV: a header of names, every row as long, no padding, no units:
// a time column is an RFC 3339 time or empty, an *_ns column an integer.
func checkCSV(t *testing.T, recs [][]string) {
	t.Helper()
	head := recs[0]
	for _, h := range head {
		if h == "" || strings.ToLower(h) != h || strings.Contains(h, " ") {
			t.Errorf("csv column %q: want a JSON member's name", h)
		}
	}
	unit := regexp.MustCompile(`^[0-9.]+(µs|ms|s|m)$`)
	for _, r := range recs[1:] {
		if len(r) != len(head) {
			t.Fatalf("csv row of %d cells, header of %d", len(r), len(head))
		}
		for i, c := range r {
			if c != strings.TrimSpace(c) || unit.MatchString(c) {
				t.Errorf("csv %s = %q: want a raw value", head[i], c)
			}
			switch {
			case strings.HasSuffix(head[i], "_time") || head[i] == "time":
				if _, err := time.Parse(time.RFC3339Nano, c); c != "" && err != nil {
					t.Errorf("csv %s = %q: not RFC 3339", head[i], c)
				}
			case strings.HasSuffix(head[i], "_ns") && !strings.HasPrefix(head[i], "time_by"):
				if _, err := strconv.ParseInt(c, 10, 64); c != "" && err != nil {
					t.Errorf("csv %s = %q: not an integer", head[i], c)
				}
			}
		}
	}
}

// TestTimelineZero: a timeline counts from the change's start (when the
// apiserver received its first request, as the TUI does), so that its last
// write is as far from zero as the change took to settle. It counted from
// the first write's completion.
func TestTimelineZero(t *testing.T) {
	db := figure5Reconstructed(t)
	code, js, _ := runCmd(t, nil, "query", "changes", "--db", db, "-o", "json")
	var cs []struct {
		ID        string
		StartedNS int64 `json:"started_ns"`
		SettledNS int64 `json:"settled_ns"`
	}
	if code != 0 || json.Unmarshal([]byte(js), &cs) != nil {
		t.Fatal(js)
	}
	for _, c := range cs {
		settled := c.SettledNS
		_, out, _ := runCmd(t, nil, "query", "timeline", c.ID, "--db", db, "-o", "wide")
		var last string
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[3], "+") {
				last = f[3] // mark, date, time, AFTER
			} else if len(f) > 3 && strings.HasPrefix(f[2], "+") {
				last = f[2] // no mark
			}
		}
		if want := "+" + dur(settled-c.StartedNS); last != want {
			t.Errorf("change %s: last write at %s, want %s (settled - started)\n%s", c.ID, last, want, out)
		}
	}
}

// TestRelated: query related says what each CPID is, and takes a prefix
// of a change's id.
func TestRelated(t *testing.T) {
	db := figure5Reconstructed(t)
	ids := figureChanges(t, db)
	for _, id := range ids[:2] {
		code, out, e := runCmd(t, nil, "query", "related", id[:8], "--db", db, "-o", "wide")
		if code != 0 {
			t.Fatalf("related %s: %d %s", id[:8], code, e)
		}
		if !strings.Contains(out, "ORIGIN") || !strings.Contains(out, "WRITERS") || !strings.Contains(out, id) || !strings.Contains(out, "root") {
			t.Errorf("related %s:\n%s\nwant each CPID with its origin and writers", id[:8], out)
		}
		_, js, _ := runCmd(t, nil, "query", "related", id, "--db", db, "-o", "json")
		var rs []relatedRow
		if err := json.Unmarshal([]byte(js), &rs); err != nil || len(rs) == 0 || rs[0].CPID != id || len(rs[0].Objects) == 0 || len(rs[0].Writers) == 0 {
			t.Errorf("related %s -o json: %v %s", id, err, js)
		}
		// A CPID that is not a change's: by a prefix too, in origins.
		for _, r := range rs[1:] {
			code, out, e := runCmd(t, nil, "query", "origins", r.CPID[:8], "--db", db, "-o", "name")
			if code != 0 || !strings.Contains(out, r.CPID) || !strings.Contains(out, id) {
				t.Errorf("origins %s: %d %s\n%s\nwant %s and %s", r.CPID[:8], code, e, out, r.CPID, id)
			}
		}
	}
}

// TestPruneDryRun: --dry-run lists what it would delete, and deletes
// nothing.
func TestPruneDryRun(t *testing.T) {
	db := reconstructedFixture(t, figure5)
	count := func() (n int) {
		openDB(t, db).QueryRow(`SELECT count(*) FROM mergelogs`).Scan(&n)
		return n
	}
	n0 := count()
	code, out, e := runCmd(t, nil, "prune", "--db", db, "--max-cpids", "3", "--dry-run")
	if code != 0 {
		t.Fatalf("prune --dry-run: %d %s", code, e)
	}
	m := regexp.MustCompile(`would delete (\d+) of`).FindStringSubmatch(out)
	if m == nil || m[1] == "0" {
		t.Fatalf("prune --dry-run:\n%s\nwant how many it would delete", out)
	}
	code, names, _ := runCmd(t, nil, "prune", "--db", db, "--max-cpids", "3", "--dry-run", "-o", "name")
	if code != 0 || strconv.Itoa(len(strings.Fields(names))) != m[1] || !strings.Contains(out, strings.Fields(names)[0]) {
		t.Errorf("prune --dry-run -o name:\n%s\nwant the %s CPIDs the table lists", names, m[1])
	}
	if n := count(); n != n0 {
		t.Errorf("--dry-run deleted: %d mergelogs, %d before", n, n0)
	}
	// --keep takes a prefix: the CPID kept is not listed.
	kept := strings.Fields(names)[0]
	_, again, _ := runCmd(t, nil, "prune", "--db", db, "--max-cpids", "3", "--dry-run", "-o", "name", "--keep", kept[:8])
	if strings.Contains(again, kept) {
		t.Errorf("--keep %s: still listed\n%s", kept[:8], again)
	}
	if code, _, e := runCmd(t, nil, "prune", "--db", db, "--max-cpids", "3", "--keep", "zzzz"); code != 1 || !strings.Contains(e, `no CPID "zzzz"`) {
		t.Errorf("--keep zzzz: %d %s", code, e)
	}
}

// TestCompletion asks the completion what a shell would, through cobra's
// __complete: change ids, kinds and namespaces from the database.
func TestCompletion(t *testing.T) {
	db := figure5Reconstructed(t)
	ids := figureChanges(t, db)
	complete := func(args ...string) []string {
		t.Helper()
		code, out, e := runCmd(t, nil, append([]string{"__complete"}, args...)...)
		if code != 0 {
			t.Fatalf("__complete %v: %d %s", args, code, e)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(l, ":") {
				got = append(got, strings.SplitN(l, "\t", 2)[0])
			}
		}
		return got
	}
	if got := complete("--db", db, "query", "timeline", ids[1][:3]); !slices.Contains(got, ids[1]) {
		t.Errorf("query timeline %s<TAB>: %v, want %s", ids[1][:3], got, ids[1])
	}
	if got := complete("--db", db, "query", "timeline", ""); len(got) != 5 {
		t.Errorf("query timeline <TAB>: %v, want the 5 changes", got)
	}
	if got := complete("--db", db, "diff", ids[0], ""); len(got) != 5 {
		t.Errorf("diff ID <TAB>: %v", got)
	}
	if got := complete("--db", db, "query", ""); !slices.Contains(got, "changes") || !slices.Contains(got, "timeline") {
		t.Errorf("query <TAB>: %v", got)
	}
	if got := complete("--db", db, "query", "changes", "--kind", ""); !slices.Contains(got, "deployments.apps") || !slices.Contains(got, "services") {
		t.Errorf("--kind <TAB>: %v", got)
	}
	if got := complete("--db", db, "query", "changes", "-n", ""); !slices.Equal(got, []string{"default", "kube-system"}) {
		t.Errorf("-n <TAB>: %v", got)
	}
	if got := complete("--db", db, "history", "deploy/web", "-o", ""); !slices.Equal(got, dataFormats) {
		t.Errorf("history -o <TAB>: %v", got)
	}
	if got := complete("--db", db, "report", "--format", ""); !slices.Equal(got, []string{"html", "md"}) {
		t.Errorf("report --format <TAB>: %v", got)
	}
	// history: the types with writes, then the names of their objects.
	if got := complete("--db", db, "history", ""); !slices.Contains(got, "deployments/") || !slices.Contains(got, "pods/") || slices.Contains(got, "web") {
		t.Errorf("history <TAB>: %v, want TYPE/", got)
	}
	if got := complete("--db", db, "history", "dep"); !slices.Equal(got, []string{"deployments/"}) {
		t.Errorf("history dep<TAB>: %v", got)
	}
	if got := complete("--db", db, "history", "rs"); !slices.Equal(got, []string{"rs/"}) {
		t.Errorf("history rs<TAB>: %v", got)
	}
	for _, c := range []struct{ args, want []string }{
		{[]string{"history", "deploy/"}, []string{"deploy/web"}},
		{[]string{"history", "Deployment/w"}, []string{"Deployment/web"}},
		{[]string{"history", "-n", "default", "deployments.apps/"}, []string{"deployments.apps/web"}},
		{[]string{"history", "-n", "nope", "deploy/"}, nil},
		{[]string{"history", "deploy", ""}, []string{"web"}},
		{[]string{"history", "deploy/web", ""}, nil},
	} {
		if got := complete(append([]string{"--db", db}, c.args...)...); !slices.Equal(got, c.want) {
			t.Errorf("%v<TAB>: %v, want %v", c.args, got, c.want)
		}
	}
	if got := complete("--db", db, "history", "pod/"); len(got) < 3 || !strings.HasPrefix(got[0], "pod/") {
		t.Errorf("history pod/<TAB>: %v", got)
	}
	// The default database: $CPID_DB, else cpid.db.
	t.Setenv("CPID_DB", db)
	if got := complete("history", "deploy/"); !slices.Equal(got, []string{"deploy/web"}) {
		t.Errorf("CPID_DB: history deploy/<TAB>: %v", got)
	}
	if got := complete("report", ""); len(got) != 5 {
		t.Errorf("CPID_DB: report <TAB>: %v", got)
	}
	t.Setenv("CPID_DB", "")
	t.Chdir(t.TempDir())
	if got := complete("history", ""); len(got) != 0 {
		t.Errorf("no cpid.db here: history <TAB>: %v", got)
	}
	// No database, or one behind a symbolic link: nothing printed but the
	// directive (which the shell's script drops), and no database created.
	none := filepath.Join(t.TempDir(), "none.db")
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(db, link); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--db", none, "query", "timeline", ""}, {"--db", none, "history", ""}, {"--db", none, "history", "deploy/"},
		{"--db", none, "diff", ""}, {"--db", none, "export", ""}, {"--db", none, "report", ""}, {"--db", link, "history", "deploy/"}, {"--db", link, "query", "timeline", ""}} {
		code, out, e := runCmd(t, nil, append([]string{"__complete"}, args...)...)
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(l, ":") {
				got = append(got, l)
			}
		}
		if code != 0 || (args[1] == none && len(got) != 0) {
			t.Errorf("%v: exit %d, %q", args, code, got)
		}
		if rest := strings.TrimSpace(strings.TrimPrefix(e, "Completion ended with directive:")); strings.Contains(rest, "\n") || strings.Contains(e, "cpid-tui") {
			t.Errorf("%v: printed on stderr: %q", args, e)
		}
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Errorf("completion created the database")
	}
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		code, out, e := runCmd(t, nil, "completion", sh)
		if code != 0 || !strings.Contains(out, "__complete") || !strings.Contains(out, "cpid-tui") {
			t.Errorf("completion %s: %d %s %.200s", sh, code, e, out)
		}
	}
}

// builtBinary builds cpid-tui once for the tests that run it as a
// program (the kubectl plugin, a shell's completion, the version), its
// version stamped by the linker as tools/release/snapshot.sh stamps it
// (stampedVersion; only the version command says it).
var builtBinary = sync.OnceValues(func() (string, error) {
	dir, err := sharedTestDir("bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "cpid-tui")
	ldflags := "-X main.stampVersion=" + stampedVersion.version + " -X main.stampCommit=" + stampedVersion.commit +
		" -X main.stampDate=" + stampedVersion.date
	out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", &exec.Error{Name: string(out), Err: err}
	}
	return bin, nil
})

// TestKubectlPlugin: the binary on the PATH as kubectl-cpid is kubectl's
// plugin: a real kubectl runs `kubectl cpid query changes`, and its help
// says kubectl cpid. Without a kubectl binary, the name mapping kubectl's
// plugin discovery applies is checked alone.
func TestKubectlPlugin(t *testing.T) {
	t.Parallel()
	for base, want := range map[string]string{"kubectl-cpid": "kubectl cpid", "kubectl-cpid.exe": "kubectl cpid", "cpid-tui": "cpid-tui",
		"cpid": "cpid-tui", "kubectl-cpid-dev": "kubectl cpid dev"} {
		if got := progName(base); got != want {
			t.Errorf("progName(%q) = %q, want %q", base, got, want)
		}
	}
	kubectl := filepath.Join(os.Getenv("HOME"), ".cache/cpid/realcp-bin/kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		if kubectl, err = exec.LookPath("kubectl"); err != nil {
			t.Skip("no kubectl binary (the recorder's, or on the PATH): the name mapping alone was checked")
		}
	}
	bin, err := builtBinary()
	if err != nil {
		t.Fatal(err)
	}
	db := figure5Reconstructed(t)
	dir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(dir, "kubectl-cpid")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(kubectl, filepath.Join(dir, "kubectl")); err != nil {
		t.Fatal(err)
	}
	kenv := append(os.Environ(), "PATH="+dir, "KUBECONFIG="+filepath.Join(dir, "none"))
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(filepath.Join(dir, "kubectl"), args...)
		cmd.Env = kenv
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		return o.String(), e.String(), err
	}
	plugins, _, _ := run("plugin", "list")
	if !strings.Contains(plugins, filepath.Join(dir, "kubectl-cpid")) {
		t.Errorf("kubectl plugin list:\n%s\nwant kubectl-cpid", plugins)
	}
	out, e, err := run("cpid", "query", "changes", "--db", db)
	_, want, _ := runCmd(t, nil, "query", "changes", "--db", db)
	if err != nil || out != want {
		t.Errorf("kubectl cpid query changes: %v %s\n%s\nwant\n%s", err, e, out, want)
	}
	help, _, _ := run("cpid", "query", "--help")
	if !strings.Contains(help, "kubectl cpid query") || strings.Contains(help, "cpid-tui query changes") {
		t.Errorf("kubectl cpid query --help does not say kubectl cpid:\n%s", help)
	}
	_, e, err = run("cpid", "query", "timeline", "--db", db, "zz")
	if err == nil || !strings.Contains(e, "kubectl cpid query: no change") {
		t.Errorf("kubectl cpid query timeline zz: %v %s", err, e)
	}
	t.Logf("ran %s", kubectl)
}

// TestShellCompletion sources the bash script in a real bash and asks it
// to complete a change id, as pressing TAB would: the script runs the
// binary's __complete.
func TestShellCompletion(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	bin, err := builtBinary()
	if err != nil {
		t.Fatal(err)
	}
	db := figure5Reconstructed(t)
	ids := figureChanges(t, db)
	script := filepath.Join(t.TempDir(), "c.bash")
	code, out, _ := runCmd(t, nil, "completion", "bash")
	if code != 0 || os.WriteFile(script, []byte(out), 0o644) != nil {
		t.Fatal("completion bash")
	}
	line := "cpid-tui query timeline --db " + db + " " + ids[2][:4]
	// The script uses bash-completion's _get_comp_words_by_ref when the
	// system has it, else what it does, as plainly.
	lib := "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(lib); err != nil {
		lib = "/dev/null"
		t.Log("no bash-completion: its _get_comp_words_by_ref is given as a plain function")
	}
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", `source "$3" 2>/dev/null
declare -F _get_comp_words_by_ref >/dev/null || _get_comp_words_by_ref() {
  cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
source "$1"
COMP_LINE="$2"; COMP_POINT=${#COMP_LINE}; read -ra COMP_WORDS <<< "$COMP_LINE"; COMP_CWORD=$((${#COMP_WORDS[@]}-1))
__start_cpid-tui cpid-tui; printf '%s\n' "${COMPREPLY[@]}"`, "bash", script, line, lib)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
	got, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(got), ids[2]) {
		t.Errorf("bash completion of %q: %v\n%s\nwant %s", line, err, got, ids[2])
	}
}

// TestCLIDocs: docs/CLI.md is what the command tree generates (make docs
// writes it; -update here too).
func TestCLIDocs(t *testing.T) {
	var b bytes.Buffer
	if err := genDocs(&b); err != nil {
		t.Fatal(err)
	}
	path := "../../docs/CLI.md"
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (make docs writes it)", err)
	}
	if b.String() != string(want) {
		writeDiff(t, string(want), b.String())
		t.Errorf("docs/CLI.md is not what the command tree generates: run make docs")
	}
	for _, c := range commands {
		if !c.hidden && !strings.Contains(b.String(), "## cpid-tui "+c.name+"\n") {
			t.Errorf("docs/CLI.md has no section for %s", c.name)
		}
	}
}

// TestVersion: version says the Go version and, with -o json, the module.
func TestVersion(t *testing.T) {
	code, out, _ := runCmd(t, nil, "version")
	if code != 0 || !strings.Contains(out, runtime.Version()) {
		t.Errorf("version: %d %s", code, out)
	}
	code, out, _ = runCmd(t, nil, "version", "-o", "json")
	var v version
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Module != "github.com/cpid-dev/cpid" || v.Go != runtime.Version() {
		t.Errorf("version -o json: %d %s", code, out)
	}
}

// TestKrewManifest: plugins/cpid.yaml is a krew Plugin whose every
// platform installs the cpid-tui binary as the plugin cpid.
func TestKrewManifest(t *testing.T) {
	b, err := os.ReadFile("../../plugins/cpid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string
		Metadata   struct{ Name string }
		Spec       struct {
			Version          string
			Homepage         string
			ShortDescription string `json:"shortDescription"`
			Description      string
			Caveats          string
			Platforms        []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				}
				URI, Sha256, Bin string
			}
		}
	}
	if err := yaml.UnmarshalStrict(b, &m); err != nil {
		t.Fatalf("plugins/cpid.yaml: %v", err)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "cpid" ||
		!strings.HasPrefix(m.Spec.Version, "v") || m.Spec.ShortDescription == "" || len(m.Spec.Platforms) == 0 {
		t.Errorf("plugins/cpid.yaml: %+v", m)
	}
	for _, p := range m.Spec.Platforms {
		if p.Bin != "cpid-tui" || len(p.Sha256) != 64 || p.Selector.MatchLabels["os"] == "" || !strings.HasSuffix(p.URI, ".tar.gz") {
			t.Errorf("platform %+v", p)
		}
	}
}

// TestStdinComponent: two controller logs piped in one after the other,
// each named by --component, stay two logs: the leader handover between
// the kube-controller-managers of leader-change-metadata (only their logs
// say it) is found as from the files. Both were stored as "-", one log,
// and the leader gap was lost.
func TestStdinComponent(t *testing.T) {
	b := "../../fixtures/leader-change-metadata/bundle"
	leaderGaps := func(db string) int {
		t.Helper()
		if code, _, e := runCmd(t, nil, "reconstruct", "-q", "--db", db); code != 0 {
			t.Fatalf("reconstruct: %s", e)
		}
		code, js, e := runCmd(t, nil, "query", "changes", "--db", db, "-o", "json", "--limit", "0")
		var cs []struct {
			ByReason map[string]int64 `json:"time_by_reason_ns"`
		}
		if code != 0 || json.Unmarshal([]byte(js), &cs) != nil {
			t.Fatalf("query changes: %d %s", code, e)
		}
		n := 0
		for _, c := range cs {
			if c.ByReason["leader-gap"] > 0 {
				n++
			}
		}
		return n
	}
	dir := t.TempDir()
	files := filepath.Join(dir, "files.db")
	if code, _, e := runCmd(t, nil, "ingest", "-q", "--db", files, b); code != 0 {
		t.Fatal(e)
	}
	piped := filepath.Join(dir, "piped.db")
	if code, _, e := runCmd(t, nil, "ingest", "-q", "--db", piped, b+"/audit", b+"/logs/kube-apiserver.log", b+"/logs/kube-scheduler.log",
		b+"/logs/kwok.log"); code != 0 {
		t.Fatal(e)
	}
	for _, c := range []string{"kube-controller-manager", "kube-controller-manager-2"} {
		f, err := os.Open(filepath.Join(b, "logs", c+".log"))
		if err != nil {
			t.Fatal(err)
		}
		code, _, e := runCmd(t, f, "ingest", "-q", "--db", piped, "--component", c, "-")
		f.Close()
		if code != 0 {
			t.Fatal(e)
		}
	}
	want := leaderGaps(files)
	if want == 0 {
		t.Fatal("the fixture's leader gap is not found from its files")
	}
	if got := leaderGaps(piped); got != want {
		t.Errorf("changes with a leader gap: %d from standard input, %d from the files", got, want)
	}
	var paths []string
	rows, err := openDB(t, piped).Query(`SELECT path FROM files WHERE path LIKE 'stdin:%' ORDER BY path`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var p string
		rows.Scan(&p)
		paths = append(paths, p)
	}
	rows.Close()
	if !slices.Equal(paths, []string{"stdin:kube-controller-manager", "stdin:kube-controller-manager-2"}) {
		t.Errorf("standard input stored as %v", paths)
	}
}
