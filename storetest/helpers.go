package storetest

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FilterSamples are the filters an engine's filter tests try (the
// terminal UI's filter, cpid.ChangeQuery.Filter): every printable ASCII
// character; fixed cases (verbs and verb/subresource, codes, LIKE's
// wildcards, the separator of the changes' texts, strings no value
// holds); and each of vals (the names, writers, namespaces, users,
// resources, verbs, codes and ids a database holds) whole, in upper case,
// and cut into its first two characters and a part from its middle. Sorted,
// each once. SQLite's and PostgreSQL's tests try the same ones.
func FilterSamples(vals []string) []string {
	set := map[string]bool{}
	for c := ' '; c <= '~'; c++ {
		set[string(c)] = true
	}
	for _, f := range []string{"web", "WEB", "update/status", "patch/scale", "upd", "apply", "deletecollection", "201", "409", "404",
		"500", "422", "200", "999", "099", "%", "_", "w_b", "%e%", "no-such-thing", "ns", "n", "-", "--", "kube-", "system:",
		"kubernetes-admin", "\x1f", "n\x1fk", "default\x1f", "update/\x1f", "\x1fpods"} {
		set[f] = true
	}
	for _, v := range vals {
		if v == "" {
			continue
		}
		set[v] = true
		set[strings.ToUpper(v)] = true
		if len(v) >= 2 {
			set[v[:2]] = true
		}
		if len(v) >= 6 {
			set[v[len(v)/2-2:len(v)/2+1]] = true
		}
	}
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// InSteps is the files of the recorded bundle dir in the order a live
// tailer meets them: the rotated audit backups, the controllers' logs,
// then the live audit log (the largest). Tests ingest and reconstruct
// them one at a time. It fails t when the bundle has fewer than two
// backups or two logs.
func InSteps(t testing.TB, dir string) []string {
	t.Helper()
	backups, _ := filepath.Glob(filepath.Join(dir, "audit", "*.gz"))
	logs, _ := filepath.Glob(filepath.Join(dir, "logs", "*"))
	files := append(append(backups, logs...), filepath.Join(dir, "audit", "audit.log"))
	if len(backups) < 2 || len(logs) < 2 {
		t.Fatalf("%s: files %v, want two backups and two logs at least", dir, files)
	}
	return files
}
