package ingest

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// strays are the files people keep beside the logs of a bundle, which are
// not logs: notes, the scenario script that made them (the basic
// fixture's), a table, and the same without the names that tell.
func strays(t *testing.T) map[string][]byte {
	t.Helper()
	script, err := os.ReadFile("../fixtures/recorder/scenarios/basic.sh")
	if err != nil {
		t.Fatal(err)
	}
	// Notes that quote a log line are still notes.
	notes := []byte("# Incident 42\n\nScaled web to 5 at 16:27, then:\n\n    I1122 16:27:01.000000 1 x.go:1] \"slow\"\n")
	table := []byte("time\tobject\twhat\n16:27:01\tdeploy/web\tscale to 5\n16:27:09\tdeploy/web\tscale to 2\n")
	return map[string][]byte{
		"NOTES.md":     notes,
		"basic.sh":     script,
		"timeline.tsv": table,
		"NOTES.md.gz":  gz(t, notes),
		"scenario":     append([]byte("#!/bin/bash\n"), script...),
		"README":       notes[:bytes.IndexByte(notes, ':')],
		"timeline":     table,
		"extra/hops":   []byte("\xef\xbb\xbfwriter\tp50\tp99\n"),
	}
}

// logsBeside are logs that must never be skipped, whatever their names
// or first lines: the basic fixture's logs (bundle), and the shapes real
// collectors write.
func logsBeside(t *testing.T) map[string][]byte {
	t.Helper()
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	kwok := read("../fixtures/basic/bundle/logs/kwok.log")
	klog := read("../fixtures/figure-5-text/bundle/logs/kube-controller-manager.log")
	sched := read("../fixtures/basic/bundle/logs/kube-scheduler.log")
	var cri []byte
	for line := range bytes.Lines(sched) {
		cri = append(append(cri, "2026-11-22T16:26:33.872331101Z stderr F "...), line...)
	}
	out := map[string][]byte{
		// No extension: JSON, klog text, klog's file header.
		"kwok":      kwok,
		"kcm":       klog,
		"kcm-klog":  append([]byte("Log file created at: 2026/11/24 05:55:09\nRunning on machine: cp\nBinary: Built with gc go1.26 for linux/amd64\nLog line format: [IWEF]mmdd hh:mm:ss.uuuuuu threadid file:line] msg\n"), klog...),
		"sched.txt": append([]byte("2026-11-22T16:26:33.872331101Z "), sched...),
		// kubelet's CRI log, and its rotated backup.
		"pods/kube-system_kube-scheduler-cp_0c1e2f3a/kube-scheduler/0.log":                    cri,
		"pods/kube-system_kube-scheduler-cp_0c1e2f3a/kube-scheduler/0.log.20261122-162633.gz": gz(t, cri),
		// A *.log or audit* name is a log's, whatever its first line.
		"logs/kcm-annotated.log": append([]byte("# copied from cp-0\n"), klog...),
		"audit-notes":            []byte("# not read as notes: audit*\n"),
		// Empty: read, and found empty.
		"empty": nil,
	}
	for _, dir := range []string{"audit", "logs"} {
		ents, err := os.ReadDir("../fixtures/basic/bundle/" + dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			out[dir+"/"+e.Name()] = read("../fixtures/basic/bundle/" + dir + "/" + e.Name())
		}
	}
	return out
}

func writeTree(t *testing.T, files ...map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for _, m := range files {
		for name, b := range m {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// TestFilesSkipsNotLogs: a directory's notes, scripts and tables are
// skipped and told (by name, or by their first bytes), its logs are read
// whatever their names; a file named on its own is read, whatever it is.
func TestFilesSkipsNotLogs(t *testing.T) {
	stray, logs := strays(t), logsBeside(t)
	dir := writeTree(t, stray, logs)
	var skipped []string
	w := &Walker{Notice: func(n Notice) {
		if !n.NotLog {
			t.Errorf("notice %s", n)
		}
		r, _ := filepath.Rel(dir, n.Name)
		skipped = append(skipped, filepath.ToSlash(r)+": "+n.Reason)
	}}
	files, err := w.Files([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		r, _ := filepath.Rel(dir, f)
		got = append(got, filepath.ToSlash(r))
	}
	slices.Sort(got)
	want := slices.Sorted(func(yield func(string) bool) {
		for k := range logs {
			if !yield(k) {
				return
			}
		}
	})
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("read:\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	slices.Sort(skipped)
	wantSkipped := []string{
		"NOTES.md.gz: not a log (Markdown, by its name)",
		"NOTES.md: not a log (Markdown, by its name)",
		"README: not a log (Markdown or a script: its first line starts with #)",
		"basic.sh: not a log (a shell script, by its name)",
		"extra/hops: not a log (a table: tab-separated columns)",
		"scenario: not a log (a script: its first line is #!)",
		"timeline.tsv: not a log (a TSV table, by its name)",
		"timeline: not a log (a table: tab-separated columns)",
	}
	if strings.Join(skipped, "\n") != strings.Join(wantSkipped, "\n") {
		t.Errorf("skipped:\n  %s\nwant\n  %s", strings.Join(skipped, "\n  "), strings.Join(wantSkipped, "\n  "))
	}

	// Named on their own, they are read.
	for name := range stray {
		p := filepath.Join(dir, filepath.FromSlash(name))
		files, err := w.Files([]string{p})
		if err != nil || len(files) != 1 || files[0] != p {
			t.Errorf("Files(%s) = %v, %v", name, files, err)
		}
	}
}

// TestTarSkipsNotLogs: the members of a bundle are found, not named: the
// notes and scripts packed with the logs are skipped as in a directory.
func TestTarSkipsNotLogs(t *testing.T) {
	stray, logs := strays(t), logsBeside(t)
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	add := func(m map[string][]byte) {
		for name, b := range m {
			tw.WriteHeader(&tar.Header{Name: "bundle/" + name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))})
			tw.Write(b)
		}
	}
	add(stray)
	add(logs)
	tw.Close()
	bundle := filepath.Join(t.TempDir(), "bundle.tgz")
	os.WriteFile(bundle, gz(t, tb.Bytes()), 0o644)

	var skipped []string
	w := &Walker{Notice: func(n Notice) {
		if n.NotLog {
			skipped = append(skipped, strings.TrimPrefix(n.Name, bundle+"!bundle/"))
		}
	}}
	got, err := readAll(t, w, bundle)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range logs {
		if len(b) == 0 {
			continue // an empty member costs its header only
		}
		if _, ok := got[bundle+"!bundle/"+name]; !ok {
			t.Errorf("log %s not read", name)
		}
	}
	if len(got) != len(logs)-1 {
		t.Errorf("%d members read, want %d", len(got), len(logs)-1)
	}
	slices.Sort(skipped)
	want := slices.Sorted(func(yield func(string) bool) {
		for k := range stray {
			if !yield(k) {
				return
			}
		}
	})
	if strings.Join(skipped, " ") != strings.Join(want, " ") {
		t.Errorf("skipped %v, want %v", skipped, want)
	}
}

// TestProgram names the program of a log record from its stream, else
// from its caller's path.
func TestProgram(t *testing.T) {
	for _, tc := range []struct{ stream, component, want string }{
		{"kube-scheduler", "flag/flags.go", "kube-scheduler"},
		{"kube-controller-manager", "resourcequota-controller", "kube-controller-manager"},
		{"", "/root/go/pkg/mod/sigs.k8s.io/kwok@v0.8.0/pkg/kwok/controllers/pod_controller.go", "kwok"},
		{"", "/go/src/k8s.io/kubernetes/cmd/kube-scheduler/app/server.go", "kube-scheduler"},
		{"", "/root/go/pkg/mod/github.com/org/tool/v2@v2.1.0/run.go", "tool"},
		{"", "/src/cmd/webapp/main.go", "webapp"},
		{"", "flag/flags.go", ""},
		{"", "controller-runtime.metrics", ""},
	} {
		if got := program(tc.stream, tc.component); got != tc.want {
			t.Errorf("program(%q, %q) = %q, want %q", tc.stream, tc.component, got, tc.want)
		}
	}
}
