package reconstruct

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cpid-dev/cpid"
)

// Event is one write request as the audit log saw it at its last stage: a
// create, update, patch, delete or deletecollection, on an object or one of
// its subresources. Times are Unix nanoseconds of the apiserver's clock.
type Event struct {
	ID          int64 // audit_events.id: the order of ingestion, and the key of everything derived
	AuditID     string
	Verb        string
	APIGroup    string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	UID         string
	// ResourceVersion is the object's as this write stored it (from the
	// response), else the one the request named.
	ResourceVersion string
	Username        string
	UserAgent       string
	Code            int
	ReceivedNS      int64
	StageNS         int64
	// CPID and Ancestors are the trace context the object carries after the
	// write (annotation v1.cpid.dev/cpid), empty when none.
	CPID      string
	Ancestors []string
	// Traceparent is the W3C trace context the object carries after the
	// write (tracing.k8s.io/traceparent), empty when none.
	Traceparent string
	OwnerRefs   []cpid.OwnerRef
	// Object is the object after the write when the audit log has it (the
	// response body of a RequestResponse event, when that is the object and
	// not a Status); Request is the request body (the patch, for a patch).
	Object  json.RawMessage
	Request json.RawMessage
	// Latency is the audit event's annotations when they hold the
	// apiserver's latency breakdown (apiserver.latency.k8s.io/*), else nil.
	Latency json.RawMessage
	// Source names the log the event came from (its rotation family), so
	// that events of two apiservers can be told apart.
	Source string

	decoded   bool
	writer    *cpid.Writer // Writer's, once asked
	hasObject bool         // Object was there when Digest dropped it
	body      *body        // the fields of Object the engine reads (DecodeObject)
	hashed    bool
	hasReq    bool
	reqHash   [20]byte // of Request (hashRequest)
	metaOnly  bool     // metadataOnly, read by hashRequest
	hasSpec   bool     // specHash is the hash of the spec the request sent
	specHash  [20]byte
	// minReady and deadline are the spec's minReadySeconds and
	// progressDeadlineSeconds the request sent (0: none);
	// deadlineExceeded: a status write with a ProgressDeadlineExceeded
	// condition.
	minReady, deadline time.Duration
	deadlineExceeded   bool
}

// Key is the object the event wrote.
func (e *Event) Key() cpid.ObjectKey {
	ns := e.Namespace
	if e.Resource == "namespaces" && e.APIGroup == "" {
		// kube-apiserver's request info gives a Namespace's own name as
		// the namespace of the requests on it (delete, status, finalize),
		// not of its create: a Namespace is cluster-scoped.
		ns = ""
	}
	return cpid.ObjectKey{Group: e.APIGroup, Resource: e.Resource, Namespace: ns, Name: e.Name}
}

// Writer names who made the write (ClassifyWriter), computed once.
func (e *Event) Writer() cpid.Writer {
	if e.writer == nil {
		w := ClassifyWriter(e.Username, e.UserAgent)
		e.writer = &w
	}
	return *e.writer
}

// APILatency is how long the apiserver took with the request: from
// receiving it to its last stage (admission, webhooks, priority and
// fairness queueing, etcd).
func (e *Event) APILatency() time.Duration { return time.Duration(e.StageNS - e.ReceivedNS) }

// LatencyPrefix is the prefix of the audit annotations in which the
// apiserver breaks down the latency of a slow request (etcd, admission
// webhooks, priority and fairness queueing, serialization).
const LatencyPrefix = "apiserver.latency.k8s.io/"

// LatencyParts returns the apiserver's breakdown of the request's latency
// from its audit annotations, largest first, without the total and the
// parts under a millisecond: "etcd 9.999s, serialize-response-object 2ms".
// "" when the event has none.
func (e *Event) LatencyParts() string {
	if len(e.Latency) == 0 {
		return ""
	}
	var ann map[string]string
	if json.Unmarshal(e.Latency, &ann) != nil {
		return ""
	}
	type part struct {
		name string
		d    time.Duration
	}
	var ps []part
	for k, v := range ann {
		name, ok := strings.CutPrefix(k, LatencyPrefix)
		d, err := time.ParseDuration(v)
		if ok && err == nil && name != "total" && d >= time.Millisecond {
			ps = append(ps, part{name, d})
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].d > ps[j].d || ps[i].d == ps[j].d && ps[i].name < ps[j].name })
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s", p.name, p.d.Round(time.Millisecond))
	}
	return b.String()
}

// Failed reports a write that did not change the object: a 4xx or 5xx
// answer, a 409 conflict among them. It is an attempt, not a revision.
func (e *Event) Failed() bool { return e.Code >= 400 }

// Ignored lists resources (and resource/subresource) whose writes are
// heartbeats and records, not propagation: leases renew every few seconds
// and Events narrate what the controllers did. They are left out of
// revisions and timelines. It is the table's (cpid.IgnoredResources).
var Ignored = cpid.IgnoredResources()

// userAgents whose writes are a person's, whatever identity they use (a CI
// job running kubectl with a service account token is still a user change).
var userAgents = []string{"kubectl/", "helm/", "k9s/", "kustomize/", "argocd", "flux", "terraform"}

// controllerAgents are clients that act for the control plane even when
// their identity is not a system: one (KWOK's fake kubelet uses a client
// certificate of its own, for example).
var controllerAgents = []string{"kube-controller-manager/", "kube-scheduler/", "kubelet/", "kube-apiserver/", "kwok/", "kube-proxy/", "cloud-controller-manager/"}

// ClassifyWriter names the writer of an event from its username and user
// agent, in this order: a user agent of people's tools is a user; a
// service account is the controller of that name; any other system:
// identity is the control plane; a known controller user agent is that
// controller; anything else is a user.
func ClassifyWriter(username, userAgent string) cpid.Writer {
	for _, p := range userAgents {
		if strings.HasPrefix(userAgent, p) {
			return cpid.Writer{Name: agentName(userAgent) + " (" + username + ")", User: true}
		}
	}
	switch {
	case strings.HasPrefix(username, "system:serviceaccount:"):
		parts := strings.Split(username, ":")
		return cpid.Writer{Name: parts[len(parts)-1]}
	case strings.HasPrefix(username, "system:node:"):
		return cpid.Writer{Name: Kubelet(strings.TrimPrefix(username, "system:node:"))}
	case strings.HasPrefix(username, "system:"):
		return cpid.Writer{Name: strings.TrimPrefix(username, "system:")}
	}
	for _, p := range controllerAgents {
		if strings.HasPrefix(userAgent, p) {
			return cpid.Writer{Name: agentName(userAgent)}
		}
	}
	if username == "" {
		return cpid.Writer{Name: agentName(userAgent), User: true}
	}
	return cpid.Writer{Name: agentName(userAgent) + " (" + username + ")", User: true}
}

// agentName is the program of a user agent: "kubectl/v1.37.2 (linux)" -> "kubectl".
func agentName(ua string) string {
	if i := strings.IndexAny(ua, "/ "); i > 0 {
		return ua[:i]
	}
	if ua == "" {
		return "unknown"
	}
	return ua
}

// metadataOnly reports a patch of an object (not a subresource) whose body
// sets only its labels or annotations, as kubectl annotate and kubectl
// label send: a merge or strategic merge patch with only "metadata" (and
// type meta), or a JSON patch whose every path is under
// /metadata/annotations or /metadata/labels.
func metadataOnly(e *Event) bool {
	if e.Verb != "patch" || e.Subresource != "" || len(e.Request) == 0 {
		return false
	}
	metaPaths := func(p string) bool {
		return strings.HasPrefix(p, "/metadata/annotations") || strings.HasPrefix(p, "/metadata/labels")
	}
	switch e.Request[0] {
	case '[':
		var ops []struct {
			Path string `json:"path"`
			From string `json:"from"`
		}
		if json.Unmarshal(e.Request, &ops) != nil || len(ops) == 0 {
			return false
		}
		for _, op := range ops {
			if !metaPaths(op.Path) || op.From != "" && !metaPaths(op.From) {
				return false
			}
		}
		return true
	case '{':
		var top map[string]json.RawMessage
		if json.Unmarshal(e.Request, &top) != nil || top["metadata"] == nil {
			return false
		}
		for k := range top {
			if k != "metadata" && k != "apiVersion" && k != "kind" {
				return false
			}
		}
		var meta map[string]json.RawMessage
		if json.Unmarshal(top["metadata"], &meta) != nil {
			return false
		}
		for k := range meta {
			if k != "annotations" && k != "labels" && k != "resourceVersion" {
				return false
			}
		}
		return true
	}
	return false
}
