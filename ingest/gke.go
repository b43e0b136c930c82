package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cpid-dev/cpid/ingest/jsonscan"
)

// GKE's audit log reaches the user as Cloud Logging LogEntry objects
// (https://cloud.google.com/logging/docs/reference/v2/rest/v2/LogEntry)
// whose protoPayload is a google.cloud.audit.AuditLog
// (https://cloud.google.com/logging/docs/reference/audit/auditlog/rest/Shared.Types/AuditLog),
// one per Kubernetes API request, as described in "GKE audit logging
// information"
// (https://cloud.google.com/kubernetes-engine/docs/how-to/audit-logging)
// and in the schema Google's GKE MCP server documents
// (https://github.com/GoogleCloudPlatform/gke-mcp, pkg/tools/logging/schemas/k8s_audit_logs.md):
//
//	insertId                               the request's audit ID (operation.id is the same)
//	operation {id, producer: "k8s.io", first, last}
//	timestamp                              when the entry was emitted
//	receiveTimestamp                       when Cloud Logging received it (not used)
//	labels                                 the audit event's annotations
//	protoPayload.serviceName               "k8s.io"
//	protoPayload.methodName                io.k8s.<group>.<version>.<resource>[.<subresource>].<verb>
//	protoPayload.resourceName              <group or core>/<version>[/namespaces/<ns>]/<resource>[/<name>[/<subresource>]]
//	protoPayload.authenticationInfo.principalEmail   the user's name
//	protoPayload.requestMetadata.callerIp, .callerSuppliedUserAgent
//	protoPayload.request, .response        the objects, with an "@type" member added
//	protoPayload.status {code, message}    a google.rpc.Code, 0 for success
//
// gkeEvent builds the audit.k8s.io/v1 Event back; what it cannot carry is
// in gkeLoss (format.go), printed as a data-quality warning.

// gkeEvent returns the audit event a GKE LogEntry describes, as JSON.
func gkeEvent(d *doc) ([]byte, error) {
	b := d.Buf
	pp := d.top("protoPayload")
	str := func(v span) string {
		s, _ := jsonscan.String(b, v)
		return string(s)
	}
	if svc := str(memberOf(b, pp, "serviceName")); svc != "k8s.io" {
		//lint:ignore ST1005 Cloud Audit Logs is the name of a Google Cloud product
		return nil, fmt.Errorf("Cloud Audit Logs entry of service %q, not a Kubernetes API request", svc)
	}
	method := str(memberOf(b, pp, "methodName"))
	if !strings.HasPrefix(method, "io.k8s.") {
		return nil, fmt.Errorf("GKE audit entry with methodName %q, not io.k8s.*", method)
	}
	ev := gkeAudit{Kind: "Event", APIVersion: auditAPIVersion, Stage: "ResponseComplete", Level: "Metadata"}
	ev.Verb = method[strings.LastIndexByte(method, '.')+1:]

	op := d.top("operation")
	ev.AuditID = str(memberOf(b, op, "id"))
	if ev.AuditID == "" {
		ev.AuditID = str(d.top("insertId"))
	}
	// GKE writes one entry a request (first and last both true); an entry
	// that only opens a long request is its ResponseStarted.
	if first, last := memberOf(b, op, "first"), memberOf(b, op, "last"); isTrue(b, first) && last.OK() && !isTrue(b, last) {
		ev.Stage = "ResponseStarted"
	}
	ts := str(d.top("timestamp"))
	if ts == "" {
		ts = str(d.top("receiveTimestamp"))
	}
	if ts == "" {
		return nil, errors.New("GKE audit entry without timestamp")
	}
	ev.RequestReceivedTimestamp, ev.StageTimestamp = ts, ts

	if name := str(memberOf(b, pp, "resourceName")); name != "" {
		ev.ObjectRef, ev.RequestURI = gkeObject(name)
	}
	ev.User.Username = str(memberOf(b, memberOf(b, pp, "authenticationInfo"), "principalEmail"))
	meta := memberOf(b, pp, "requestMetadata")
	if ip := str(memberOf(b, meta, "callerIp")); ip != "" {
		ev.SourceIPs = []string{ip}
	}
	ev.UserAgent = str(memberOf(b, meta, "callerSuppliedUserAgent"))
	if labels := d.top("labels"); labels.OK() && b[labels.S] == '{' {
		ev.Annotations = map[string]string{}
		var m jsonscan.Member
		for it := jsonscan.Members(b, labels.S); it.Next(&m); {
			if s, ok := jsonscan.String(b, m.Val()); ok {
				ev.Annotations[string(m.Key(b))] = string(s)
			}
		}
	}

	req, resp := memberOf(b, pp, "request"), memberOf(b, pp, "response")
	if req.OK() && b[req.S] == '{' {
		ev.RequestObject = withoutType(b, req)
		ev.Level = "Request"
	}
	if resp.OK() && b[resp.S] == '{' {
		ev.ResponseObject = withoutType(b, resp)
		ev.Level = "RequestResponse"
	}
	ev.ResponseStatus = gkeStatus(b, ev.Verb, memberOf(b, pp, "status"), resp)
	if ev.ResponseStatus.Code >= 400 && ev.ResponseObject != nil {
		// A failure's response is its Status, which responseStatus holds.
		ev.ResponseObject = nil
		ev.Level = strings.Replace(ev.Level, "RequestResponse", "Request", 1)
	}
	return json.Marshal(&ev)
}

// gkeAudit is the part of audit.k8s.io/v1 Event a GKE entry fills.
type gkeAudit struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Level      string `json:"level"`
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	SourceIPs                []string          `json:"sourceIPs,omitempty"`
	UserAgent                string            `json:"userAgent,omitempty"`
	ObjectRef                *gkeRef           `json:"objectRef,omitempty"`
	ResponseStatus           *gkeCode          `json:"responseStatus,omitempty"`
	RequestObject            json.RawMessage   `json:"requestObject,omitempty"`
	ResponseObject           json.RawMessage   `json:"responseObject,omitempty"`
	RequestReceivedTimestamp string            `json:"requestReceivedTimestamp"`
	StageTimestamp           string            `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

type gkeRef struct {
	Resource    string `json:"resource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

type gkeCode struct {
	Metadata struct{} `json:"metadata"`
	Status   string   `json:"status,omitempty"`
	Message  string   `json:"message,omitempty"`
	Code     int      `json:"code"`
}

// gkeObject reads a resourceName,
// GROUP/VERSION[/namespaces/NS]/RESOURCE[/NAME[/SUBRESOURCE]] ("core" for
// the legacy group), into an object reference and the request URI it was
// (without the query, which the entry does not keep).
func gkeObject(name string) (*gkeRef, string) {
	p := strings.Split(name, "/")
	if len(p) < 3 {
		return nil, "/" + name
	}
	r := &gkeRef{APIGroup: p[0], APIVersion: p[1]}
	uri := "/apis/" + p[0] + "/" + p[1]
	if p[0] == "core" {
		r.APIGroup, uri = "", "/api/"+p[1]
	}
	rest := p[2:]
	// namespaces/NS/RESOURCE... is inside a namespace, except the
	// Namespace's own subresources (namespaces/NS/status, /finalize).
	if rest[0] == "namespaces" && len(rest) >= 3 && !(len(rest) == 3 && (rest[2] == "status" || rest[2] == "finalize")) {
		r.Namespace = rest[1]
		rest = rest[2:]
	}
	r.Resource = rest[0]
	if len(rest) > 1 {
		r.Name = rest[1]
	}
	if len(rest) > 2 {
		r.Subresource = strings.Join(rest[2:], "/")
	}
	return r, uri + "/" + strings.Join(p[2:], "/")
}

// gkeStatus is the response status: the Status the response holds, else
// the HTTP code of the google.rpc.Code in status
// (https://github.com/googleapis/googleapis/blob/master/google/rpc/code.proto
// gives each its HTTP mapping), 201 for a successful create.
func gkeStatus(b []byte, verb string, status, resp span) *gkeCode {
	st := &gkeCode{}
	if k, _ := jsonscan.String(b, memberOf(b, resp, "kind")); string(k) == "Status" {
		if n, ok := intValue(b, memberOf(b, resp, "code")); ok {
			st.Code = int(n)
			s, _ := jsonscan.String(b, memberOf(b, resp, "status"))
			m, _ := jsonscan.String(b, memberOf(b, resp, "message"))
			st.Status, st.Message = string(s), string(m)
			return st
		}
	}
	rpc, _ := intValue(b, memberOf(b, status, "code"))
	m, _ := jsonscan.String(b, memberOf(b, status, "message"))
	st.Message = string(m)
	switch rpc {
	case 0:
		st.Code = 200
		if verb == "create" {
			st.Code = 201
		}
		return st
	case 3, 9, 11: // INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE
		st.Code = 400
	case 16: // UNAUTHENTICATED
		st.Code = 401
	case 7: // PERMISSION_DENIED
		st.Code = 403
	case 5: // NOT_FOUND
		st.Code = 404
	case 6, 10: // ALREADY_EXISTS, ABORTED
		st.Code = 409
	case 8: // RESOURCE_EXHAUSTED
		st.Code = 429
	case 1: // CANCELLED
		st.Code = 499
	case 12: // UNIMPLEMENTED
		st.Code = 501
	case 14: // UNAVAILABLE
		st.Code = 503
	case 4: // DEADLINE_EXCEEDED
		st.Code = 504
	default: // UNKNOWN, INTERNAL, DATA_LOSS
		st.Code = 500
	}
	st.Status = "Failure"
	return st
}

func isTrue(b []byte, v span) bool { return v.OK() && b[v.S] == 't' }

// withoutType returns the object at v without the "@type" member Cloud
// Logging adds to the request and response objects.
func withoutType(b []byte, v span) json.RawMessage {
	out := make([]byte, 0, v.E-v.S)
	out = append(out, '{')
	var m jsonscan.Member
	for it := jsonscan.Members(b, v.S); it.Next(&m); {
		if string(m.Key(b)) == "@type" {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, b[m.Start:m.ValEnd]...)
	}
	return append(out, '}')
}
