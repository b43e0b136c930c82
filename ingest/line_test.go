package ingest_test

import (
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/ingest"
)

func TestDecodeLine(t *testing.T) {
	rs := string(readLine(t, "audit/rs-create.json"))
	list := string(readLine(t, "audit/webhook-eventlist.json"))
	klog := strings.Split(string(readLine(t, "logs/kube-controller-manager.jsonl")), "\n")[1]
	tests := []struct {
		name   string
		line   string
		audits int
		log    bool
		err    string
	}{
		{"audit event", rs, 1, false, ""},
		{"audit event with a byte order mark and CR", "\ufeff" + rs + "\r", 1, false, ""},
		{"webhook event list", list, 3, false, ""},
		{"klog JSON", klog, 0, true, ""},
		{"blank", " \t\r", 0, false, ""},
		{"empty", "", 0, false, ""},
		{"audit v1beta1 goes to the audit decoder", strings.Replace(rs, "audit.k8s.io/v1", "audit.k8s.io/v1beta1", 1), 0, false, "unsupported audit apiVersion"},
		{"a core v1 Event is not an audit event", `{"kind":"Event","apiVersion":"v1","metadata":{"name":"web.1"},"reason":"ScalingReplicaSet"}`, 0, false, "no time field"},
		{"legacy audit text", `2017-03-21T03:57:09.106841886-04:00 AUDIT: id="c939d2a7-1c37-4ef1-b2f7-4ba9b1e43b53" response="200"`, 0, false, "legacy text audit format"},
		{"klog text", `I1122 15:47:58.166583   12345 replica_set.go:591] "Too few replicas"`, 0, true, ""},
		{"klog text with a bad header", `I1122 15:47:58.166583   12345 replica_set.go:591 "Too few replicas"`, 0, false, "klog text: malformed header"},
		{"other text", `panic: runtime error`, 0, false, `not a JSON object: line starts with "panic: runtime e"`},
		{"bad JSON", `{"ts":1795362479.1,"msg":"m",}`, 0, false, `invalid JSON: unexpected '}' at byte 29`},
		{"control byte", "{\"ts\":1795362479.1,\"msg\":\"\x01\"}", 0, false, `invalid JSON: unexpected byte 0x01 at byte 26`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			audits, rec, err := ingest.DecodeLine([]byte(tc.line))
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Errorf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(audits) != tc.audits || (rec != nil) != tc.log {
				t.Errorf("got %d audit events and record %v", len(audits), rec)
			}
		})
	}
}
