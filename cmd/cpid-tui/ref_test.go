package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cpid-dev/cpid"
)

// TestParseRef: kubectl's ways of naming an object, and what each
// resolves to before the database is asked.
func TestParseRef(t *testing.T) {
	res := func(group string, any bool, rs ...string) cpid.ResourceMatch {
		return cpid.ResourceMatch{Resources: rs, Group: group, AnyGroup: any}
	}
	deploy := objectRef{typeRef{res("apps", false, "deployments"), "Deployment", scopeNamespaced}, "web"}
	for _, tc := range []struct {
		name string
		args []string
		want objectRef
		bad  bool
	}{
		{"short name", []string{"deploy/web"}, deploy, false},
		{"singular", []string{"deployment/web"}, deploy, false},
		{"plural", []string{"deployments/web"}, deploy, false},
		{"kind, any case", []string{"Deployment/web"}, deploy, false},
		{"plural and group", []string{"deployments.apps/web"}, deploy, false},
		{"version and group", []string{"deployments.v1.apps/web"}, deploy, false},
		{"short name and group", []string{"DEPLOY.APPS/web"}, deploy, false},
		{"two arguments", []string{"deploy", "web"}, deploy, false},
		{"pod", []string{"pod/web-abc"}, objectRef{typeRef{res("", false, "pods"), "Pod", scopeNamespaced}, "web-abc"}, false},
		{"po", []string{"po/web-abc"}, objectRef{typeRef{res("", false, "pods"), "Pod", scopeNamespaced}, "web-abc"}, false},
		{"core group", []string{"pods.core/x"}, objectRef{typeRef{res("", false, "pods"), "Pod", scopeNamespaced}, "x"}, false},
		{"node is cluster-scoped", []string{"node/n1"}, objectRef{typeRef{res("", false, "nodes"), "Node", scopeCluster}, "n1"}, false},
		{"no", []string{"no/n1"}, objectRef{typeRef{res("", false, "nodes"), "Node", scopeCluster}, "n1"}, false},
		{"endpointslice", []string{"endpointslice/web-x"},
			objectRef{typeRef{res("discovery.k8s.io", false, "endpointslices"), "EndpointSlice", scopeNamespaced}, "web-x"}, false},
		{"endpoints stays endpoints", []string{"ep/web"}, objectRef{typeRef{res("", false, "endpoints"), "Endpoints", scopeNamespaced}, "web"}, false},
		{"sa", []string{"sa/default"}, objectRef{typeRef{res("", false, "serviceaccounts"), "ServiceAccount", scopeNamespaced}, "default"}, false},
		{"crd short name", []string{"crd/widgets.example.com"}, objectRef{typeRef{res("apiextensions.k8s.io", false, "customresourcedefinitions"),
			"CustomResourceDefinition", scopeCluster}, "widgets.example.com"}, false},
		{"a built-in name in another group", []string{"deployments.extensions/web"},
			objectRef{typeRef{res("extensions", false, "deployments"), "Deployment", scopeUnknown}, "web"}, false},
		{"custom resource with its group", []string{"widgets.example.com/w"},
			objectRef{typeRef{res("example.com", false, "widgets"), "widgets", scopeUnknown}, "w"}, false},
		{"custom resource, singular, any group", []string{"widget/w"},
			objectRef{typeRef{res("", true, "widget", "widgets", "widgetes"), "widget", scopeUnknown}, "w"}, false},
		{"custom resource ending in y", []string{"policy/p"},
			objectRef{typeRef{res("", true, "policy", "policys", "policyes", "policies"), "policy", scopeUnknown}, "p"}, false},
		{"no slash", []string{"web"}, objectRef{}, true},
		{"no name", []string{"deploy/"}, objectRef{}, true},
		{"no type", []string{"/web"}, objectRef{}, true},
		{"a name with a slash", []string{"deploy/default/web"}, objectRef{}, true},
		{"a group without a resource", []string{".apps/web"}, objectRef{}, true},
		{"three arguments", []string{"deploy", "web", "x"}, objectRef{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRef(tc.args)
			if tc.bad {
				if err == nil {
					t.Errorf("%q: %+v, want an error", tc.args, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("%q: %v", tc.args, err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(objectRef{})); diff != "" {
				t.Errorf("%q (-want +got):\n%s", tc.args, diff)
			}
		})
	}
}

// TestParseWhen: --since and --until take RFC 3339 times and durations
// back from the newest event.
func TestParseWhen(t *testing.T) {
	const newest = int64(1795364825563764000)
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"", 0, false},
		{"2026-11-22T16:26:50Z", 1795364810000000000, false},
		{"2026-11-22T17:26:50.5+01:00", 1795364810500000000, false},
		{"10s", newest - 10e9, false},
		{"1h30m", newest - 5400e9, false},
		{"-5m", 0, true},
		{"yesterday", 0, true},
		{"2026-11-22 16:26:50", 0, true},
	} {
		got, err := parseWhen("--since", tc.in, newest)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("parseWhen(%q) = %d, %v; want %d (error: %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
	if _, err := parseWhen("--since", "10m", 0); err == nil {
		t.Error("a duration in a database without events: no error")
	}
}
