package ingest_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
)

// gkeUpdate is a GKE audit LogEntry of a Deployment update, in the shape
// GKE documents (gke.go).
const gkeUpdate = `{"insertId":"5a1d7e0e-58b0-4b64-9a43-0b1f1f0c1d2e",` +
	`"labels":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""},` +
	`"logName":"projects/p/logs/cloudaudit.googleapis.com%2Factivity",` +
	`"operation":{"first":true,"id":"5a1d7e0e-58b0-4b64-9a43-0b1f1f0c1d2e","last":true,"producer":"k8s.io"},` +
	`"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog",` +
	`"authenticationInfo":{"principalEmail":"alice@example.com"},` +
	`"authorizationInfo":[{"granted":true,"permission":"io.k8s.apps.v1.deployments.update","resource":"apps/v1/namespaces/default/deployments/web"}],` +
	`"methodName":"io.k8s.apps.v1.deployments.update",` +
	`"request":{"@type":"apps.k8s.io/v1.Deployment","apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":5}},` +
	`"requestMetadata":{"callerIp":"203.0.113.10","callerSuppliedUserAgent":"kubectl/v1.37.2 (linux/amd64) kubernetes/abc"},` +
	`"resourceName":"apps/v1/namespaces/default/deployments/web",` +
	`"response":{"@type":"apps.k8s.io/v1.Deployment","apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","uid":"u-1","resourceVersion":"812"},"spec":{"replicas":5}},` +
	`"serviceName":"k8s.io","status":{"code":0}},` +
	`"receiveTimestamp":"2026-11-22T16:27:31.117Z","resource":{"labels":{"cluster_name":"c","location":"us-central1","project_id":"p"},"type":"k8s_cluster"},` +
	`"severity":"NOTICE","timestamp":"2026-11-22T16:26:59.672123Z"}`

func gkeWith(replace ...string) string {
	return strings.NewReplacer(replace...).Replace(gkeUpdate)
}

// TestDecodeGKE reads a GKE AuditLog entry into the audit event it
// describes: what the entry carries, and what gkeLoss says it does not.
func TestDecodeGKE(t *testing.T) {
	at, _ := time.Parse(time.RFC3339Nano, "2026-11-22T16:26:59.672123Z")
	ev := decodeLineAudit(t, gkeUpdate)
	want := cpid.AuditEvent{AuditID: "5a1d7e0e-58b0-4b64-9a43-0b1f1f0c1d2e", Stage: "ResponseComplete", Level: "RequestResponse",
		Verb: "update", RequestURI: "/apis/apps/v1/namespaces/default/deployments/web", APIGroup: "apps", APIVersion: "v1",
		Resource: "deployments", Namespace: "default", Name: "web", UID: "u-1", ResourceVersion: "812",
		Username: "alice@example.com", UserAgent: "kubectl/v1.37.2 (linux/amd64) kubernetes/abc", SourceIPs: []string{"203.0.113.10"},
		Code: 200, ReceivedNS: at.UnixNano(), StageNS: at.UnixNano()}
	got := ev
	got.Hash, got.Annotations, got.ResponseStatus, got.RequestObject, got.ResponseObject = [16]byte{}, nil, nil, nil, nil
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("event\n  %+v\nwant\n  %+v", got, want)
	}
	if strings.Contains(string(ev.RequestObject)+string(ev.ResponseObject), "@type") {
		t.Errorf("@type left in the bodies: %s %s", ev.RequestObject, ev.ResponseObject)
	}
	var ann map[string]string
	if json.Unmarshal(ev.Annotations, &ann) != nil || ann["authorization.k8s.io/decision"] != "allow" {
		t.Errorf("annotations %s", ev.Annotations)
	}

	for _, tc := range []struct {
		name                             string
		line                             string
		verb, sub, res, ns, name2, stage string
		code                             int
	}{
		{"create by a controller", gkeWith(`deployments.update`, `pods.create`, `apps/v1/namespaces/default/deployments/web`,
			`core/v1/namespaces/default/pods`, `"alice@example.com"`, `"system:serviceaccount:kube-system:replicaset-controller"`),
			"create", "", "pods", "default", "web", "ResponseComplete", 201},
		{"subresource of a cluster-scoped object", gkeWith(`io.k8s.apps.v1.deployments.update`, `io.k8s.core.v1.nodes.status.patch`,
			`apps/v1/namespaces/default/deployments/web`, `core/v1/nodes/node-1/status`),
			"patch", "status", "nodes", "", "node-1", "ResponseComplete", 200},
		{"a namespace's finalize", gkeWith(`io.k8s.apps.v1.deployments.update`, `io.k8s.core.v1.namespaces.finalize.update`,
			`apps/v1/namespaces/default/deployments/web`, `core/v1/namespaces/team-a/finalize`),
			"update", "finalize", "namespaces", "", "team-a", "ResponseComplete", 200},
		{"a conflict", gkeWith(`"status":{"code":0}`, `"status":{"code":10,"message":"Conflict"}`,
			`"response":{"@type":"apps.k8s.io/v1.Deployment","apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","uid":"u-1","resourceVersion":"812"},"spec":{"replicas":5}}`,
			`"response":{"@type":"meta.k8s.io/v1.Status","apiVersion":"v1","kind":"Status","status":"Failure","reason":"Conflict","code":409}`),
			"update", "", "deployments", "default", "web", "ResponseComplete", 409},
		{"a denial without a response", gkeWith(`"status":{"code":0}`, `"status":{"code":7,"message":"Forbidden"}`, `"response":`, `"x":`),
			"update", "", "deployments", "default", "web", "ResponseComplete", 403},
		{"the start of a long request", gkeWith(`"last":true`, `"last":false`), "update", "", "deployments", "default", "web", "ResponseStarted", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := decodeLineAudit(t, tc.line)
			if ev.Verb != tc.verb || ev.Subresource != tc.sub || ev.Resource != tc.res || ev.Namespace != tc.ns ||
				ev.Name != tc.name2 || ev.Stage != tc.stage || ev.Code != tc.code {
				t.Errorf("got %s %s/%s %s/%s %s %d", ev.Verb, ev.Resource, ev.Subresource, ev.Namespace, ev.Name, ev.Stage, ev.Code)
			}
		})
	}

	for _, tc := range []struct{ name, line, want string }{
		{"not Kubernetes", gkeWith(`"serviceName":"k8s.io"`, `"serviceName":"container.googleapis.com"`),
			`Cloud Audit Logs entry of service "container.googleapis.com", not a Kubernetes API request`},
		{"no time", gkeWith(`"timestamp":"2026-11-22T16:26:59.672123Z"`, `"t":0`, `"receiveTimestamp":"2026-11-22T16:27:31.117Z",`, ``),
			"GKE audit entry without timestamp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := ingest.DecodeLine([]byte(tc.line)); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func decodeLineAudit(t *testing.T, line string) cpid.AuditEvent {
	t.Helper()
	audits, rec, err := ingest.DecodeLine([]byte(line))
	if err != nil || rec != nil || len(audits) != 1 {
		t.Fatalf("DecodeLine: %v, record %v, %d events", err, rec, len(audits))
	}
	return audits[0]
}

// TestDecodeEnvelopes: an EKS CloudWatch event or an AKS resource log
// record holding an audit log line gives exactly the event of the line
// (the same hash), one by one or several in an array; the controllers' klog
// text lines in them are dated and named by their envelope.
func TestDecodeEnvelopes(t *testing.T) {
	raw := string(readLine(t, "audit/rs-create.json"))
	want := decodeLineAudit(t, raw)
	quoted, _ := json.Marshal(raw)
	eks := `{"logStreamName":"kube-apiserver-audit-5d5b1f1e0c8a4a3f9b7e2d6c4a1f0e3b","timestamp":1795362478170,"message":` +
		string(quoted) + `,"ingestionTime":1795362479170,"eventId":"37264855117011229283762158627447628471276233018364280832"}`
	aks := `{"time":"2026-11-22T15:47:58.170Z","resourceId":"/SUBSCRIPTIONS/0/RESOURCEGROUPS/R/PROVIDERS/MICROSOFT.CONTAINERSERVICE/MANAGEDCLUSTERS/C",` +
		`"category":"kube-audit","operationName":"Microsoft.ContainerService/managedClusters/diagnosticLogs/Read",` +
		`"properties":{"log":` + string(quoted) + `,"stream":"stdout","pod":"kube-apiserver-1"}}`
	for _, tc := range []struct {
		name string
		line string
		n    int
	}{
		{"EKS event", eks, 1},
		{"AKS record", aks, 1},
		{"aws logs filter-log-events on one line", `{"events":[` + eks + `,` + eks + `],"searchedLogStreams":[]}`, 2},
		{"Event Hubs records", `{"records":[` + aks + `,` + aks + `]}`, 2},
		{"an array", `[` + aks + `,` + eks + `]`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			audits, rec, err := ingest.DecodeLine([]byte(tc.line))
			if err != nil || rec != nil || len(audits) != tc.n {
				t.Fatalf("DecodeLine: %v, record %v, %d events", err, rec, len(audits))
			}
			for _, ev := range audits {
				if ev.Hash != want.Hash || ev.AuditID != want.AuditID {
					t.Errorf("event %s %x, want the line's %s %x", ev.AuditID, ev.Hash, want.AuditID, want.Hash)
				}
			}
		})
	}

	// One level of arrays, one of envelopes: nesting costs one pass.
	for _, line := range []string{`{"events":[{"events":[` + eks + `]}]}`, `[[` + eks + `]]`, `[{"records":[` + aks + `]}]`} {
		if _, _, err := ingest.DecodeLine([]byte(line)); err == nil {
			t.Errorf("nested arrays of envelopes read: %.60s", line)
		}
	}

	klogLine := `I1122 15:47:58.166583       1 replica_set.go:591] "Too few replicas" replicaSet="default/web-7d899d7cc4" need=3 creating=3`
	kq, _ := json.Marshal(klogLine)
	for _, tc := range []struct{ name, line, component string }{
		{"EKS controller manager stream", `{"logStreamName":"kube-controller-manager-2b0c7c6f0f7a4ae1b8d2e9f4a1c3d5e6","timestamp":1637596078170,` +
			`"message":` + string(kq) + `,"ingestionTime":1637596079170,"eventId":"1"}`, "kube-controller-manager"},
		{"AKS controller manager category", `{"time":"2021-11-22T15:47:58.170Z","category":"kube-controller-manager","properties":{"log":` +
			string(kq) + `}}`, "kube-controller-manager"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rec, err := ingest.DecodeLine([]byte(tc.line))
			if err != nil || rec == nil {
				t.Fatalf("DecodeLine: %v, %v", err, rec)
			}
			at := time.Date(2021, 11, 22, 15, 47, 58, 166583000, time.UTC).UnixNano()
			if rec.TimeNS != at || rec.Component != tc.component || rec.Msg != "Too few replicas" {
				t.Errorf("record at %s, component %q, msg %q", time.Unix(0, rec.TimeNS).UTC(), rec.Component, rec.Msg)
			}
		})
	}
}

// TestEnvelopeDocuments: JSON documents printed over many lines (gcloud's
// array, aws's object) are split into their records, numbered by the line
// each starts on; a pretty-printed event is one record; a document the
// stream cuts is one bad line.
func TestEnvelopeDocuments(t *testing.T) {
	raw := readLine(t, "audit/rs-create.json")
	var ev any
	json.Unmarshal(raw, &ev)
	other := readLine(t, "audit/pod-binding.json")
	var gke, gke2 any
	json.Unmarshal([]byte(gkeUpdate), &gke)
	json.Unmarshal([]byte(gkeWith("5a1d7e0e", "6b2e8f1f")), &gke2)
	indent := func(v any, prefix string) string {
		b, _ := json.MarshalIndent(v, prefix, "  ")
		return string(b)
	}
	gcloud := indent([]any{gke, gke2}, "") + "\n"
	awsOut := indent(map[string]any{"events": []any{
		map[string]any{"logStreamName": "kube-apiserver-audit-5d5b1f1e0c8a4a3f9b7e2d6c4a1f0e3b", "timestamp": 1795362478170, "message": string(raw), "eventId": "1"},
		map[string]any{"logStreamName": "kube-apiserver-audit-5d5b1f1e0c8a4a3f9b7e2d6c4a1f0e3b", "timestamp": 1795362478171, "message": string(other), "eventId": "2"},
	}, "searchedLogStreams": []any{map[string]any{"logStreamName": "x", "searchedCompletely": true}}}, "")
	tests := []struct {
		name   string
		text   string
		audits int
		lines  []int  // of the events
		bad    string // the one bad line expected
		format ingest.Format
	}{
		{"gcloud logging read", gcloud, 2, []int{2, 1 + strings.Count(indent(gke, "  "), "\n") + 2}, "", ingest.FormatGKE | ingest.FormatDocument},
		{"aws logs filter-log-events", awsOut, 2, []int{3, 9}, "", ingest.FormatEKS | ingest.FormatAudit | ingest.FormatDocument},
		{"a pretty-printed event, then a line", indent(ev, "") + "\n" + string(raw) + "\n", 2, []int{1, 1 + strings.Count(indent(ev, ""), "\n") + 1}, "", ingest.FormatAudit | ingest.FormatDocument},
		{"cut", gcloud[:len(gcloud)/2], 1, []int{2}, "never ends", ingest.FormatGKE | ingest.FormatOther | ingest.FormatDocument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := tree(t, map[string][]byte{"audit.json": []byte(tc.text)}, time.Time{})
			sum, db := ingestPaths(t, ingest.Walker{}, dir)
			rows := auditRows(t, db)
			var lines []int
			for _, r := range rows {
				lines = append(lines, r.Line)
			}
			if fmt.Sprint(lines) != fmt.Sprint(tc.lines) {
				t.Errorf("events at lines %v, want %v", lines, tc.lines)
			}
			switch {
			case tc.bad == "" && sum.Bad != 0:
				t.Errorf("bad lines: %v", sum.BadLines)
			case tc.bad != "" && (sum.Bad != 1 || !strings.Contains(sum.BadLines[0].Reason, tc.bad)):
				t.Errorf("bad lines %d %v, want one: %s", sum.Bad, sum.BadLines, tc.bad)
			}
			if f := sum.Files[0].Format; f != tc.format {
				t.Errorf("format %s, want %s", f, tc.format)
			}
		})
	}
}
