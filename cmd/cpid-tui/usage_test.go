package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/postgres/pgtest"
	"github.com/cpid-dev/cpid/sqlite"
)

// TestClosedValues: a value outside the closed set a flag (or a
// positional word) takes is a usage error, exit 2, that names the flag
// and lists what it takes, on every command that has it; the same words
// in another letter case are taken.
func TestClosedValues(t *testing.T) {
	t.Parallel()
	db := figure5Reconstructed(t)
	id := figureChanges(t, db)[0]
	dir := t.TempDir()
	const (
		triggers = `want one of user, node, controller-start, schedule, gc, unknown`
		lists    = `want one of table, wide, json, yaml, csv, name`
		data     = `want one of table, wide, json, yaml, csv`
		rules    = `rule "ownr": want one of self, owner, dependents, siblings, service, targets, node, namespace, disruption, restart`
	)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"query sort", []string{"query", "changes", "--sort", "bogus"}, `--sort "bogus": want one of time, duration, size`},
		{"query trigger", []string{"query", "changes", "--trigger", "bogus"}, `--trigger "bogus": ` + triggers},
		{"history trigger", []string{"history", "deploy/web", "--trigger", "bogus"}, `--trigger "bogus": ` + triggers},
		{"export trigger", []string{"export", "--trigger", "bogus"}, `--trigger "bogus": ` + triggers},
		{"query output", []string{"query", "changes", "-o", "xml"}, `-o "xml": ` + lists},
		{"history output", []string{"history", "deploy/web", "-o", "name"}, `-o "name": ` + data},
		{"diff output", []string{"diff", id, id, "--output", "xml"}, `-o "xml": ` + data},
		{"sql output", []string{"sql", "select 1", "-o", "xml"}, `-o "xml": ` + data},
		{"prune output", []string{"prune", "--dry-run", "-o", "xml"}, `-o "xml": ` + data},
		{"export format", []string{"export", "--all", "--format", "zipkin"}, `--format "zipkin": want one of otlp, jaeger, perfetto`},
		{"report format", []string{"report", id, "--format", "pdf"}, `--format "pdf": want one of html, md`},
		{"report extension", []string{"report", id, "-o", filepath.Join(dir, "x.pdf")},
			`extension ".pdf": want one of .html, .htm, .md, .markdown`},
		{"report output a format", []string{"report", id, "-o", "json"}, `-o json: -o is the file to write here, not a format; give --format html or md`},
		{"export output a format", []string{"export", "--all", "-o", "YAML"}, `-o YAML: -o is the file to write here, not a format; give --format otlp`},
		{"reconstruct window rule", []string{"reconstruct", "--window", "ownr/kwok=10s"}, rules},
		{"query hops window rule", []string{"query", "hops", "--window", "ownr/kwok=10s"}, rules},
		{"query name", []string{"query", "bogus"}, `query "bogus": want one of changes, timeline, spans, related, origins, sli, hops, anomalies`},
		{"completion shell", []string{"completion", "tcsh"}, `shell "tcsh": want one of bash, zsh, fish, powershell`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, nil, append(tc.args, "--db", db)...)
			if code != 2 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "Usage: ") {
				t.Errorf("%v: exit %d, stderr %q; want 2, %q and the usage", tc.args, code, errOut, tc.want)
			}
			if out != "" {
				t.Errorf("%v: printed %q", tc.args, out)
			}
		})
	}
	for _, f := range []string{filepath.Join(dir, "x.pdf"), "json", "YAML"} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("report or export wrote %s: %v", f, err)
		}
	}
	// Any letter case names the same value.
	for _, args := range [][]string{
		{"query", "changes", "--sort", "Duration", "--trigger", "USER"},
		{"query", "changes", "-o", "JSON"},
		{"export", "--all", "--format", "Perfetto", "-o", filepath.Join(dir, "p.json")},
		{"report", id, "-o", filepath.Join(dir, "r.HTM")},
		{"report", id, "-o", filepath.Join(dir, "r.pdf"), "--format", "html"},
		{"report", id, "-o", filepath.Join(dir, "r.markdown")},
	} {
		if code, _, errOut := runCmd(t, nil, append(args, "--db", db)...); code != 0 {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "r.markdown")); err != nil || !strings.HasPrefix(string(b), "# ") {
		t.Errorf("report -o r.markdown is not Markdown: %.40q %v", b, err)
	}
}

// TestAllNamespacesWins: -A with -n lists every namespace, as kubectl
// does (it was a usage error).
func TestAllNamespacesWins(t *testing.T) {
	t.Parallel()
	db := figure5Reconstructed(t)
	all := figureChanges(t, db)
	code, out, errOut := runCmd(t, nil, "query", "changes", "--db", db, "-o", "name", "-n", "nowhere", "-A")
	if got := strings.Fields(out); code != 0 || !slices.Equal(got, all) {
		t.Errorf("query changes -n nowhere -A: exit %d, %q (%s); want every change %q", code, got, errOut, all)
	}
	if _, out, _ := runCmd(t, nil, "query", "changes", "--db", db, "-o", "name", "-n", "nowhere"); out != "" {
		t.Fatalf("-n nowhere lists %q: a bad test", out)
	}
	code, out, errOut = runCmd(t, nil, "history", "deploy/web", "--db", db, "-n", "kube-system", "--all-namespaces")
	if code != 0 || !strings.Contains(out, "default/web") {
		t.Errorf("history deploy/web -n kube-system -A: exit %d\n%s%s", code, out, errOut)
	}
	f := filepath.Join(t.TempDir(), "all.json")
	code, _, errOut = runCmd(t, nil, "export", "--db", db, "-n", "nowhere", "-A", "-o", f)
	if code != 0 || !strings.Contains(errOut, "export: 5 changes") {
		t.Errorf("export -n nowhere -A: exit %d, %s", code, errOut)
	}
}

// TestUnknownCluster: a --cluster the database does not hold is an
// error, exit 1 (kubectl's unknown context), naming the clusters it holds,
// on every reading command and both engines; a database without records
// says it has no cluster.
func TestUnknownCluster(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			fleet, empty := filepath.Join(dir, "fleet.db"), filepath.Join(dir, "empty.db")
			if engine == "postgres" {
				fleet, empty = pgtest.NewDatabase(t), pgtest.NewDatabase(t)
			}
			log := filepath.Join(basicBundle, "audit", "audit.log")
			if engine == "sqlite" {
				// The schema, no records (reconstruct makes no SQLite file).
				s, err := sqlite.Open(context.Background(), empty)
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
			}
			for _, args := range [][]string{
				{"ingest", "--db", fleet, "--cluster", "prod-us", log},
				{"ingest", "--db", fleet, "--cluster", "prod-eu", log},
				{"reconstruct", "--db", empty}, // the schema, no records
			} {
				if code, out, errOut := runCmd(t, nil, append(args, "-q")...); code != 0 {
					t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
				}
			}
			for _, args := range [][]string{
				{"query", "changes"}, {"query", "timeline", "abc"}, {"query", "spans", "abc"}, {"query", "related", "abc"},
				{"query", "origins", "abc"}, {"query", "sli"}, {"query", "hops"}, {"query", "anomalies"},
				{"history", "deploy/web"}, {"diff", "abc", "def"}, {"export", "--all"}, {"report", "abc"}, {"browse"},
			} {
				for _, c := range []struct{ db, want string }{
					{fleet, `cluster "nope" does not exist: the database holds prod-eu, prod-us`},
					{empty, `cluster "nope" does not exist: the database holds no records, so no cluster`},
				} {
					code, out, errOut := runCmd(t, nil, append(args, "--db", c.db, "--cluster", "nope")...)
					if code != 1 || !strings.Contains(errOut, c.want) || out != "" || strings.Contains(errOut, "reconstruct") {
						t.Errorf("%v (%s): exit %d, stdout %q, stderr %q; want 1 and %q alone", args, filepath.Base(c.db), code, out, errOut, c.want)
					}
				}
			}
			// A cluster it holds reads as before.
			if code, _, errOut := runCmd(t, nil, "query", "changes", "--db", fleet, "--cluster", "prod-eu"); code != 0 {
				t.Errorf("--cluster prod-eu: exit %d, %s", code, errOut)
			}
		})
	}
}
