package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// copyTree copies the files of the directory src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		r, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, r)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// withStrays copies the basic fixture's bundle into a new directory with
// what people keep beside logs: notes, the scenario script that made the
// recording, a table.
func withStrays(t *testing.T) string {
	t.Helper()
	in := filepath.Join(t.TempDir(), "in")
	copyTree(t, basicBundle, in)
	script, err := os.ReadFile("../../fixtures/recorder/scenarios/basic.sh")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"NOTES.md":     []byte("# basic\n\nScaled web at 16:27; kcm restarted?\n- check the scheduler\n"),
		"basic.sh":     script,
		"timeline.tsv": []byte("time\tobject\tevent\n16:27:01\tdeploy/web\tscale to 5\n"),
	} {
		if err := os.WriteFile(filepath.Join(in, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return in
}

// TestIngestSkipsNotLogs: notes, a scenario script and a table beside the
// logs are skipped and listed as such, not read as bad lines: --strict
// exits 0 and the database holds the bundle's records alone. Named on its
// own, such a file is read.
func TestIngestSkipsNotLogs(t *testing.T) {
	in := withStrays(t)
	dbPath := filepath.Join(t.TempDir(), "cpid.db")
	code, out, e := runCmd(t, nil, "ingest", "--strict", "--db", dbPath, in)
	if code != 0 || strings.Contains(out, "bad lines") {
		t.Fatalf("exit %d\n%s%s", code, out, e)
	}
	for _, want := range []string{
		"skipped: " + filepath.Join(in, "NOTES.md") + ": not a log (Markdown, by its name)\n",
		"skipped: " + filepath.Join(in, "basic.sh") + ": not a log (a shell script, by its name)\n",
		"skipped: " + filepath.Join(in, "timeline.tsv") + ": not a log (a TSV table, by its name)\n",
		"skipped: 3 files found beside the logs are not logs (a file given as a PATH is read whatever it holds)\n",
		"ingested 7 files,",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	bundleDB := filepath.Join(t.TempDir(), "bundle.db")
	if code, out, e := runCmd(t, nil, "ingest", "--db", bundleDB, basicBundle); code != 0 {
		t.Fatalf("ingest the bundle: exit %d\n%s%s", code, out, e)
	}
	if got, want := countBy(dbCounts(t, openDB(t, dbPath))), countBy(dbCounts(t, openDB(t, bundleDB))); got != want {
		t.Errorf("with the notes beside:\n%s\nthe bundle alone:\n%s", got, want)
	}

	notes := filepath.Join(in, "NOTES.md")
	code, out, e = runCmd(t, nil, "ingest", "--db", dbPath, notes)
	if code != 1 || !strings.Contains(e, notes+": no line could be decoded (3 bad lines") || strings.Contains(out, "skipped:") {
		t.Errorf("NOTES.md named on its own: exit %d\n%s%s", code, out, e)
	}
}

// TestIngestNothingRead: an input of which nothing was read (an empty
// directory or file, a directory of notes, empty standard input) is a
// warning, and an ingest that read nothing at all exits 1; a new database
// is not made when nothing was stored, a missing input included.
func TestIngestNothingRead(t *testing.T) {
	dir := t.TempDir()
	emptyDir := filepath.Join(dir, "empty")
	os.Mkdir(emptyDir, 0o755)
	emptyFile := filepath.Join(dir, "audit.log")
	os.WriteFile(emptyFile, nil, 0o644)
	blank := filepath.Join(dir, "blank.log")
	os.WriteFile(blank, []byte("\n\n  \n"), 0o644)
	notes := filepath.Join(dir, "notes")
	os.Mkdir(notes, 0o755)
	os.WriteFile(filepath.Join(notes, "NOTES.md"), []byte("# notes\n"), 0o644)
	missing := filepath.Join(dir, "missing")
	var tb bytes.Buffer
	zw := gzip.NewWriter(&tb)
	tw := tar.NewWriter(zw)
	for _, name := range []string{"bundle/NOTES.md", "bundle/run.sh"} {
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: 8})
		tw.Write([]byte("# notes\n"))
	}
	tw.Close()
	zw.Close()
	bundle := filepath.Join(dir, "notes.tgz")
	os.WriteFile(bundle, tb.Bytes(), 0o644)

	for _, tc := range []struct {
		name   string
		paths  []string
		stderr string
	}{
		{"empty directory", []string{emptyDir}, "nothing was read: " + emptyDir + " (an empty directory)"},
		{"empty file", []string{emptyFile}, "nothing was read: " + emptyFile + " (empty)"},
		{"blank lines", []string{blank}, "nothing was read: " + blank + " (empty)"},
		{"notes only", []string{notes}, "nothing was read: " + notes + " (1 file skipped, not logs)"},
		{"standard input", []string{"-"}, "nothing was read: - (empty)"},
		{"bundle of notes", []string{bundle}, "nothing was read: " + bundle + " (2 files skipped, not logs; the rest empty)"},
		{"all of them", []string{emptyDir, emptyFile, notes}, "nothing was read: " + emptyDir + " (an empty directory), " + emptyFile + " (empty), " + notes},
		{"missing", []string{missing}, "1 input could not be read: stat " + missing + ": no such file or directory"},
		{"missing and empty", []string{missing, emptyDir}, "1 input could not be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dbPath := filepath.Join(t.TempDir(), "cpid.db")
			code, out, e := runCmd(t, nil, append([]string{"ingest", "--db", dbPath}, tc.paths...)...)
			if code != 1 || !strings.Contains(e, tc.stderr) {
				t.Errorf("exit %d, want 1 and %q\n%s%s", code, tc.stderr, out, e)
			}
			if !strings.Contains(out, "database "+dbPath+": not created, nothing to store\n") {
				t.Errorf("summary:\n%s", out)
			}
			ents, _ := os.ReadDir(filepath.Dir(dbPath))
			for _, f := range ents {
				t.Errorf("left behind: %s", f.Name())
			}
		})
	}

	// Beside an input that was read: a warning, exit 0.
	dbPath := filepath.Join(t.TempDir(), "cpid.db")
	code, out, e := runCmd(t, nil, "ingest", "--db", dbPath, emptyDir, basicBundle, emptyFile)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, e)
	}
	for _, want := range []string{
		"warning: " + emptyDir + ": nothing read (an empty directory)\n",
		"warning: " + emptyFile + ": nothing read (empty)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(dbPath); err != nil {
		t.Error(err)
	}
	// Into a database that exists: nothing read exits 1, the database is
	// left as it was.
	code, out, e = runCmd(t, nil, "ingest", "--db", dbPath, emptyDir)
	if code != 1 || !strings.Contains(e, "nothing was read: "+emptyDir) || strings.Contains(e, "not created") {
		t.Errorf("into an existing database: exit %d\n%s%s", code, out, e)
	}
	if _, err := os.Stat(dbPath); err != nil {
		t.Error(err)
	}
}

// section returns the lines of the summary after the line header, up to
// the next line that is not indented.
func section(out, header string) []string {
	var lines []string
	in := false
	for sc := bufio.NewScanner(strings.NewReader(out)); sc.Scan(); {
		l := sc.Text()
		switch {
		case l == header:
			in = true
		case in && strings.HasPrefix(l, "  "):
			lines = append(lines, l)
		case in:
			return lines
		}
	}
	return lines
}

var programLine = regexp.MustCompile(`^  (.+?) +(\d+)  (.*)$`)

// TestIngestPrograms: log records are counted by the program that wrote
// them, named by the log's file (or --component), else by the caller's
// path (kwok's module), with the source files that wrote most as detail.
func TestIngestPrograms(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "cpid.db")
	code, out, e := runCmd(t, nil, "ingest", "--db", dbPath, basicBundle)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, e)
	}
	// Each log file is one program's, each of its lines a record.
	var want []string
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		b, err := os.ReadFile(filepath.Join(basicBundle, "logs", name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, name+" "+strconv.Itoa(bytes.Count(b, []byte("\n"))))
	}
	lines := section(out, "log records by program (and the components most came from):")
	var got []string
	for _, l := range lines {
		m := programLine.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("line %q", l)
			continue
		}
		got = append(got, m[1]+" "+m[2])
		if strings.Count(m[3], ", ") != 3 || !strings.HasSuffix(m[3], " more") {
			t.Errorf("%s: detail %q, want its three first components and how many more", m[1], m[3])
		}
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("programs:\n%s\nwant %v\n%s", strings.Join(got, "\n"), want, out)
	}
	for _, want := range []string{"kube-apiserver ", "channelz/logging.go 340", "kwok ", "controllers/pod_controller.go 17"} {
		if !strings.Contains(strings.Join(lines, "\n"), want) {
			t.Errorf("no %q in\n%s", want, strings.Join(lines, "\n"))
		}
	}
	if strings.Contains(out, "/root/go/pkg/mod") {
		t.Errorf("a whole module path in the summary:\n%s", out)
	}

	// From standard input, without --component: kwok is named by its
	// module in the caller's path; klog's caller names no program.
	kwok, _ := os.ReadFile(filepath.Join(basicBundle, "logs", "kwok.log"))
	sched, _ := os.ReadFile(filepath.Join(basicBundle, "logs", "kube-scheduler.log"))
	dbPath = filepath.Join(t.TempDir(), "cpid.db")
	code, out, e = runCmd(t, bytes.NewReader(append(kwok, sched...)), "ingest", "--db", dbPath, "-")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, e)
	}
	lines = section(out, "log records by program (and the components most came from):")
	var progs []string
	for _, l := range lines {
		if m := programLine.FindStringSubmatch(l); m != nil {
			progs = append(progs, m[1]+" "+m[2])
		}
	}
	if strings.Join(progs, ", ") != "(program unknown) 148, kwok 26" {
		t.Errorf("standard input: %v\n%s", progs, out)
	}
}

// TestIngestRepeatedInInput: the duplicates a new database finds were
// repeated in the input (the basic fixture's kube-scheduler logged one
// line twice, time included; an audit log given twice), and are
// said so; into a database that holds records, a duplicate may be either.
func TestIngestRepeatedInInput(t *testing.T) {
	in := t.TempDir()
	copyTree(t, basicBundle, in)
	copyTree(t, filepath.Join(basicBundle, "audit"), filepath.Join(in, "copy"))
	events := len(auditLines(t, basicBundle))
	dbPath := filepath.Join(t.TempDir(), "cpid.db")
	code, out, e := runCmd(t, nil, "ingest", "--db", dbPath, in)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, e)
	}
	want := "database " + dbPath + " (new): " + strconv.Itoa(events) + " new audit events (" + strconv.Itoa(events) +
		" repeated in the input), 1485 new log records (1 repeated in the input)\n"
	if !strings.Contains(out, want) {
		t.Errorf("summary lacks %q:\n%s", want, out)
	}
	code, out, e = runCmd(t, nil, "ingest", "--db", dbPath, basicBundle)
	want = "database " + dbPath + ": 0 new audit events (" + strconv.Itoa(events) + " already stored or repeated in the input), 0 new log records (1486 already stored or repeated in the input)\n"
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("exit %d, want %q\n%s%s", code, want, out, e)
	}
	var n int
	openDB(t, dbPath).QueryRow(`SELECT count(*) FROM log_records`).Scan(&n)
	if n != 1485 {
		t.Errorf("%d log records stored", n)
	}
	if _, err := os.Stat(dbPath + ".partial"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("partial: %v", err)
	}
}
