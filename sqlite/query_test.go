package sqlite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/ingest"
)

// auditLine makes a RequestResponse- or Request-level audit event line.
func auditLine(id, verb string, rv int, req, resp string, at int) string {
	s := fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"%s","stage":"ResponseComplete",`+
		`"requestURI":"/api/v1/namespaces/default/configmaps/cm","verb":"%s","user":{"username":"system:serviceaccount:kube-system:some-controller"},`+
		`"userAgent":"controller/v1","objectRef":{"resource":"configmaps","namespace":"default","name":"cm","apiVersion":"v1","resourceVersion":"%d"},`+
		`"responseStatus":{"metadata":{},"code":200},"requestObject":%s,`, id, verb, rv, req)
	if resp != "" {
		s += `"responseObject":` + resp + `,`
	}
	return s + fmt.Sprintf(`"requestReceivedTimestamp":"2026-11-22T16:00:%02d.000000Z","stageTimestamp":"2026-11-22T16:00:%02d.100000Z"}`, at, at)
}

func TestObjectAtResolvesPatches(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	lines := []string{
		auditLine("00000000-0000-0000-0000-000000000001", "create", 0, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm"},"data":{"a":"1"}}`,
			`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm","namespace":"default","uid":"u1","resourceVersion":"10"},"data":{"a":"1"}}`, 1),
		auditLine("00000000-0000-0000-0000-000000000002", "patch", 10, `{"data":{"b":"2"}}`, "", 2),
		auditLine("00000000-0000-0000-0000-000000000003", "patch", 11, `[{"op":"remove","path":"/data/a"}]`, "", 3),
	}
	in := &ingest.Ingester{Sink: s, Walker: ingest.Walker{Stdin: strings.NewReader(strings.Join(lines, "\n") + "\n")}}
	if sum, err := in.Run(ctx, []string{"-"}); err != nil || sum.Bad > 0 {
		t.Fatalf("ingest: %v %+v", err, sum.BadLines)
	}
	if _, err := s.Reconstruct(ctx, true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id   int64
		how  string
		data string
	}{
		{1, "response", `"data":{"a":"1"}`},
		{2, "patched", `"data":{"a":"1","b":"2"}`},
		{3, "patched", `"data":{"b":"2"}`},
	} {
		obj, how, err := s.ObjectAt(ctx, c.id)
		if err != nil {
			t.Fatalf("event %d: %v", c.id, err)
		}
		if how != c.how || !strings.Contains(string(obj), c.data) {
			t.Errorf("event %d: %s %s, want %s with %s", c.id, how, obj, c.how, c.data)
		}
	}
}
