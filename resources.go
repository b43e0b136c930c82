package cpid

import (
	"sort"
	"strings"
)

// Scope says where a resource's objects live, when known.
type Scope int

const (
	ScopeUnknown    Scope = iota // not a built-in resource: either
	ScopeNamespaced              // the objects are in a namespace
	ScopeCluster                 // the objects are cluster-scoped
)

// Trait is what cpid does differently with a resource's writes; a
// resource may have several.
type Trait uint8

const (
	// TraitBodied: reconstruct's rules read its objects (a Pod's node, a
	// Node's conditions, the Pods an EndpointSlice lists), so its writes'
	// objects are fetched, and audited without them (Metadata level) those
	// links are lost, which ingest and reconstruct say.
	TraitBodied Trait = 1 << iota
	// TraitIgnored: its writes are heartbeats and records, not
	// propagation (leases renew every few seconds, Events narrate what the
	// controllers did): reconstruct leaves them out of revisions and
	// timelines.
	TraitIgnored
	// TraitNamed: KindOf names its kind without reading an object
	// (BuiltinResourcesSQL); the kind of the others is read from a body.
	TraitNamed
)

// Resource is a built-in Kubernetes resource as cpid knows it without
// asking an apiserver: its plural, singular and short names (the names a
// reference may use, ParseType; none for a resource nobody names), kind,
// API group, scope and traits.
type Resource struct {
	Plural, Singular string
	Short            []string
	Kind, Group      string
	Scope            Scope
	Traits           Trait
}

// Bodied reports TraitBodied: reconstruct's rules read the objects.
func (r Resource) Bodied() bool { return r.Traits&TraitBodied != 0 }

// Ignored reports TraitIgnored: reconstruct leaves the writes out.
func (r Resource) Ignored() bool { return r.Traits&TraitIgnored != 0 }

const (
	ns      = ScopeNamespaced
	cluster = ScopeCluster
	bodied  = TraitBodied
	ignored = TraitIgnored
	named   = TraitNamed
)

// Resources is the one table of the built-in resources cpid knows; every
// package reads it (or the lists derived from it below) rather than a copy.
// Lists derived by plural (BodiedResources, IgnoredResources, KindOf) match
// a resource in any group: events are ignored in core and events.k8s.io.
var Resources = []Resource{
	{"pods", "pod", []string{"po"}, "Pod", "", ns, bodied | named},
	{"services", "service", []string{"svc"}, "Service", "", ns, named},
	{"endpoints", "endpoints", []string{"ep"}, "Endpoints", "", ns, bodied | named},
	{"configmaps", "configmap", []string{"cm"}, "ConfigMap", "", ns, named},
	{"secrets", "secret", nil, "Secret", "", ns, named},
	{"serviceaccounts", "serviceaccount", []string{"sa"}, "ServiceAccount", "", ns, named},
	{"persistentvolumeclaims", "persistentvolumeclaim", []string{"pvc"}, "PersistentVolumeClaim", "", ns, named},
	{"replicationcontrollers", "replicationcontroller", []string{"rc"}, "ReplicationController", "", ns, 0},
	{"resourcequotas", "resourcequota", []string{"quota"}, "ResourceQuota", "", ns, 0},
	{"limitranges", "limitrange", []string{"limits"}, "LimitRange", "", ns, 0},
	{"events", "event", []string{"ev"}, "Event", "", ns, ignored},
	{"nodes", "node", []string{"no"}, "Node", "", cluster, bodied | named},
	{"namespaces", "namespace", []string{"ns"}, "Namespace", "", cluster, named},
	{"persistentvolumes", "persistentvolume", []string{"pv"}, "PersistentVolume", "", cluster, named},
	{"deployments", "deployment", []string{"deploy"}, "Deployment", "apps", ns, named},
	{"replicasets", "replicaset", []string{"rs"}, "ReplicaSet", "apps", ns, named},
	{"statefulsets", "statefulset", []string{"sts"}, "StatefulSet", "apps", ns, named},
	{"daemonsets", "daemonset", []string{"ds"}, "DaemonSet", "apps", ns, named},
	{"controllerrevisions", "controllerrevision", nil, "ControllerRevision", "apps", ns, 0},
	{"jobs", "job", nil, "Job", "batch", ns, named},
	{"cronjobs", "cronjob", []string{"cj"}, "CronJob", "batch", ns, named},
	{"endpointslices", "endpointslice", nil, "EndpointSlice", "discovery.k8s.io", ns, bodied | named},
	{"ingresses", "ingress", []string{"ing"}, "Ingress", "networking.k8s.io", ns, named},
	{"networkpolicies", "networkpolicy", []string{"netpol"}, "NetworkPolicy", "networking.k8s.io", ns, 0},
	{"ingressclasses", "ingressclass", nil, "IngressClass", "networking.k8s.io", cluster, 0},
	{"horizontalpodautoscalers", "horizontalpodautoscaler", []string{"hpa"}, "HorizontalPodAutoscaler", "autoscaling", ns, named},
	{"poddisruptionbudgets", "poddisruptionbudget", []string{"pdb"}, "PodDisruptionBudget", "policy", ns, named},
	{"leases", "lease", nil, "Lease", "coordination.k8s.io", ns, ignored},
	{"roles", "role", nil, "Role", "rbac.authorization.k8s.io", ns, 0},
	{"rolebindings", "rolebinding", nil, "RoleBinding", "rbac.authorization.k8s.io", ns, 0},
	{"clusterroles", "clusterrole", nil, "ClusterRole", "rbac.authorization.k8s.io", cluster, 0},
	{"clusterrolebindings", "clusterrolebinding", nil, "ClusterRoleBinding", "rbac.authorization.k8s.io", cluster, 0},
	{"storageclasses", "storageclass", []string{"sc"}, "StorageClass", "storage.k8s.io", cluster, 0},
	{"volumeattachments", "volumeattachment", nil, "VolumeAttachment", "storage.k8s.io", cluster, 0},
	{"priorityclasses", "priorityclass", []string{"pc"}, "PriorityClass", "scheduling.k8s.io", cluster, 0},
	{"customresourcedefinitions", "customresourcedefinition", []string{"crd", "crds"}, "CustomResourceDefinition", "apiextensions.k8s.io", cluster, 0},
	{"mutatingwebhookconfigurations", "mutatingwebhookconfiguration", nil, "MutatingWebhookConfiguration", "admissionregistration.k8s.io", cluster, 0},
	{"validatingwebhookconfigurations", "validatingwebhookconfiguration", nil, "ValidatingWebhookConfiguration", "admissionregistration.k8s.io", cluster, 0},
	{"apiservices", "apiservice", nil, "APIService", "apiregistration.k8s.io", cluster, 0},
	{"flowschemas", "flowschema", nil, "FlowSchema", "flowcontrol.apiserver.k8s.io", cluster, 0},
	{"prioritylevelconfigurations", "prioritylevelconfiguration", nil, "PriorityLevelConfiguration", "flowcontrol.apiserver.k8s.io", cluster, 0},
	{"certificatesigningrequests", "certificatesigningrequest", []string{"csr"}, "CertificateSigningRequest", "certificates.k8s.io", cluster, 0},
	// Reviews are questions to the apiserver, not objects: nobody names
	// them in a reference.
	{"tokenreviews", "", nil, "TokenReview", "authentication.k8s.io", cluster, ignored},
	{"selfsubjectreviews", "", nil, "SelfSubjectReview", "authentication.k8s.io", cluster, ignored},
	{"subjectaccessreviews", "", nil, "SubjectAccessReview", "authorization.k8s.io", cluster, ignored},
	{"selfsubjectaccessreviews", "", nil, "SelfSubjectAccessReview", "authorization.k8s.io", cluster, ignored},
	{"localsubjectaccessreviews", "", nil, "LocalSubjectAccessReview", "authorization.k8s.io", ns, ignored},
}

// ignoredSubresources are resource/subresource pairs whose writes are left
// out although their resource's are not: a service account's token
// requests are not changes to it.
var ignoredSubresources = []string{"serviceaccounts/token"}

// byPlural indexes Resources by plural.
var byPlural = func() map[string]int {
	m := make(map[string]int, len(Resources))
	for i, r := range Resources {
		m[r.Plural] = i
	}
	return m
}()

// LookupResource returns the built-in resource of that plural, in any
// group.
func LookupResource(plural string) (Resource, bool) {
	i, ok := byPlural[plural]
	if !ok {
		return Resource{}, false
	}
	return Resources[i], true
}

// resourcesWith returns the plurals of the resources with trait t, as a
// set.
func resourcesWith(t Trait) map[string]bool {
	m := map[string]bool{}
	for _, r := range Resources {
		if r.Traits&t != 0 {
			m[r.Plural] = true
		}
	}
	return m
}

// BodiedResources are the plurals of the resources with TraitBodied.
var BodiedResources = resourcesWith(TraitBodied)

// IgnoredResources returns a new set of the plurals of the resources with
// TraitIgnored and the resource/subresource pairs left out
// (serviceaccounts/token): reconstruct's default Ignored.
func IgnoredResources() map[string]bool {
	m := resourcesWith(TraitIgnored)
	for _, s := range ignoredSubresources {
		m[s] = true
	}
	return m
}

// KindOf names the kind of a resource: from the object when the audit log
// has it (kind), else from the resources with TraitNamed, else the
// resource itself.
func KindOf(kind, resource string) string {
	if kind != "" {
		return kind
	}
	if r, ok := LookupResource(resource); ok && r.Traits&TraitNamed != 0 {
		return r.Kind
	}
	return resource
}

// BuiltinResourcesSQL is the resources KindOf names without a body, as a
// SQL list ('configmaps', 'cronjobs', ...): queries read the kind from an
// object's body for the others only (reading a body decompresses its block).
var BuiltinResourcesSQL = func() string {
	out := make([]string, 0, len(Resources))
	for r := range resourcesWith(TraitNamed) {
		out = append(out, "'"+r+"'")
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}()

// writeMethods are the verbs of writes, in WriteVerbs' order, and their
// HTTP methods.
var writeMethods = []struct{ verb, method string }{
	{"create", "POST"}, {"update", "PUT"}, {"patch", "PATCH"}, {"delete", "DELETE"}, {"deletecollection", "DELETE"},
}

// WriteVerbs are the verbs of the audit events that write an object: the
// writes reconstruct reads.
var WriteVerbs = func() []string {
	vs := make([]string, len(writeMethods))
	for i, w := range writeMethods {
		vs[i] = w.verb
	}
	return vs
}()

// Method is the HTTP method of a write's verb: POST for create; "" for a
// verb that does not write (get, list, watch).
func Method(verb string) string {
	for _, w := range writeMethods {
		if w.verb == verb {
			return w.method
		}
	}
	return ""
}

// IsWrite reports whether a verb changes objects (one of WriteVerbs).
func IsWrite(verb string) bool { return Method(verb) != "" }
