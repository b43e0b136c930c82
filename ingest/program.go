package ingest

import (
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// program names the program that wrote a log record for the summary: the
// one its stream names (stream: the log's file or container name, an EKS
// log stream or AKS category, --component), else the one its component
// names when that is a caller's path (slog's source.file): the directory
// under cmd/ (k8s.io/kubernetes/cmd/kube-scheduler/app/server.go), else
// the Go module (/root/go/pkg/mod/sigs.k8s.io/kwok@v0.8.0/pkg/...: kwok).
// klog's caller ("flag/flags.go:64") names no program.
func program(stream, component string) string {
	if stream != "" {
		return stream
	}
	return pathProgram(component)
}

// majorVersion is the last element of a module path of major version 2
// or more (github.com/org/tool/v2).
var majorVersion = regexp.MustCompile(`^v[0-9]+$`)

// pathProgram is the program a source file's path names, "" when none.
func pathProgram(p string) string {
	p = filepath.ToSlash(p)
	if _, rest, ok := strings.Cut(p, "/cmd/"); ok {
		if name, _, ok := strings.Cut(rest, "/"); ok && name != "" {
			return name
		}
	}
	mod, _, ok := strings.Cut(p, "@v")
	if !ok || !strings.Contains(mod, "/") {
		return ""
	}
	name := path.Base(mod)
	if majorVersion.MatchString(name) {
		name = path.Base(path.Dir(mod))
	}
	return name
}
