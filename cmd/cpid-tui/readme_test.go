package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeCommand is a command line of the README's examples: its words as
// the shell would give them, and the comment after it.
type readmeCommand struct {
	line    string
	args    []string
	comment string
}

// readmeCommands reads the command lines of the README's examples that
// run cpid-tui (bin/cpid-tui, kubectl cpid), in order: lines of indented
// code blocks, a quoted argument continuing on the next lines; what a
// pipe feeds is left out.
func readmeCommands(t *testing.T) []readmeCommand {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []readmeCommand
	lines := strings.Split(string(readme), "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimPrefix(lines[i], "    ")
		if l == lines[i] || !(strings.HasPrefix(l, "bin/cpid-tui ") || strings.HasPrefix(l, "kubectl cpid ")) {
			continue
		}
		full := l
		args, comment, open := shellWords(full)
		for open && i+1 < len(lines) {
			i++
			full += "\n" + lines[i]
			args, comment, open = shellWords(full)
		}
		if open {
			t.Fatalf("README: unterminated quote in %q", full)
		}
		out = append(out, readmeCommand{line: full, args: args, comment: comment})
	}
	return out
}

// shellWords splits a command line as sh would for the README's
// examples: blanks, single and double quotes, \$ in double quotes, a
// comment from # at the start of a word, and nothing from a | on. open
// says a quote is not closed yet.
func shellWords(s string) (words []string, comment string, open bool) {
	var w strings.Builder
	inWord := false
	var quote rune
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case quote == '"':
			switch {
			case r == '"':
				quote = 0
			case r == '\\' && i+1 < len(rs) && strings.ContainsRune(`$"\`, rs[i+1]):
				i++
				w.WriteRune(rs[i])
			default:
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		case r == '#' && !inWord:
			return words, strings.TrimSpace(string(rs[i+1:])), false
		case r == '|' && !inWord:
			// A pipe: the rest is another program; its comment still
			// says what the line does.
			_, c, _ := strings.Cut(string(rs[i:]), "#")
			return words, strings.TrimSpace(c), false
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, "", quote != 0
}

// TestReadmeExamples runs every command of the README that reads or loads
// a database, on databases built from the bundled fixture as the tour
// builds them: each must succeed and show something (a table with rows, a
// file written, traces pushed), print what a comment that is only a quote
// says ("0 new audit events"), and each sql example return rows with no
// NULL (a row with NULLs is one the example did not mean: a list or a
// watch among the writes). The commands that need a terminal, a server or
// an input of the reader's own are named and left out.
func TestReadmeExamples(t *testing.T) {
	dir := t.TempDir()
	tour, fleet := filepath.Join(dir, "tour.db"), filepath.Join(dir, "fleet.db")
	sink := &otlpSink{spans: map[spanRef]string{}}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	// skipped says why a README command is not run here, or "".
	skipped := func(args []string) string {
		switch {
		case slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "postgres://") }):
			return "it needs a PostgreSQL server of the reader's (the engine's tests start a throwaway one)"
		case args[0] == "browse":
			return "it needs a terminal (TestBrowseTmux drives one)"
		case args[0] == "stamp":
			return "it reads no database (TestStampYAML and the others)"
		}
		return ""
	}
	cmds := readmeCommands(t)
	var load, read []readmeCommand
	for _, c := range cmds {
		args := c.args[1:]
		if c.args[0] == "kubectl" {
			args = c.args[2:] // kubectl cpid: the same binary
		}
		if why := skipped(args); why != "" {
			t.Logf("not run, %s: %s", why, c.line)
			continue
		}
		for i, a := range args {
			switch {
			case a == "tour.db":
				args[i] = tour
			case a == "fleet.db":
				args[i] = fleet
			case a == "fixtures/basic/bundle" || a == "bundle-eu/" || a == "bundle-us/":
				args[i] = basicBundle
			case a == "http://localhost:4318":
				args[i] = srv.URL
			case i > 0 && (args[i-1] == "-o" || args[i-1] == "--output") && filepath.Ext(a) != "":
				args[i] = filepath.Join(dir, a)
			}
		}
		c.args = args
		// The commands that load first, in their order; then those that
		// read, in theirs (the tour shows kubectl cpid before ingest).
		if args[0] == "ingest" || args[0] == "reconstruct" {
			load = append(load, c)
		} else {
			read = append(read, c)
		}
	}
	if len(load) < 4 || len(read) < 15 {
		t.Fatalf("%d commands that load and %d that read in README.md: is the parsing right?", len(load), len(read))
	}
	// quoted is a comment that is only a quote: what the command prints.
	quoted := regexp.MustCompile(`^"([^"]+)"$`)
	check := func(c readmeCommand, out, errOut string) {
		t.Helper()
		for _, m := range quoted.FindAllStringSubmatch(c.comment, -1) {
			if !strings.Contains(out+errOut, m[1]) {
				t.Errorf("README: %s\nsays %q; it printed:\n%s%s", c.line, m[1], out, errOut)
			}
		}
	}
	for _, c := range load {
		code, out, errOut := runCmd(t, nil, c.args...)
		if code != 0 {
			t.Fatalf("README: %s\nexit %d: %s", c.line, code, errOut)
		}
		check(c, out, errOut)
	}
	_, ids, _ := runCmd(t, nil, "query", "changes", "--db", tour, "-o", "name")
	id := strings.Fields(ids)[0]
	// none are the commands that rightly show no row on this fixture, as
	// their comment says.
	none := map[string]bool{"query anomalies": true}
	bodies := false
	for _, c := range read {
		args := slices.Clone(c.args)
		for i, a := range args {
			if a == "ID" {
				args[i] = id
			}
		}
		file := ""
		if i := slices.Index(args, "-o"); i >= 0 && filepath.IsAbs(args[i+1]) {
			file = args[i+1]
		}
		sql := args[0] == "sql"
		if sql {
			args = append(args, "--output", "json")
			bodies = bodies || strings.Contains(args[len(args)-3], "audit_bodies")
		}
		before, _, _ := sink.counts()
		code, out, errOut := runCmd(t, nil, args...)
		if code != 0 {
			t.Errorf("README: %s\nexit %d: %s", c.line, code, errOut)
			continue
		}
		check(c, out, errOut)
		name := strings.Join(args[:min(2, len(args))], " ")
		switch {
		case sql:
			var rows []map[string]any
			if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) == 0 {
				t.Errorf("README: %s\n%d rows (%v)\n%s", c.line, len(rows), err, out)
			}
			nulls := slices.IndexFunc(rows, func(r map[string]any) bool {
				for _, v := range r {
					if v == nil {
						return true
					}
				}
				return false
			})
			if nulls >= 0 {
				t.Errorf("README: %s\nreturns rows with NULLs, as %v", c.line, rows[nulls])
			}
		case file != "":
			if fi, err := os.Stat(file); err != nil || fi.Size() == 0 {
				t.Errorf("README: %s\nwrote no %s (%v)", c.line, file, err)
			}
		case slices.Contains(args, "--otlp-endpoint"):
			if after, _, _ := sink.counts(); after == before {
				t.Errorf("README: %s\npushed nothing", c.line)
			}
		case none[name]:
			if n := len(strings.Split(strings.TrimSpace(out), "\n")); n != 1 {
				t.Errorf("README: %s\nsays none; printed %d lines:\n%s", c.line, n, out)
			}
		default:
			if n := len(strings.Split(strings.TrimSpace(out), "\n")); n < 2 {
				t.Errorf("README: %s\nprinted no row:\n%s%s", c.line, out, errOut)
			}
		}
	}
	if !bodies {
		t.Error("no README sql example reads bodies")
	}
	t.Logf("ran %d commands that load and %d that read", len(load), len(read))
}
