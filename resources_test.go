package cpid_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestResources: the table is consistent (one row per plural, a scope and
// a kind for each), and the lists derived from it are those the packages
// kept as copies before it (issue 27): a change to them changes what is
// read, fetched or left out, so it must be meant.
func TestResources(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, r := range cpid.Resources {
		if seen[r.Plural] {
			t.Errorf("%s: two rows", r.Plural)
		}
		seen[r.Plural] = true
		if r.Kind == "" || r.Scope == cpid.ScopeUnknown {
			t.Errorf("%s: kind %q, scope %d", r.Plural, r.Kind, r.Scope)
		}
		if got, ok := cpid.LookupResource(r.Plural); !ok || got.Kind != r.Kind {
			t.Errorf("LookupResource(%s) = %v, %v", r.Plural, got, ok)
		}
	}
	const named = "'configmaps', 'cronjobs', 'daemonsets', 'deployments', 'endpoints', 'endpointslices', 'horizontalpodautoscalers', " +
		"'ingresses', 'jobs', 'namespaces', 'nodes', 'persistentvolumeclaims', 'persistentvolumes', 'poddisruptionbudgets', " +
		"'pods', 'replicasets', 'secrets', 'serviceaccounts', 'services', 'statefulsets'"
	if cpid.BuiltinResourcesSQL != named {
		t.Errorf("BuiltinResourcesSQL = %s", cpid.BuiltinResourcesSQL)
	}
	if got := slices.Sorted(maps.Keys(cpid.BodiedResources)); !slices.Equal(got, []string{"endpoints", "endpointslices", "nodes", "pods"}) {
		t.Errorf("BodiedResources = %v", got)
	}
	wantIgnored := []string{"events", "leases", "localsubjectaccessreviews", "selfsubjectaccessreviews", "selfsubjectreviews",
		"serviceaccounts/token", "subjectaccessreviews", "tokenreviews"}
	if got := slices.Sorted(maps.Keys(cpid.IgnoredResources())); !slices.Equal(got, wantIgnored) {
		t.Errorf("IgnoredResources() = %v", got)
	}
	for _, c := range []struct{ kind, resource, want string }{
		{"", "pods", "Pod"}, {"", "endpoints", "Endpoints"}, {"Widget", "pods", "Widget"},
		{"", "leases", "leases"}, // not TraitNamed: its kind comes from a body
		{"", "widgets", "widgets"},
	} {
		if got := cpid.KindOf(c.kind, c.resource); got != c.want {
			t.Errorf("KindOf(%q, %q) = %q, want %q", c.kind, c.resource, got, c.want)
		}
	}
}

// TestMethod: the HTTP method of each write verb, none for reads.
func TestMethod(t *testing.T) {
	t.Parallel()
	want := map[string]string{"create": "POST", "update": "PUT", "patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETE",
		"get": "", "list": "", "watch": "", "apply": ""}
	for verb, m := range want {
		if got := cpid.Method(verb); got != m {
			t.Errorf("Method(%s) = %q, want %q", verb, got, m)
		}
		if cpid.IsWrite(verb) != (m != "") {
			t.Errorf("IsWrite(%s) = %v", verb, !(m != ""))
		}
	}
	if !slices.Equal(cpid.WriteVerbs, []string{"create", "update", "patch", "delete", "deletecollection"}) {
		t.Errorf("WriteVerbs = %v", cpid.WriteVerbs)
	}
}
