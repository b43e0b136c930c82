package ingest_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cpid-dev/cpid/ingest"
)

// fixtureLines returns the lines of a fixture file, gunzipped.
func fixtureLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "fixtures", path))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func gz(t *testing.T, lines []string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(strings.Join(lines, "\n") + "\n"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// criLines wraps klog text lines of 2026 as the kubelet writes them to
// stderr, with the times of their headers.
func criLines(t *testing.T, lines []string) []string {
	t.Helper()
	var out []string
	for _, l := range lines {
		at := time.Now()
		if len(l) > 21 && (l[0] == 'I' || l[0] == 'W' || l[0] == 'E' || l[0] == 'F') {
			v, err := time.Parse("2006 0102 15:04:05.000000", "2026 "+l[1:21])
			if err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			at = v
		}
		out = append(out, at.UTC().Format(time.RFC3339Nano)+" stderr F "+l)
	}
	return out
}

// TestBundleShapes builds, from the real fixtures' files, the directory
// layouts users collect (an OpenShift must-gather, kind export logs, a
// node's /var/log/pods) and checks that the walker reads rotated logs
// oldest first and each server's log as a log of its own (Family), that
// klog text records are named after their container, and that nothing is
// a bad line but the files that hold no log.
func TestBundleShapes(t *testing.T) {
	basic := func(f string) []string { return fixtureLines(t, "basic/bundle/audit/"+f) }
	b1, b2, live := basic("audit-2026-11-22T16-26-45.615.log.gz"), basic("audit-2026-11-22T16-26-59.899.log.gz"), basic("audit.log")
	half := func(ls []string, odd int) (out []string) {
		for i, l := range ls {
			if i%2 == odd {
				out = append(out, l)
			}
		}
		return out
	}
	kcm := fixtureLines(t, "figure-5-text/bundle/logs/kube-controller-manager.log")
	sched := fixtureLines(t, "figure-5-text/bundle/logs/kube-scheduler.log")
	kcmRecords, schedRecords := 514, 142 // sched has a config block over 142 lines
	stamped := func(ls []string) (out []string) {
		for _, l := range criLines(t, ls) {
			ts, _, _ := strings.Cut(l, " ")
			_, rest, _ := strings.Cut(l, " F ")
			out = append(out, ts+" "+rest)
		}
		return out
	}
	const uid = "0c1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
	hex64 := strings.Repeat("ab12", 16)

	tests := []struct {
		name   string
		files  map[string][]byte
		order  []string       // the files to read, in order
		family map[string]int // files of one log share a number
		audits int
		logs   map[string]int // records by component
		bad    []string       // files whose lines are bad
	}{{
		name: "OpenShift must-gather",
		files: map[string][]byte{
			"mg/audit_logs/kube-apiserver/master-0-audit-2026-11-22T16-26-45.615.log.gz":                                                                             gz(t, half(b1, 0)),
			"mg/audit_logs/kube-apiserver/master-0-audit-2026-11-22T16-26-59.899.log.gz":                                                                             gz(t, half(b2, 0)),
			"mg/audit_logs/kube-apiserver/master-0-audit.log.gz":                                                                                                     gz(t, half(live, 0)),
			"mg/audit_logs/kube-apiserver/master-1-audit-2026-11-22T16-26-45.615.log.gz":                                                                             gz(t, half(b1, 1)),
			"mg/audit_logs/kube-apiserver/master-1-audit-2026-11-22T16-26-59.899.log.gz":                                                                             gz(t, half(b2, 1)),
			"mg/audit_logs/kube-apiserver/master-1-audit.log.gz":                                                                                                     gz(t, half(live, 1)),
			"mg/namespaces/openshift-kube-controller-manager/pods/kube-controller-manager-master-0/kube-controller-manager/kube-controller-manager/logs/current.log": []byte(strings.Join(stamped(kcm), "\n") + "\n"),
		},
		order: []string{
			"mg/audit_logs/kube-apiserver/master-0-audit-2026-11-22T16-26-45.615.log.gz",
			"mg/audit_logs/kube-apiserver/master-0-audit-2026-11-22T16-26-59.899.log.gz",
			"mg/audit_logs/kube-apiserver/master-0-audit.log.gz",
			"mg/audit_logs/kube-apiserver/master-1-audit-2026-11-22T16-26-45.615.log.gz",
			"mg/audit_logs/kube-apiserver/master-1-audit-2026-11-22T16-26-59.899.log.gz",
			"mg/audit_logs/kube-apiserver/master-1-audit.log.gz",
			"mg/namespaces/openshift-kube-controller-manager/pods/kube-controller-manager-master-0/kube-controller-manager/kube-controller-manager/logs/current.log",
		},
		family: map[string]int{
			"mg/audit_logs/kube-apiserver/master-0-audit-2026-11-22T16-26-45.615.log.gz": 0,
			"mg/audit_logs/kube-apiserver/master-0-audit.log.gz":                         0,
			"mg/audit_logs/kube-apiserver/master-1-audit-2026-11-22T16-26-45.615.log.gz": 1,
			"mg/audit_logs/kube-apiserver/master-1-audit.log.gz":                         1,
		},
		audits: len(b1) + len(b2) + len(live),
		logs:   map[string]int{"kube-controller-manager": kcmRecords - 24 - 22 - 2, "UnhandledError": 24, "resourcequota-controller": 22, "node-lifecycle-controller": 1, "persistentvolume-attach-detach-controller": 1},
	}, {
		name: "kind export logs",
		files: map[string][]byte{
			"kind/kind-version.txt":                          []byte("kind v0.31.0 go1.26.8 linux/amd64\n"),
			"kind/kind-control-plane/kubernetes-version.txt": []byte("v1.37.2\n"),
			"kind/kind-control-plane/containers/kube-scheduler-kind-control-plane_kube-system_kube-scheduler-" + hex64 + ".log":              []byte(strings.Join(criLines(t, sched), "\n") + "\n"),
			"kind/kind-control-plane/pods/kube-system_kube-scheduler-kind-control-plane_" + uid + "/kube-scheduler/0.log":                    []byte(strings.Join(criLines(t, sched[208:]), "\n") + "\n"),
			"kind/kind-control-plane/pods/kube-system_kube-scheduler-kind-control-plane_" + uid + "/kube-scheduler/0.log.20261124-055510.gz": gz(t, criLines(t, sched[:208])),
			"kind/kind-control-plane/pods/kube-system_kube-controller-manager-kind-control-plane_" + uid + "/kube-controller-manager/0.log":  []byte(strings.Join(criLines(t, kcm), "\n") + "\n"),
		},
		order: []string{
			"kind/kind-version.txt",
			"kind/kind-control-plane/kubernetes-version.txt",
			"kind/kind-control-plane/containers/kube-scheduler-kind-control-plane_kube-system_kube-scheduler-" + hex64 + ".log",
			"kind/kind-control-plane/pods/kube-system_kube-controller-manager-kind-control-plane_" + uid + "/kube-controller-manager/0.log",
			"kind/kind-control-plane/pods/kube-system_kube-scheduler-kind-control-plane_" + uid + "/kube-scheduler/0.log.20261124-055510.gz",
			"kind/kind-control-plane/pods/kube-system_kube-scheduler-kind-control-plane_" + uid + "/kube-scheduler/0.log",
		},
		// The scheduler's log is in containers/ and pods/ (kind copies
		// /var/log, links dereferenced): stored once.
		logs: map[string]int{"kube-scheduler": schedRecords - 24, "UnhandledError": 24 + 24, "kube-controller-manager": kcmRecords - 24 - 22 - 2,
			"resourcequota-controller": 22, "node-lifecycle-controller": 1, "persistentvolume-attach-detach-controller": 1},
		bad: []string{"kind/kind-control-plane/kubernetes-version.txt", "kind/kind-version.txt"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := tree(t, tc.files, time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
			root := filepath.Join(dir, strings.Split(tc.order[0], "/")[0])
			w := ingest.Walker{}
			files, err := w.Files([]string{root})
			if err != nil {
				t.Fatal(err)
			}
			var rel []string
			for _, f := range files {
				r, _ := filepath.Rel(dir, f)
				rel = append(rel, filepath.ToSlash(r))
			}
			if strings.Join(rel, "\n") != strings.Join(tc.order, "\n") {
				t.Errorf("read order:\n  %s\nwant\n  %s", strings.Join(rel, "\n  "), strings.Join(tc.order, "\n  "))
			}
			fams := map[int]map[string]bool{}
			for f, n := range tc.family {
				if fams[n] == nil {
					fams[n] = map[string]bool{}
				}
				fams[n][ingest.Family(filepath.Join(dir, f))] = true
			}
			if len(tc.family) > 0 && (len(fams[0]) != 1 || len(fams[1]) != 1 || fmt.Sprint(fams[0]) == fmt.Sprint(fams[1])) {
				t.Errorf("families %v", fams)
			}

			sum, db := ingestPaths(t, w, root)
			badFiles := map[string]bool{}
			for _, f := range sum.Files {
				if f.Bad > 0 {
					r, _ := filepath.Rel(dir, f.Name)
					badFiles[filepath.ToSlash(r)] = true
				}
			}
			for _, f := range tc.bad {
				if !badFiles[f] {
					t.Errorf("%s: no bad line", f)
				}
				delete(badFiles, f)
			}
			if len(badFiles) > 0 {
				t.Errorf("bad lines in %v: %v", badFiles, sum.BadLines)
			}
			if n := len(auditRows(t, db)); n != tc.audits {
				t.Errorf("%d audit events, want %d", n, tc.audits)
			}
			got := map[string]int{}
			for _, r := range logRows(t, db) {
				got[r.Component]++
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.logs) {
				t.Errorf("records by component %v, want %v", got, tc.logs)
			}
		})
	}
}

// TestComponent names the program of a log from its path.
func TestComponent(t *testing.T) {
	for path, want := range map[string]string{
		"/var/log/pods/kube-system_kube-scheduler-node1_0c1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6/kube-scheduler/0.log":                     "kube-scheduler",
		"/var/log/pods/kube-system_kube-scheduler-node1_0c1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6/kube-scheduler/3.log.20261124-055510.gz":  "kube-scheduler",
		"/var/log/containers/kube-controller-manager-node1_kube-system_kube-controller-manager-" + strings.Repeat("ab12", 16) + ".log": "kube-controller-manager",
		"mg/namespaces/ns/pods/kcm-master-0/kube-controller-manager/kube-controller-manager/logs/previous.insecure.log":                "kube-controller-manager",
		"bundle/logs/kube-controller-manager.log":      "kube-controller-manager",
		"bundle/logs/kube-controller-manager.log.2.gz": "kube-controller-manager",
		"b.tgz!logs/kube-scheduler.log":                "kube-scheduler",
		"kcm.txt":                                      "kcm",
		"-":                                            "",
	} {
		if got := ingest.Component(path); got != want {
			t.Errorf("Component(%q) = %q, want %q", path, got, want)
		}
	}
}
