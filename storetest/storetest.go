// Package storetest is the conformance suite of the storage engines: the
// same test functions run against every engine (litestream's
// RunWithReplicaClient pattern) and compare what each reads with expected
// values, the golden files in testdata/, made from the recorded fixtures.
// A bug two engines share fails here, where comparing them with each other
// (contract_test.go at the root) lets it pass.
//
// An engine's tests call Run with a function that opens an empty database
// of that engine:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Engine { ... })
//	}
//
// go test ./sqlite/ -run Conformance -update rewrites the golden files
// from what that engine reads; every other engine must then read the same,
// byte for byte.
package storetest

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

var update = flag.Bool("update", false, "rewrite the conformance suite's golden files (storetest/testdata) from this engine")

// Engine is an engine under test, seen from every cluster (a view of "").
type Engine interface {
	cpid.RecordWriter
	cpid.DerivedStore
	cpid.ChangeReader
	cpid.ObjectLister
}

// Opener opens an empty database of the engine under test, closed when t
// ends.
type Opener func(t *testing.T) Engine

// Fixtures are the recorded fixtures the suite reads: each is ingested
// and reconstructed, then read, and what was read is compared with
// testdata/FIXTURE.golden.
var Fixtures = []string{"basic", "instrumented", "figure-5", "paper-5-1-1", "paper-5-1-1-stock", "paper-5-1-2",
	"rollout-interrupted", "node-loss", "kcm-restart", "leader-change", "conflicts", "cronjob", "metadata-policy", "traced",
	"waits", "leader-change-metadata"}

// Run runs the whole suite against the engine that open opens: for each
// fixture, TestReads.
func Run(t *testing.T, open Opener) {
	for _, fx := range Fixtures {
		t.Run(fx, func(t *testing.T) {
			t.Parallel()
			TestReads(t, open, fx)
		})
	}
}

// TestReads ingests and reconstructs fixture into a new database of the
// engine and compares every read of it (Reads) with the fixture's golden
// file.
func TestReads(t *testing.T, open Opener, fixture string) {
	ctx := context.Background()
	e := Load(t, open, fixture)
	var out bytes.Buffer
	if err := Reads(ctx, e, &out); err != nil {
		t.Fatal(err)
	}
	// The paths of the files read are stored as given: the module's
	// directory is left out, whichever it is.
	got := bytes.ReplaceAll(out.Bytes(), []byte(filepath.Dir(Dir())+string(filepath.Separator)), nil)
	Compare(t, filepath.Join(Dir(), "testdata", fixture+".golden"), got)
}

// Load opens a new database of the engine with open and stores fixture in
// it: ingested, then reconstructed.
func Load(t *testing.T, open Opener, fixture string) Engine {
	t.Helper()
	ctx := context.Background()
	e := open(t)
	bundle := filepath.Join(filepath.Dir(Dir()), "fixtures", fixture, "bundle")
	if _, err := (&ingest.Ingester{Sink: e}).Run(ctx, []string{bundle}); err != nil {
		t.Fatalf("ingest %s: %v", fixture, err)
	}
	if _, err := reconstruct.Run(ctx, e, reconstruct.Options{Family: ingest.Family}); err != nil {
		t.Fatalf("reconstruct %s: %v", fixture, err)
	}
	return e
}

// Compare fails t unless got is the content of the golden file at path;
// with -update it writes got there instead.
func Compare(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run Conformance -update writes it)", err)
	}
	if bytes.Equal(want, got) {
		return
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			t.Fatalf("%s differs from what was read, first at line %d (of %d; %d read):\nwant: %s\n got: %s\n(section %s)",
				path, i+1, len(wl), len(gl), w, g, section(wl, i))
		}
	}
}

// section is the heading of the golden file's section that holds line i.
func section(lines []string, i int) string {
	for ; i >= 0 && i < len(lines); i-- {
		if strings.HasPrefix(lines[i], "== ") {
			return lines[i]
		}
	}
	return "(none)"
}

// Dir is the directory of this package's source: its testdata and the
// module's fixtures are found from there, whichever package's test runs
// the suite.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}
