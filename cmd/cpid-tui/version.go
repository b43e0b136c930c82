package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

func init() {
	register(command{name: "version", group: "other", summary: "print the version, commit, date and Go version of this binary",
		help: versionHelp, formats: []string{"table", "json", "yaml"}, setup: setupVersion})
}

const versionHelp = `Prints what this binary was built from. A release build (make
release-snapshot, docs/RELEASE.md) says the version, commit and date the
release stamped in it (the date is its commit's time, so that two builds
of one commit are the same bytes; a version ending in -dirty was built
from a tree with uncommitted changes). Any other build says what Go
recorded in the binary: the module version (a release tag when installed
with go install MODULE@VERSION, "(devel)" for a build from a checkout),
the commit, its time and whether the tree had changes (unknown when the
build left out version control information: -buildvcs=false). Both say
the Go version and the platform. The database schema version is not the
binary's: cpid-tui sql "select * from schema_migrations" shows it.

Examples:
  cpid-tui version
  cpid-tui version -o json | jq -r .commit`

// The stamp of a release build, set by the linker
// (tools/release/snapshot.sh: -ldflags "-X main.stampVersion=..."); empty
// in any other build.
var (
	stampVersion string
	stampCommit  string
	stampDate    string
)

// version is what the version command prints.
type version struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Time     string `json:"commit_time"`
	Modified bool   `json:"modified"`
	// Date is the date a release stamped (RFC 3339), empty otherwise.
	Date     string `json:"date,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// buildVersion says what the running binary was built from: the release
// stamp where there is one, over what Go recorded in the binary.
func buildVersion() version {
	v := version{Module: "github.com/cpid-dev/cpid", Version: "(unknown)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v = fromBuildInfo(v, bi)
	}
	if stampVersion != "" {
		v.Version = stampVersion
		// git describe --dirty marks a tree with uncommitted changes so.
		v.Modified = strings.HasSuffix(stampVersion, "-dirty")
	}
	if stampCommit != "" {
		v.Commit = stampCommit
	}
	v.Date = stampDate
	return v
}

// fromBuildInfo fills v with the module and version control information
// Go recorded in the binary.
func fromBuildInfo(v version, bi *debug.BuildInfo) version {
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func setupVersion(c *cobra.Command, e *env) runFunc {
	return func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usagef("version takes no argument")
		}
		v := buildVersion()
		if f := e.format(c); f != "table" {
			return listing{data: v}.write(e.stdout, f, layout{noHeaders: e.noHeaders})
		}
		commit := v.Commit
		switch {
		case commit == "":
			commit = "unknown (built without version control information)"
		case v.Modified:
			commit += " (with uncommitted changes)"
		}
		if v.Time != "" {
			commit += ", " + v.Time
		}
		fmt.Fprintf(e.stdout, "%s %s\nmodule:   %s\ncommit:   %s\n", e.prog, v.Version, v.Module, commit)
		if v.Date != "" {
			fmt.Fprintf(e.stdout, "date:     %s\n", v.Date)
		}
		fmt.Fprintf(e.stdout, "go:       %s %s\n", v.Go, v.Platform)
		return nil
	}
}
