package storetest

import (
	"slices"
	"strings"
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
