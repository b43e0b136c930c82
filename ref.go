package cpid

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// resourceInfo is a built-in resource as kubectl knows it without asking
// the apiserver: its plural, singular and short names, kind, API group and
// whether its objects live in a namespace.
type resourceInfo struct {
	plural, singular string
	short            []string
	kind, group      string
	namespaced       bool
}

// builtinResources are the resources a reference may name by their
// short or singular name; any other resource is matched by its spelling
// (ParseType).
var builtinResources = []resourceInfo{
	{"pods", "pod", []string{"po"}, "Pod", "", true},
	{"services", "service", []string{"svc"}, "Service", "", true},
	{"endpoints", "endpoints", []string{"ep"}, "Endpoints", "", true},
	{"configmaps", "configmap", []string{"cm"}, "ConfigMap", "", true},
	{"secrets", "secret", nil, "Secret", "", true},
	{"serviceaccounts", "serviceaccount", []string{"sa"}, "ServiceAccount", "", true},
	{"persistentvolumeclaims", "persistentvolumeclaim", []string{"pvc"}, "PersistentVolumeClaim", "", true},
	{"replicationcontrollers", "replicationcontroller", []string{"rc"}, "ReplicationController", "", true},
	{"resourcequotas", "resourcequota", []string{"quota"}, "ResourceQuota", "", true},
	{"limitranges", "limitrange", []string{"limits"}, "LimitRange", "", true},
	{"events", "event", []string{"ev"}, "Event", "", true},
	{"nodes", "node", []string{"no"}, "Node", "", false},
	{"namespaces", "namespace", []string{"ns"}, "Namespace", "", false},
	{"persistentvolumes", "persistentvolume", []string{"pv"}, "PersistentVolume", "", false},
	{"deployments", "deployment", []string{"deploy"}, "Deployment", "apps", true},
	{"replicasets", "replicaset", []string{"rs"}, "ReplicaSet", "apps", true},
	{"statefulsets", "statefulset", []string{"sts"}, "StatefulSet", "apps", true},
	{"daemonsets", "daemonset", []string{"ds"}, "DaemonSet", "apps", true},
	{"controllerrevisions", "controllerrevision", nil, "ControllerRevision", "apps", true},
	{"jobs", "job", nil, "Job", "batch", true},
	{"cronjobs", "cronjob", []string{"cj"}, "CronJob", "batch", true},
	{"endpointslices", "endpointslice", nil, "EndpointSlice", "discovery.k8s.io", true},
	{"ingresses", "ingress", []string{"ing"}, "Ingress", "networking.k8s.io", true},
	{"networkpolicies", "networkpolicy", []string{"netpol"}, "NetworkPolicy", "networking.k8s.io", true},
	{"ingressclasses", "ingressclass", nil, "IngressClass", "networking.k8s.io", false},
	{"horizontalpodautoscalers", "horizontalpodautoscaler", []string{"hpa"}, "HorizontalPodAutoscaler", "autoscaling", true},
	{"poddisruptionbudgets", "poddisruptionbudget", []string{"pdb"}, "PodDisruptionBudget", "policy", true},
	{"leases", "lease", nil, "Lease", "coordination.k8s.io", true},
	{"roles", "role", nil, "Role", "rbac.authorization.k8s.io", true},
	{"rolebindings", "rolebinding", nil, "RoleBinding", "rbac.authorization.k8s.io", true},
	{"clusterroles", "clusterrole", nil, "ClusterRole", "rbac.authorization.k8s.io", false},
	{"clusterrolebindings", "clusterrolebinding", nil, "ClusterRoleBinding", "rbac.authorization.k8s.io", false},
	{"storageclasses", "storageclass", []string{"sc"}, "StorageClass", "storage.k8s.io", false},
	{"volumeattachments", "volumeattachment", nil, "VolumeAttachment", "storage.k8s.io", false},
	{"priorityclasses", "priorityclass", []string{"pc"}, "PriorityClass", "scheduling.k8s.io", false},
	{"customresourcedefinitions", "customresourcedefinition", []string{"crd", "crds"}, "CustomResourceDefinition", "apiextensions.k8s.io", false},
	{"mutatingwebhookconfigurations", "mutatingwebhookconfiguration", nil, "MutatingWebhookConfiguration", "admissionregistration.k8s.io", false},
	{"validatingwebhookconfigurations", "validatingwebhookconfiguration", nil, "ValidatingWebhookConfiguration", "admissionregistration.k8s.io", false},
	{"apiservices", "apiservice", nil, "APIService", "apiregistration.k8s.io", false},
	{"flowschemas", "flowschema", nil, "FlowSchema", "flowcontrol.apiserver.k8s.io", false},
	{"prioritylevelconfigurations", "prioritylevelconfiguration", nil, "PriorityLevelConfiguration", "flowcontrol.apiserver.k8s.io", false},
	{"certificatesigningrequests", "certificatesigningrequest", []string{"csr"}, "CertificateSigningRequest", "certificates.k8s.io", false},
}

// Scope says where a resource's objects live, when known.
type Scope int

const (
	ScopeUnknown    Scope = iota // not a built-in resource: either
	ScopeNamespaced              // the objects are in a namespace
	ScopeCluster                 // the objects are cluster-scoped
)

// TypeRef is the TYPE of a kubectl-style reference TYPE/NAME, resolved as
// far as it can be without the database.
type TypeRef struct {
	ResourceMatch
	Kind  string // for people: Deployment, or the type as typed
	Scope Scope
}

// ObjectRef is a reference TYPE/NAME, as cpid-tui history and the TUI's
// :history take it.
type ObjectRef struct {
	TypeRef
	Name string
}

// ParseType reads a resource type the way kubectl does, case-insensitive:
// a plural, singular or short name (deployments, deployment, deploy), a
// kind (Deployment), each optionally followed by its API group
// (deployments.apps), or its version and group (deployments.v1.apps). A
// type that is not a built-in resource is matched by its spellings: as
// typed, with s, es or y->ies added, in its group if given, else in any.
func ParseType(s string) (TypeRef, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return TypeRef{}, errors.New("no resource type")
	}
	name, group, grouped := strings.Cut(s, ".")
	if grouped {
		// A version between the resource and its group: deployments.v1.apps.
		if v, rest, ok := strings.Cut(group, "."); ok && isVersion(v) {
			group = rest
		}
		if group == "" || name == "" {
			return TypeRef{}, fmt.Errorf("resource type %q: want RESOURCE or RESOURCE.GROUP (deployments.apps)", s)
		}
		if group == "core" {
			group = ""
		}
	}
	for _, r := range builtinResources {
		if name != r.plural && name != r.singular && name != strings.ToLower(r.kind) && !slices.Contains(r.short, name) {
			continue
		}
		if grouped && group != r.group {
			// The same name in another group (an older group, or a
			// custom resource): the plural there, scope unknown.
			return TypeRef{ResourceMatch: ResourceMatch{Resources: []string{r.plural}, Group: group}, Kind: r.kind}, nil
		}
		sc := ScopeCluster
		if r.namespaced {
			sc = ScopeNamespaced
		}
		return TypeRef{ResourceMatch: ResourceMatch{Resources: []string{r.plural}, Group: r.group}, Kind: r.kind, Scope: sc}, nil
	}
	if strings.ContainsAny(name, "/ ") {
		return TypeRef{}, fmt.Errorf("resource type %q: not a resource name", s)
	}
	cands := []string{name}
	if !strings.HasSuffix(name, "s") {
		cands = append(cands, name+"s", name+"es")
		if stem, ok := strings.CutSuffix(name, "y"); ok {
			cands = append(cands, stem+"ies")
		}
	}
	return TypeRef{ResourceMatch: ResourceMatch{Resources: cands, Group: group, AnyGroup: !grouped}, Kind: name, Scope: ScopeUnknown}, nil
}

// isVersion reports whether s looks like an API version: v1, v2beta1.
func isVersion(s string) bool {
	if len(s) < 2 || s[0] != 'v' || s[1] < '1' || s[1] > '9' {
		return false
	}
	for _, c := range s[1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// ParseRef reads an object reference: TYPE/NAME, or TYPE and NAME as two
// arguments (kubectl get deploy web).
func ParseRef(args []string) (ObjectRef, error) {
	var typ, name string
	switch len(args) {
	case 1:
		var ok bool
		if typ, name, ok = strings.Cut(args[0], "/"); !ok {
			return ObjectRef{}, fmt.Errorf("%q: want TYPE/NAME, e.g. deploy/web or node/n1", args[0])
		}
	case 2:
		typ, name = args[0], args[1]
	default:
		return ObjectRef{}, errors.New("want one object: TYPE/NAME")
	}
	if name == "" || strings.Contains(name, "/") {
		return ObjectRef{}, fmt.Errorf("%q: want TYPE/NAME with a name without '/', e.g. deploy/web", strings.Join(args, " "))
	}
	t, err := ParseType(typ)
	if err != nil {
		return ObjectRef{}, err
	}
	return ObjectRef{TypeRef: t, Name: name}, nil
}

// String is the reference as Kind.group/NAME, or Kind/NAME for the core
// group and for a type whose group is not known (AnyGroup).
func (r ObjectRef) String() string {
	if r.AnyGroup || r.Group == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "." + r.Group + "/" + r.Name
}
