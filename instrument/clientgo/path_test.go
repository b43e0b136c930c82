package clientgo

import "testing"

func TestParsePath(t *testing.T) {
	tests := []struct {
		name string
		path string
		want string // group/version resource ns name sub, or "" when not an API path
	}{
		{name: "core collection", path: "/api/v1/namespaces/default/pods", want: "/v1 pods default  "},
		{name: "core object", path: "/api/v1/namespaces/default/pods/web", want: "/v1 pods default web "},
		{name: "status", path: "/api/v1/namespaces/default/pods/web/status", want: "/v1 pods default web status"},
		{name: "group", path: "/apis/apps/v1/namespaces/ns/replicasets/web", want: "apps/v1 replicasets ns web "},
		{name: "cluster scoped", path: "/api/v1/nodes/n1", want: "/v1 nodes  n1 "},
		{name: "namespace itself", path: "/api/v1/namespaces/ns", want: "/v1 namespaces  ns "},
		{name: "namespace status", path: "/api/v1/namespaces/ns/status", want: "/v1 namespaces  ns status"},
		{name: "namespace finalize", path: "/api/v1/namespaces/ns/finalize", want: "/v1 namespaces  ns finalize"},
		{name: "create namespace", path: "/api/v1/namespaces", want: "/v1 namespaces   "},
		{name: "behind a proxy prefix", path: "/k8s/clusters/c1/apis/batch/v1/namespaces/ns/jobs/j/status", want: "batch/v1 jobs ns j status"},
		{name: "deep subresource", path: "/api/v1/namespaces/ns/pods/p/proxy/a/b", want: "/v1 pods ns p proxy/a/b"},
		{name: "not an API path", path: "/healthz", want: ""},
		{name: "group without version", path: "/apis/apps", want: ""},
		{name: "version only", path: "/api/v1", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tgt, ok := parsePath(tt.path)
			got := ""
			if ok {
				got = tgt.gv.Group + "/" + tgt.gv.Version + " " + tgt.resource + " " + tgt.namespace + " " + tgt.name + " " + tgt.subresource
			}
			if got != tt.want {
				t.Errorf("parsePath(%q) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}
