package ingest_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/instrument"
)

func readLine(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

func decodeOne(t *testing.T, line []byte) cpid.AuditEvent {
	t.Helper()
	evs, err := ingest.DecodeAudit(line)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("got %d events, want 1", len(evs))
	}
	return evs[0]
}

// summary is what the table below checks of an event.
type summary struct {
	Stage, Level, Verb, User                 string
	Group, Version, Resource, Subresource    string
	Namespace, Name, UID, ResourceVersion    string
	Code                                     int
	CPID                                     string
	Ancestors                                []string
	Owner                                    string // kind/name of the first owner reference
	Request, Response, Annotations, Redacted bool
}

func summarize(e cpid.AuditEvent) summary {
	s := summary{
		Stage: e.Stage, Level: e.Level, Verb: e.Verb, User: e.Username,
		Group: e.APIGroup, Version: e.APIVersion, Resource: e.Resource, Subresource: e.Subresource,
		Namespace: e.Namespace, Name: e.Name, UID: e.UID, ResourceVersion: e.ResourceVersion,
		Code: e.Code, CPID: e.CPID, Ancestors: e.CPIDAncestors,
		Request: e.RequestObject != nil, Response: e.ResponseObject != nil,
		Annotations: e.Annotations != nil, Redacted: e.Redacted,
	}
	var refs []struct{ Kind, Name string }
	if e.OwnerRefs != nil {
		if err := json.Unmarshal(e.OwnerRefs, &refs); err != nil || len(refs) == 0 {
			s.Owner = "invalid"
		} else {
			s.Owner = refs[0].Kind + "/" + refs[0].Name
		}
	}
	return s
}

func TestDecodeAudit(t *testing.T) {
	const (
		rcm    = "system:serviceaccount:kube-system:replicaset-controller"
		admin  = "kubernetes-admin"
		rsUID  = "c4860882-e0ba-4c00-bc69-6ffc05d8719e"
		podUID = "5f0d3c1e-8a7b-4b6c-9d2e-1f3a5b7c9d0e"
		pod    = "web-7d899d7cc4-x2x9k"
	)
	tests := []struct {
		name string
		file string
		want summary
	}{{
		name: "replicaset create, RequestResponse",
		file: "rs-create.json",
		want: summary{Stage: "ResponseComplete", Level: "RequestResponse", Verb: "create",
			User:  "system:serviceaccount:kube-system:deployment-controller",
			Group: "apps", Version: "v1", Resource: "replicasets", Namespace: "default", Name: "web-7d899d7cc4",
			UID: rsUID, ResourceVersion: "357", Code: 201, Owner: "Deployment/web",
			Request: true, Response: true, Annotations: true},
	}, {
		name: "the same, pretty-printed",
		file: "rs-create-pretty.json",
		want: summary{Stage: "ResponseComplete", Level: "RequestResponse", Verb: "create",
			User:  "system:serviceaccount:kube-system:deployment-controller",
			Group: "apps", Version: "v1", Resource: "replicasets", Namespace: "default", Name: "web-7d899d7cc4",
			UID: rsUID, ResourceVersion: "357", Code: 201, Owner: "Deployment/web",
			Request: true, Response: true, Annotations: true},
	}, {
		name: "metadata level: identity from objectRef only",
		file: "rs-create-metadata.json",
		want: summary{Stage: "ResponseComplete", Level: "Metadata", Verb: "create",
			User:  "system:serviceaccount:kube-system:deployment-controller",
			Group: "apps", Version: "v1", Resource: "replicasets", Namespace: "default", Name: "web-7d899d7cc4",
			Code: 201, Annotations: true},
	}, {
		name: "patch on deployments/scale answers a Scale",
		file: "deploy-scale-patch.json",
		want: summary{Stage: "ResponseComplete", Level: "RequestResponse", Verb: "patch", User: admin,
			Group: "apps", Version: "v1", Resource: "deployments", Subresource: "scale", Namespace: "default",
			Name: "web", UID: "dd78b80e-b9f2-4d8a-8777-ea64498a6e80", ResourceVersion: "412", Code: 200,
			Request: true, Response: true, Annotations: true},
	}, {
		name: "pods/binding answers a Status",
		file: "pod-binding.json",
		want: summary{Stage: "ResponseComplete", Level: "RequestResponse", Verb: "create", User: "system:kube-scheduler",
			Version: "v1", Resource: "pods", Subresource: "binding", Namespace: "default", Name: pod, Code: 201,
			Request: true, Response: true, Annotations: true},
	}, {
		name: "generateName create: name from the response, trace context",
		file: "pod-create-generatename.json",
		want: summary{Stage: "ResponseComplete", Level: "RequestResponse", Verb: "create", User: rcm,
			Version: "v1", Resource: "pods", Namespace: "default", Name: pod, UID: podUID, ResourceVersion: "361",
			Code: 201, CPID: "8f14e45f-ceea-467f-a0e6-6c1b6c1e2f3a",
			Ancestors: []string{"c9f0f895-fb98-4b91-9a4d-8b2e1d0f3a4b", "45c48cce-2e2d-4fbd-a3b1-5d1e2f3a4b5c"},
			Owner:     "ReplicaSet/web-7d899d7cc4", Request: true, Response: true, Annotations: true},
	}, {
		name: "409 conflict: Status response, identity from objectRef, owners from the request",
		file: "rs-status-conflict.json",
		want: summary{Stage: "ResponseComplete", Level: "RequestResponse", Verb: "update", User: rcm,
			Group: "apps", Version: "v1", Resource: "replicasets", Subresource: "status", Namespace: "default",
			Name: "web-7d899d7cc4", UID: rsUID, ResourceVersion: "357", Code: 409, Owner: "Deployment/web",
			Request: true, Response: true, Annotations: true},
	}, {
		name: "watch, ResponseStarted",
		file: "rs-watch-started.json",
		want: summary{Stage: "ResponseStarted", Level: "Metadata", Verb: "watch", User: "system:kube-controller-manager",
			Group: "apps", Version: "v1", Resource: "replicasets", Code: 200, Annotations: true},
	}, {
		name: "pod delete: DeleteOptions in, the terminating pod out",
		file: "pod-delete.json",
		want: summary{Stage: "ResponseComplete", Level: "RequestResponse", Verb: "delete", User: rcm,
			Version: "v1", Resource: "pods", Namespace: "default", Name: pod, UID: podUID, ResourceVersion: "540",
			Code: 200, CPID: "8f14e45f-ceea-467f-a0e6-6c1b6c1e2f3a",
			Ancestors: []string{"c9f0f895-fb98-4b91-9a4d-8b2e1d0f3a4b", "45c48cce-2e2d-4fbd-a3b1-5d1e2f3a4b5c"},
			Owner:     "ReplicaSet/web-7d899d7cc4", Request: true, Response: true, Annotations: true},
	}, {
		name: "secret create is redacted",
		file: "secret-create.json",
		want: summary{Stage: "ResponseComplete", Level: "RequestResponse", Verb: "create", User: admin,
			Version: "v1", Resource: "secrets", Namespace: "default", Name: "db",
			UID: "6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d", ResourceVersion: "520", Code: 201,
			Request: true, Response: true, Annotations: true, Redacted: true},
	}, {
		name: "secret list is redacted item by item",
		file: "secret-list.json",
		want: summary{Stage: "ResponseComplete", Level: "RequestResponse", Verb: "list", User: admin,
			Version: "v1", Resource: "secrets", Namespace: "default", ResourceVersion: "533", Code: 200,
			Response: true, Annotations: true, Redacted: true},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			line := readLine(t, filepath.Join("audit", tc.file))
			e := decodeOne(t, line)
			if diff := cmp.Diff(tc.want, summarize(e)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if e.AuditID == "" || e.ReceivedNS == 0 || e.StageNS < e.ReceivedNS || len(e.SourceIPs) != 1 ||
				!strings.HasPrefix(e.UserAgent, "kube") {
				t.Errorf("envelope not decoded: %+v", e)
			}
			compareAudit(t, line)
		})
	}
}

func TestDecodeAuditTimes(t *testing.T) {
	e := decodeOne(t, readLine(t, "audit/rs-create.json"))
	// "2026-11-22T15:47:58.166583Z" and "2026-11-22T15:47:58.170569Z".
	if e.ReceivedNS != 1795362478166583000 || e.StageNS != 1795362478170569000 {
		t.Errorf("times %d %d", e.ReceivedNS, e.StageNS)
	}
	nano := bytes.Replace(readLine(t, "audit/rs-create.json"), []byte(`58.170569Z"`), []byte(`59.170569123+01:00"`), 1)
	if e := decodeOne(t, nano); e.StageNS != 1795362478170569000-3600e9+1e9+123 {
		t.Errorf("nanosecond time with offset: %d", e.StageNS)
	}
}

func TestDecodeAuditHash(t *testing.T) {
	compact := decodeOne(t, readLine(t, "audit/rs-create.json"))
	pretty := decodeOne(t, readLine(t, "audit/rs-create-pretty.json"))
	other := decodeOne(t, readLine(t, "audit/rs-create-metadata.json"))
	if compact.Hash != pretty.Hash {
		t.Error("compact and pretty-printed forms of one event hash differently")
	}
	if compact.Hash == other.Hash {
		t.Error("different events hash alike")
	}
	// The webhook sends items without kind and apiVersion; they hash like
	// the log line of the same event.
	list, err := ingest.DecodeAudit(readLine(t, "audit/webhook-eventlist.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("got %d items, want 3", len(list))
	}
	for i, name := range []string{"rs-create.json", "pod-binding.json", "secret-create.json"} {
		if want := decodeOne(t, readLine(t, "audit/"+name)); list[i].Hash != want.Hash {
			t.Errorf("item %d hashes unlike %s", i, name)
		}
	}
}

func TestDecodeAuditSecrets(t *testing.T) {
	secretValues := []string{"aHVudGVyMg==", "YWRtaW4=", `"admin"`, "LS0tLS1CRUdJTg==", "last-applied"}
	list, err := ingest.DecodeAudit(readLine(t, "audit/webhook-eventlist.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		ev       cpid.AuditEvent
		redacted bool
	}{
		{"create", decodeOne(t, readLine(t, "audit/secret-create.json")), true},
		{"list", decodeOne(t, readLine(t, "audit/secret-list.json")), true},
		{"event list item", list[2], true},
		{"not a secret", list[0], false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ev.Redacted != tc.redacted {
				t.Errorf("Redacted = %v", tc.ev.Redacted)
			}
			for _, body := range []json.RawMessage{tc.ev.RequestObject, tc.ev.ResponseObject} {
				for _, v := range secretValues {
					if bytes.Contains(body, []byte(v)) {
						t.Errorf("body keeps %s: %s", v, body)
					}
				}
				if body != nil && !json.Valid(body) {
					t.Errorf("invalid body %s", body)
				}
			}
		})
	}
	// What is left of the Secret is still there.
	e := tests[0].ev
	var obj struct {
		Type     string
		Metadata struct{ Name, UID string }
	}
	if err := json.Unmarshal(e.ResponseObject, &obj); err != nil || obj.Type != "Opaque" || obj.Metadata.UID == "" {
		t.Errorf("redaction lost the rest of the object: %s", e.ResponseObject)
	}
	// The hash of a redacted event is not the hash of the original line.
	if e.Hash == ([16]byte{}) {
		t.Error("no hash")
	}
	patch := []byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"p","stage":"ResponseComplete","verb":"patch","objectRef":{"resource":"secrets","namespace":"default","name":"db","apiVersion":"v1"},"requestObject":[{"op":"replace","path":"/data/password","value":"aHVudGVyMg=="}],"requestReceivedTimestamp":"2026-11-22T15:48:03.114201Z","stageTimestamp":"2026-11-22T15:48:03.118845Z"}`)
	if e := decodeOne(t, patch); e.RequestObject != nil || !e.Redacted {
		t.Errorf("JSON patch on a secret kept: %s", e.RequestObject)
	}
}

func TestDecodeAuditErrors(t *testing.T) {
	rs := string(readLine(t, "audit/rs-create.json"))
	tests := []struct {
		name, line, want string
	}{
		{"empty", "", "empty line"},
		{"truncated", rs[:len(rs)/2], "truncated JSON"},
		{"invalid UTF-8", strings.Replace(rs, "web-7d899d7cc4", "web-\xff", 1), "invalid UTF-8"},
		{"trailing garbage", rs + "}", "invalid JSON"},
		{"not an object", `["Event"]`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"other kind", `{"kind":"Foo","apiVersion":"audit.k8s.io/v1"}`, `not an audit event: kind "Foo"`},
		{"no kind", `{"apiVersion":"audit.k8s.io/v1"}`, "not an audit event: no kind"},
		{"v1beta1", strings.Replace(rs, "audit.k8s.io/v1", "audit.k8s.io/v1beta1", 1), "unsupported audit apiVersion"},
		{"legacy text format", `2017-03-21T03:57:09.106841886-04:00 AUDIT: id="c939d2a7-1c37-4ef1-b2f7-4ba9b1e43b53" ip="127.0.0.1" method="GET" user="admin" groups="\"system:masters\",\"system:authenticated\"" as="<self>" asgroups="<lookup>" namespace="default" uri="/api/v1/namespaces/default/pods"`, "legacy text audit format is not supported; run kube-apiserver with --audit-log-format=json"},
		{"klog text", `I1122 15:47:58.166583   12345 replica_set.go:591] "Too few replicas"`, "klog text format: a log line, not JSON"},
		{"duplicate field", strings.Replace(rs, `"verb":"create"`, `"verb":"create","Verb":"update"`, 1), `duplicate field "verb"`},
		{"wrong type", strings.Replace(rs, `"code":201`, `"code":"201"`, 1), "responseStatus.code: want integer"},
		{"code not an int32", strings.Replace(rs, `"code":201`, `"code":2.5`, 1), "responseStatus.code: want integer"},
		{"bad time", strings.Replace(rs, `"2026-11-22T15:47:58.170569Z"`, `"2026-11-22 15:47:58"`, 1), "stageTimestamp: invalid time"},
		{"item kind", `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"kind":"Pod"}]}`, `item 0: not an audit event: kind "Pod"`},
		{"null item", `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[null]}`, "item 0: null"},
		{"too deep", `{"kind":"Event","apiVersion":"audit.k8s.io/v1","requestObject":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + "}", "JSON nested deeper than 10000 levels"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ingest.DecodeAudit([]byte(tc.line))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			compareAudit(t, []byte(tc.line))
		})
	}
}

// TestDecodeAuditVariants checks variants of real lines against the oracle:
// the quirks of encoding/json that DecodeAudit follows.
func TestDecodeAuditVariants(t *testing.T) {
	rs := string(readLine(t, "audit/rs-create.json"))
	tests := []struct{ name, old, new string }{
		{"case-insensitive field names", `"verb":"create"`, `"VERB":"create"`},
		{"escaped field name", `"auditID"`, `"audit\u0049D"`},
		{"null leaves a field unset", `"userAgent":"kube`, `"userAgent":null,"x":"kube`},
		{"null in objectRef keeps the earlier value", `"name":"web-7d899d7cc4","apiGroup"`, `"name":"web-7d899d7cc4","name":null,"apiGroup"`},
		{"escapes and surrogates", `"username":"system:`, `"username":"\ud83d\ude00\ud800x\"\\\/\b\f\n\r\t\u00e9system:`},
		{"empty source IPs", `"sourceIPs":["127.0.0.1"]`, `"sourceIPs":[]`},
		{"null source IP", `"sourceIPs":["127.0.0.1"]`, `"sourceIPs":[null,"::1"]`},
		{"unknown fields", `"verb":"create"`, `"verb":"create","future":{"a":[1,2.5e3,true,false,null]}`},
		{"no bodies", `"requestObject":{"kind":"ReplicaSet"`, `"requestObject":null,"x":{"kind":"ReplicaSet"`},
		{"body not an object", `"requestObject":{"kind":"ReplicaSet"`, `"requestObject":"text","x":{"kind":"ReplicaSet"`},
		{"annotations from the request", `"annotations":{"deployment.kubernetes.io/desired-replicas":"2"`, `"annotations":{"v1.cpid.dev/cpid":"x","deployment.kubernetes.io/desired-replicas":"2"`},
		{"duplicate metadata in a body: the last wins", `"spec":{"replicas":1,`, `"metadata":{"name":"other","uid":"u2"},"spec":{"replicas":1,`},
		{"status details", `"code":201}`, `"code":201,"status":"Success","details":{"causes":[{"field":"x"},null],"retryAfterSeconds":-3},"metadata":{"remainingItemCount":9223372036854775807}}`},
		{"int64 overflow", `"code":201}`, `"code":201,"metadata":{"remainingItemCount":9223372036854775808}}`},
		{"user extra", `"extra":{`, `"extra":{"a":null,"b":[null],`},
		{"impersonation", `"sourceIPs"`, `"impersonatedUser":{"username":"u","groups":["g"]},"authenticationMetadata":{"impersonationConstraint":"c"},"sourceIPs"`},
		{"impersonation type error", `"sourceIPs"`, `"impersonatedUser":{"groups":"g"},"sourceIPs"`},
		{"zero time", `"2026-11-22T15:47:58.166583Z"`, `"0001-01-01T00:00:00.000000Z"`},
		{"lower-case z", `"2026-11-22T15:47:58.166583Z"`, `"2026-11-22T15:47:58.166583z"`},
		{"one-digit hour", `"2026-11-22T15:47:58.166583Z"`, `"2026-11-22T5:47:58.166583Z"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			line := strings.Replace(rs, tc.old, tc.new, 1)
			if line == rs {
				t.Fatalf("%q not in the sample", tc.old)
			}
			compareAudit(t, []byte(line))
		})
	}
}

// TestKeysMatchInstrument checks that the annotation keys ingest reads are
// the ones instrument writes.
func TestKeysMatchInstrument(t *testing.T) {
	line := readLine(t, "audit/pod-create-generatename.json")
	line = bytes.ReplaceAll(line, []byte(`"v1.cpid.dev/cpid"`), []byte(`"`+instrument.KeyCPID+`"`))
	line = bytes.ReplaceAll(line, []byte(`"v1.cpid.dev/ancestors"`), []byte(`"`+instrument.KeyAncestors+`"`))
	e := decodeOne(t, line)
	if e.CPID != "8f14e45f-ceea-467f-a0e6-6c1b6c1e2f3a" || len(e.CPIDAncestors) != 2 {
		t.Errorf("instrument.KeyCPID %q or KeyAncestors %q is not what ingest reads: got %q %q",
			instrument.KeyCPID, instrument.KeyAncestors, e.CPID, e.CPIDAncestors)
	}
}

// TestDecodeAuditBodies checks odd bodies, put in the envelopes FuzzDecodeAudit
// uses, against the oracle.
func TestDecodeAuditBodies(t *testing.T) {
	tests := []struct{ name, body string }{
		{"duplicated metadata: the last wins, every copy is redacted",
			`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"x"}},"metadata":{"name":"a"}}`},
		{"data twice", `{"data":{"a":"b"},"Data":null}`},
		{"items twice", `{"items":[{"data":1}],"items":[]}`},
		{"number beyond float64", `{"metadata":{"name":"a"},"x":1e999}`},
		{"everything at once", `{"metadata":{"name":"a","name":1e999,"annotations":{"v1.cpid.dev/cpid":"c"},"ownerReferences":[1e400]},"data":1e999,"items":[{"data":5}],"rows":[{"object":{"stringData":2,"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"x"}}}}]}`},
		{"escaped keys", `{"m\u0065tadata":{"n\u0061me":"a","annotations":{"v1.cpid.dev\/cpid":"c","v1.cpid.dev/ancestors":"p, q,"}},"d\u0061ta":{}}`},
		{"metadata not an object", `{"metadata":["name"]}`},
		{"annotations not an object", `{"metadata":{"annotations":"v1.cpid.dev/cpid"}}`},
		{"empty JSON patch", `[]`},
		{"string body", `"text"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, l := range splices([]byte(tc.body)) {
				compareAudit(t, l)
			}
		})
	}
}

// TestDecodeAuditReal checks lines recorded from a real kube-apiserver
// v1.37.2 (fixtures/basic).
func TestDecodeAuditReal(t *testing.T) {
	const dc = "system:serviceaccount:kube-system:deployment-controller"
	tests := []struct {
		file string
		want summary
	}{
		{"deploy-scale-patch.json", summary{Stage: "ResponseComplete", Level: "RequestResponse", Verb: "patch",
			User: "kubernetes-admin", Group: "apps", Version: "v1", Resource: "deployments", Subresource: "scale",
			Namespace: "default", Name: "web", UID: "1443e352-9872-4c99-80b9-6f492ae7a23b", ResourceVersion: "307",
			Code: 200, Request: true, Response: true, Annotations: true}},
		{"deploy-status-conflict.json", summary{Stage: "ResponseComplete", Level: "RequestResponse", Verb: "update",
			User: dc, Group: "apps", Version: "v1", Resource: "deployments", Subresource: "status",
			Namespace: "default", Name: "web", UID: "1443e352-9872-4c99-80b9-6f492ae7a23b", ResourceVersion: "274",
			Code: 409, Request: true, Response: true, Annotations: true}},
		{"pod-binding.json", summary{Stage: "ResponseComplete", Level: "RequestResponse", Verb: "create",
			User: "system:kube-scheduler", Version: "v1", Resource: "pods", Subresource: "binding",
			Namespace: "default", Name: "web-67d678765c-bwhgd", UID: "02c60743-381f-435f-a516-4b6db33673f8",
			Code: 201, Request: true, Response: true, Annotations: true}},
		{"pod-create-generatename.json", summary{Stage: "ResponseComplete", Level: "RequestResponse", Verb: "create",
			User: "system:serviceaccount:kube-system:replicaset-controller", Version: "v1", Resource: "pods",
			Namespace: "default", Name: "web-67d678765c-bwhgd", UID: "02c60743-381f-435f-a516-4b6db33673f8",
			ResourceVersion: "278", Code: 201, Owner: "ReplicaSet/web-67d678765c",
			Request: true, Response: true, Annotations: true}},
		{"pods-watch-started.json", summary{Stage: "ResponseStarted", Level: "RequestResponse", Verb: "watch",
			User: "system:apiserver", Version: "v1", Resource: "pods", Code: 200, Annotations: true}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			line := readLine(t, filepath.Join("audit/real", tc.file))
			e := decodeOne(t, line)
			if tc.want.Owner == "" && e.OwnerRefs != nil {
				tc.want.Owner = summarize(e).Owner // owners are not what this case is about
			}
			if diff := cmp.Diff(tc.want, summarize(e)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// Every recorded line agrees with the reference decoding.
	files, _ := filepath.Glob("testdata/audit/real/*.json")
	for _, name := range files {
		t.Run("reference/"+filepath.Base(name), func(t *testing.T) {
			compareAudit(t, readLine(t, strings.TrimPrefix(name, "testdata/")))
		})
	}
}

// TestFixtureBundle decodes every line of the recorded bundle, when it is
// there, and checks the audit events against the reference decoding.
func TestFixtureBundle(t *testing.T) {
	files, _ := filepath.Glob("../fixtures/basic/bundle/*/*")
	if len(files) == 0 {
		t.Skip("no recorded bundle in ../fixtures/basic")
	}
	for _, name := range files {
		t.Run(filepath.Base(name), func(t *testing.T) {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(name, ".gz") {
				r, err := gzip.NewReader(bytes.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				if b, err = io.ReadAll(r); err != nil {
					t.Fatal(err)
				}
			}
			n := 0
			for i, l := range bytes.Split(b, []byte("\n")) {
				audits, rec, err := ingest.DecodeLine(l)
				if err != nil {
					t.Errorf("line %d: %v", i+1, err)
					continue
				}
				if len(audits) > 0 {
					compareAudit(t, l)
				}
				if len(audits) > 0 || rec != nil {
					n++
				}
			}
			if n == 0 {
				t.Error("no records")
			}
		})
	}
}
