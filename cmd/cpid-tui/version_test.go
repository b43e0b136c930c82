package main

import (
	"encoding/json"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestVersionStamped: a binary whose version, commit and date were set
// by the linker, as tools/release/snapshot.sh sets them, prints those
// (table and JSON) over what Go recorded, and a version git describe
// marked -dirty says the tree had changes.
func TestVersionStamped(t *testing.T) {
	t.Parallel()
	ver, commit, date := stampedVersion.version, stampedVersion.commit, stampedVersion.date
	bin, err := builtBinary()
	if err != nil {
		t.Fatalf("go build: %v", err)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("version: %v", err)
	}
	for _, want := range []string{
		"cpid-tui " + ver + "\n",
		"commit:   " + commit + " (with uncommitted changes)",
		"date:     " + date + "\n",
		"go:       " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("version does not say %q:\n%s", want, out)
		}
	}
	out, err = exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("version -o json: %v", err)
	}
	var v version
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("version -o json: %v\n%s", err, out)
	}
	if v.Version != ver || v.Commit != commit || v.Date != date || !v.Modified || v.Module != "github.com/cpid-dev/cpid" {
		t.Errorf("version -o json: %+v", v)
	}
}

// stampedVersion is what builtBinary's linker stamps.
var stampedVersion = struct{ version, commit, date string }{
	"v0.0.0-3-g1a2b3c4-dirty", "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d", "2026-11-26T20:47:06Z",
}

// TestVersionUnstamped: a build without the stamp has no date (the test
// binary is one).
func TestVersionUnstamped(t *testing.T) {
	t.Parallel()
	code, out, _ := runCmd(t, nil, "version", "-o", "json")
	var v version
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Date != "" || strings.Contains(out, `"date"`) {
		t.Errorf("version -o json: %d %s", code, out)
	}
	code, out, _ = runCmd(t, nil, "version")
	if code != 0 || strings.Contains(out, "date:") {
		t.Errorf("version: %d %s", code, out)
	}
}
