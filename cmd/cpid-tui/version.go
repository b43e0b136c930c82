package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() {
	register(command{name: "version", group: "other", summary: "print the version, commit and Go version of this binary",
		help: versionHelp, formats: []string{"table", "json", "yaml"}, setup: setupVersion})
}

const versionHelp = `Prints what this binary was built from, as Go recorded it in the binary:
the module version (a release tag when installed with go install
MODULE@VERSION, "(devel)" for a build from a checkout), the commit, its
time and whether the tree had changes (unknown when the build left out
version control information: -buildvcs=false), the Go version and the
platform. The database schema version is not the binary's: cpid-tui sql
"select * from schema_migrations" shows it.

Examples:
  cpid-tui version
  cpid-tui version -o json | jq -r .commit`

// version is what the version command prints.
type version struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Time     string `json:"commit_time"`
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// buildVersion reads the build information of the running binary.
func buildVersion() version {
	v := version{Module: "github.com/cpid-dev/cpid", Version: "(unknown)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
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
		fmt.Fprintf(e.stdout, "%s %s\nmodule:   %s\ncommit:   %s\ngo:       %s %s\n", e.prog, v.Version, v.Module, commit, v.Go, v.Platform)
		return nil
	}
}
