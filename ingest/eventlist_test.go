package ingest_test

import (
	"bytes"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
)

// readList is ReadEventList over b, read a byte at a time so that every
// chunk boundary is crossed: the good events, the indexes of the bad ones.
func readList(b []byte) ([]cpid.AuditEvent, []int, error) {
	var evs []cpid.AuditEvent
	var bad []int
	err := ingest.ReadEventList(iotest.OneByteReader(bytes.NewReader(b)), nil, func(i int, ev cpid.AuditEvent, err error) {
		if err != nil {
			bad = append(bad, i)
			return
		}
		evs = append(evs, ev)
	})
	return evs, bad, err
}

// FuzzReadEventList checks that ReadEventList never panics and agrees with
// DecodeAudit on the whole body: what one accepts whole, the other does,
// with the same events.
func FuzzReadEventList(f *testing.F) {
	addFiles(f, "testdata/audit/*.json")
	f.Add([]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[` +
		`{"auditID":"a","stage":"ResponseComplete","verb":"get"},{"auditID":"b","objectRef":{"name":"n"}}]}`))
	f.Add([]byte(` {"items" : [ {"auditID":"a"} , null ], "Kind":"EventList", "apiVersion":"audit.k8s.io/v1" } `))
	f.Add([]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","\u0069tems":[{"auditID":"x\"]}"}],"items":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		whole, wholeErr := ingest.DecodeAudit(b)
		evs, bad, err := readList(b)
		switch {
		case wholeErr == nil && err != nil && !strings.Contains(err.Error(), "kind Event"):
			t.Fatalf("DecodeAudit accepts %q, ReadEventList: %v", b, err)
		case wholeErr == nil && err == nil:
			if len(bad) > 0 {
				t.Fatalf("DecodeAudit accepts %q, ReadEventList rejects items %v", b, bad)
			}
			if diff := cmp.Diff(whole, evs); len(whole)+len(evs) > 0 && diff != "" {
				t.Fatalf("%q: the events differ (-DecodeAudit +ReadEventList):\n%s", b, diff)
			}
		case wholeErr != nil && err == nil && len(bad) == 0:
			t.Fatalf("ReadEventList accepts %q, DecodeAudit: %v", b, wholeErr)
		}
	})
}

// TestReadEventListBadItems: bad items are reported with their index and
// skipped; the good ones around them are decoded.
func TestReadEventListBadItems(t *testing.T) {
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	body := `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"auditID":"a"},null,{"auditID":5},` +
		`{"auditID":"d","requestObject":` + deep + `},{"auditID":"e"},7,{"auditID":"\xff"},{"auditID":"h"}]}`
	evs, bad, err := readList([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range evs {
		ids = append(ids, ev.AuditID)
	}
	if diff := cmp.Diff([]string{"a", "e", "h"}, ids); diff != "" {
		t.Errorf("good events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 2, 3, 5, 6}, bad); diff != "" {
		t.Errorf("bad items (-want +got):\n%s", diff)
	}
}
