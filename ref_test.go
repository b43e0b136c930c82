package cpid_test

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
	ref := func(m cpid.ResourceMatch, kind string, sc cpid.Scope, name string) cpid.ObjectRef {
		return cpid.ObjectRef{TypeRef: cpid.TypeRef{ResourceMatch: m, Kind: kind, Scope: sc}, Name: name}
	}
	deploy := ref(res("apps", false, "deployments"), "Deployment", cpid.ScopeNamespaced, "web")
	for _, tc := range []struct {
		name string
		args []string
		want cpid.ObjectRef
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
		{"pod", []string{"pod/web-abc"}, ref(res("", false, "pods"), "Pod", cpid.ScopeNamespaced, "web-abc"), false},
		{"po", []string{"po/web-abc"}, ref(res("", false, "pods"), "Pod", cpid.ScopeNamespaced, "web-abc"), false},
		{"core group", []string{"pods.core/x"}, ref(res("", false, "pods"), "Pod", cpid.ScopeNamespaced, "x"), false},
		{"node is cluster-scoped", []string{"node/n1"}, ref(res("", false, "nodes"), "Node", cpid.ScopeCluster, "n1"), false},
		{"no", []string{"no/n1"}, ref(res("", false, "nodes"), "Node", cpid.ScopeCluster, "n1"), false},
		{"endpointslice", []string{"endpointslice/web-x"},
			ref(res("discovery.k8s.io", false, "endpointslices"), "EndpointSlice", cpid.ScopeNamespaced, "web-x"), false},
		{"endpoints stays endpoints", []string{"ep/web"}, ref(res("", false, "endpoints"), "Endpoints", cpid.ScopeNamespaced, "web"), false},
		{"sa", []string{"sa/default"}, ref(res("", false, "serviceaccounts"), "ServiceAccount", cpid.ScopeNamespaced, "default"), false},
		{"crd short name", []string{"crd/widgets.example.com"}, ref(res("apiextensions.k8s.io", false, "customresourcedefinitions"),
			"CustomResourceDefinition", cpid.ScopeCluster, "widgets.example.com"), false},
		{"a built-in name in another group", []string{"deployments.extensions/web"},
			ref(res("extensions", false, "deployments"), "Deployment", cpid.ScopeUnknown, "web"), false},
		{"custom resource with its group", []string{"widgets.example.com/w"},
			ref(res("example.com", false, "widgets"), "widgets", cpid.ScopeUnknown, "w"), false},
		{"custom resource, singular, any group", []string{"widget/w"},
			ref(res("", true, "widget", "widgets", "widgetes"), "widget", cpid.ScopeUnknown, "w"), false},
		{"custom resource ending in y", []string{"policy/p"},
			ref(res("", true, "policy", "policys", "policyes", "policies"), "policy", cpid.ScopeUnknown, "p"), false},
		{"no slash", []string{"web"}, cpid.ObjectRef{}, true},
		{"no name", []string{"deploy/"}, cpid.ObjectRef{}, true},
		{"no type", []string{"/web"}, cpid.ObjectRef{}, true},
		{"a name with a slash", []string{"deploy/default/web"}, cpid.ObjectRef{}, true},
		{"a group without a resource", []string{".apps/web"}, cpid.ObjectRef{}, true},
		{"three arguments", []string{"deploy", "web", "x"}, cpid.ObjectRef{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cpid.ParseRef(tc.args)
			if tc.bad {
				if err == nil {
					t.Errorf("%q: %+v, want an error", tc.args, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("%q: %v", tc.args, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%q (-want +got):\n%s", tc.args, diff)
			}
		})
	}
}
