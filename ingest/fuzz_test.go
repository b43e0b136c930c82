package ingest_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
)

// The oracle decodes with encoding/json into the reference type
// k8s.io/apiserver/pkg/apis/audit/v1.Event and derives every AuditEvent
// field independently of the package's scanner. It adds the rules that
// DecodeAudit documents on top of encoding/json.

// relaxedTime accepts what metav1.MicroTime accepts, and also RFC 3339 with
// any number of fraction digits, as DecodeAudit does.
type relaxedTime struct{ ns int64 }

func (t *relaxedTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	tm, err := time.Parse(metav1.RFC3339Micro, s)
	if err != nil {
		if tm, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return err
		}
	}
	if !tm.IsZero() {
		t.ns = tm.UnixNano()
	}
	return nil
}

// oracleEvent is the reference type with the two timestamps relaxed: the
// shallower fields hide the embedded ones.
type oracleEvent struct {
	auditv1.Event
	RequestReceivedTimestamp relaxedTime `json:"requestReceivedTimestamp"`
	StageTimestamp           relaxedTime `json:"stageTimestamp"`
}

type oracleList struct {
	metav1.TypeMeta `json:""`
	metav1.ListMeta `json:"metadata"`
	Items           []oracleEvent `json:"items"`
}

var (
	eventNames = []string{"kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb",
		"user", "impersonatedUser", "authenticationMetadata", "sourceIPs", "userAgent", "objectRef",
		"responseStatus", "requestObject", "responseObject", "requestReceivedTimestamp",
		"stageTimestamp", "annotations"}
	listNames = []string{"kind", "apiVersion", "metadata", "items"}
)

// dupField returns the first top-level field of obj, among names matched
// case-insensitively, that is given twice.
func dupField(obj []byte, names []string) string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return ""
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return ""
		}
		for _, n := range names {
			if strings.EqualFold(tok.(string), n) {
				if seen[n] {
					return n
				}
				seen[n] = true
			}
		}
	}
	return ""
}

// oracle decodes line the reference way.
func oracle(line []byte) ([]cpid.AuditEvent, error) {
	if !utf8.Valid(line) {
		return nil, errors.New("invalid UTF-8")
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(line, &tm); err != nil {
		return nil, err
	}
	if t := bytes.Trim(line, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	if tm.APIVersion != "audit.k8s.io/v1" {
		return nil, errors.New("apiVersion")
	}
	switch tm.Kind {
	case "Event":
		var oe oracleEvent
		if err := json.Unmarshal(line, &oe); err != nil {
			return nil, err
		}
		if d := dupField(line, eventNames); d != "" {
			return nil, errors.New("duplicate " + d)
		}
		var c bytes.Buffer
		json.Compact(&c, line)
		return []cpid.AuditEvent{expect(&oe, c.Bytes(), false)}, nil
	case "EventList":
		var ol oracleList
		if err := json.Unmarshal(line, &ol); err != nil {
			return nil, err
		}
		if d := dupField(line, listNames); d != "" {
			return nil, errors.New("duplicate " + d)
		}
		var raw struct{ Items []json.RawMessage }
		json.Unmarshal(line, &raw)
		evs := []cpid.AuditEvent{}
		for i := range ol.Items {
			if string(raw.Items[i]) == "null" {
				return nil, errors.New("null item")
			}
			oe := &ol.Items[i]
			if oe.Kind != "" && oe.Kind != "Event" || oe.APIVersion != "" && oe.APIVersion != "audit.k8s.io/v1" {
				return nil, errors.New("item kind")
			}
			if d := dupField(raw.Items[i], eventNames); d != "" {
				return nil, errors.New("duplicate " + d)
			}
			var c bytes.Buffer
			json.Compact(&c, raw.Items[i])
			bare := oe.Kind == "" && oe.APIVersion == ""
			e := expect(oe, c.Bytes(), bare)
			if bare && e.AuditID == "" && e.StageNS == 0 && e.ReceivedNS == 0 {
				return nil, errors.New("eventless item")
			}
			evs = append(evs, e)
		}
		return evs, nil
	}
	return nil, errors.New("kind")
}

// expect derives the AuditEvent of one reference event; compact is the
// event's compact JSON.
func expect(oe *oracleEvent, compact []byte, bare bool) cpid.AuditEvent {
	e := cpid.AuditEvent{
		AuditID:    string(oe.AuditID),
		Stage:      string(oe.Stage),
		Level:      string(oe.Level),
		Verb:       oe.Verb,
		RequestURI: oe.RequestURI,
		Username:   oe.User.Username,
		UserAgent:  oe.UserAgent,
		SourceIPs:  oe.SourceIPs,
		ReceivedNS: oe.RequestReceivedTimestamp.ns,
		StageNS:    oe.StageTimestamp.ns,
	}
	if r := oe.ObjectRef; r != nil {
		e.APIGroup, e.APIVersion, e.Resource, e.Subresource = r.APIGroup, r.APIVersion, r.Resource, r.Subresource
		e.Namespace, e.Name, e.UID, e.ResourceVersion = r.Namespace, r.Name, string(r.UID), r.ResourceVersion
	}
	var r3 bool
	if s := oe.ResponseStatus; s != nil {
		e.Code = int(s.Code)
		e.ResponseStatus, _ = json.Marshal(s)
		// Redacted as a body of no resource, as it came: what the
		// reference type leaves out can hold a credential too.
		var raw struct{ ResponseStatus json.RawMessage }
		json.Unmarshal(compact, &raw)
		var red json.RawMessage
		if red, r3 = redactAny(raw.ResponseStatus, decodeOrdered(raw.ResponseStatus), "", "", ""); r3 {
			e.ResponseStatus = red
		}
	}
	if oe.Annotations != nil {
		e.Annotations, _ = json.Marshal(oe.Annotations)
	}
	var req, resp any
	if oe.RequestObject != nil {
		e.RequestObject = compactOf(oe.RequestObject.Raw)
		req = decodeOrdered(oe.RequestObject.Raw)
	}
	if oe.ResponseObject != nil {
		e.ResponseObject = compactOf(oe.ResponseObject.Raw)
		resp = decodeOrdered(oe.ResponseObject.Raw)
	}
	reqMeta, respMeta := metaOf(plainOf(req)), metaOf(plainOf(resp))
	if name, _ := respMeta["name"].(string); e.Name == "" {
		e.Name = name
	}
	if uid, _ := respMeta["uid"].(string); uid != "" {
		e.UID = uid
	}
	if rv, _ := respMeta["resourceVersion"].(string); rv != "" {
		e.ResourceVersion = rv
	}
	for _, md := range []map[string]any{respMeta, reqMeta} {
		if ann, ok := md["annotations"].(map[string]any); ok {
			e.CPID, _ = ann["v1.cpid.dev/cpid"].(string)
			anc, _ := ann["v1.cpid.dev/ancestors"].(string)
			for p := range strings.SplitSeq(anc, ",") {
				if p = strings.TrimSpace(p); p != "" {
					e.CPIDAncestors = append(e.CPIDAncestors, p)
				}
			}
			break
		}
	}
	for _, md := range []map[string]any{respMeta, reqMeta} {
		if refs, ok := md["ownerReferences"].([]any); ok {
			e.OwnerRefs, _ = json.Marshal(refs)
			break
		}
	}
	var r1, r2 bool
	e.RequestObject, r1 = redactAny(e.RequestObject, req, e.Resource, e.Subresource, e.APIGroup)
	e.ResponseObject, r2 = redactAny(e.ResponseObject, resp, e.Resource, e.Subresource, e.APIGroup)
	e.Redacted = r1 || r2 || r3
	if !e.Redacted {
		if bare {
			compact = append([]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1"`+map[bool]string{true: "", false: ","}[len(compact) == 2]), compact[1:]...)
		}
		sum := sha256.Sum256(compact)
		copy(e.Hash[:], sum[:])
	}
	return e
}

func compactOf(b []byte) json.RawMessage {
	var c bytes.Buffer
	json.Compact(&c, b)
	return c.Bytes()
}

func metaOf(body any) map[string]any {
	m, _ := body.(map[string]any)
	md, _ := m["metadata"].(map[string]any)
	return md
}

// object is a JSON object decoded with its duplicated keys, in order.
type object []member

type member struct {
	k string
	v any
}

// decodeOrdered decodes valid JSON keeping duplicated keys and numbers'
// text.
func decodeOrdered(raw []byte) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := orderedValue(dec)
	if err != nil {
		panic(err)
	}
	return v
}

func orderedValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := object{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := orderedValue(dec)
			if err != nil {
				return nil, err
			}
			o = append(o, member{k.(string), v})
		}
		_, err := dec.Token()
		return o, err
	case json.Delim('['):
		a := []any{}
		for dec.More() {
			v, err := orderedValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	return tok, nil
}

// plainOf turns objects into maps where the last of duplicated keys wins.
func plainOf(v any) any {
	switch v := v.(type) {
	case object:
		m := map[string]any{}
		for _, kv := range v {
			m[kv.k] = plainOf(kv.v)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i := range v {
			a[i] = plainOf(v[i])
		}
		return a
	}
	return v
}

// anyOf decodes JSON as plainOf(decodeOrdered(raw)) does.
func anyOf(raw []byte) any {
	if raw == nil {
		return nil
	}
	return plainOf(decodeOrdered(raw))
}

// view is an AuditEvent with its JSON decoded, so that the scanner's output
// and the oracle's compare by meaning.
type view struct {
	cpid.AuditEvent
	OwnerRefs, RequestObject, ResponseObject any
	Annotations                              map[string]string
	ResponseStatus                           *metav1.Status
	Hash                                     string
}

func viewOf(e cpid.AuditEvent, withHash bool) view {
	v := view{AuditEvent: e}
	v.AuditEvent.OwnerRefs, v.AuditEvent.RequestObject, v.AuditEvent.ResponseObject = nil, nil, nil
	v.AuditEvent.Annotations, v.AuditEvent.ResponseStatus = nil, nil
	v.AuditEvent.Hash = [16]byte{}
	if withHash {
		v.Hash = fmt.Sprintf("%x", e.Hash)
	}
	v.OwnerRefs, v.RequestObject, v.ResponseObject = anyOf(e.OwnerRefs), normalEmbedded(anyOf(e.RequestObject)), normalEmbedded(anyOf(e.ResponseObject))
	unmarshal(e.Annotations, &v.Annotations)
	unmarshal(e.ResponseStatus, &v.ResponseStatus)
	return v
}

func unmarshal(b []byte, v any) {
	if b != nil {
		if err := json.Unmarshal(b, v); err != nil {
			panic(fmt.Sprintf("unmarshal %s: %v", b, err))
		}
	}
}

// compareAudit checks DecodeAudit against the oracle on one line.
func compareAudit(t *testing.T, line []byte) {
	t.Helper()
	got, err := ingest.DecodeAudit(line)
	want, oerr := oracle(line)
	switch {
	case err != nil && oerr != nil:
		return
	case err != nil:
		t.Fatalf("DecodeAudit rejected what the oracle accepts: %v\n%q", err, line)
	case oerr != nil:
		t.Fatalf("DecodeAudit accepted what the oracle rejects (%v)\n%q", oerr, line)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := viewOf(got[i], !want[i].Redacted), viewOf(want[i], !want[i].Redacted)
		if diff := cmp.Diff(w, g); diff != "" {
			t.Fatalf("event %d differs from the oracle (-want +got):\n%s\nline %q", i, diff, line)
		}
		if !got[i].Redacted && (!bytes.Equal(got[i].RequestObject, want[i].RequestObject) ||
			!bytes.Equal(got[i].ResponseObject, want[i].ResponseObject)) {
			t.Fatalf("event %d: bodies are not the compact input", i)
		}
	}
}

func addFiles(f *testing.F, pattern string) {
	files, _ := filepath.Glob(pattern)
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for l := range bytes.SplitSeq(b, []byte("\n")) {
			if len(l) > 0 {
				f.Add(l)
			}
		}
	}
}

// splices returns line and events built around it, so that the fuzzer's
// JSON values also reach the envelope, the bodies and the redaction.
func splices(line []byte) [][]byte {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	out := [][]byte{line}
	if len(line) > 0 && line[0] == '{' {
		out = append(out,
			cat([]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1",`), line[1:]),
			cat([]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[`), line, []byte(`]}`)),
			// An item with an auditID, which a bare item needs unless it
			// has a timestamp.
			cat([]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[{"auditID":"i",`), line[1:], []byte(`]}`)))
	}
	for _, ref := range []string{
		`"resource":"pods"`, `"resource":"secrets"`, `"resource":"serviceaccounts","subresource":"token"`,
		`"resource":"tokenreviews","apiGroup":"authentication.k8s.io"`,
	} {
		out = append(out, cat([]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse",`+
			`"auditID":"x","stage":"ResponseComplete","verb":"update","objectRef":{`+ref+
			`,"namespace":"default","name":"n","uid":"u","apiVersion":"v1","resourceVersion":"1"},"requestObject":`),
			line, []byte(`,"responseObject":`), line, []byte(`}`)))
	}
	return out
}

// FuzzDecodeAudit checks that DecodeAudit never panics and agrees with
// encoding/json and the reference type on acceptance and on every field.
func FuzzDecodeAudit(f *testing.F) {
	addFiles(f, "testdata/audit/*.json")
	addFiles(f, "testdata/audit/real/*.json")
	addFiles(f, "testdata/audit/*.jsonl")
	f.Add([]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","objectRef":{"name":null,"NAME":"x"}}`))
	f.Add([]byte(`{"metadata":{"name":"a","uid":"b","annotations":{"v1.cpid.dev/cpid":"c","v1.cpid.dev/ancestors":" d, ,e"},` +
		`"ownerReferences":[{"kind":"K"}]},"data":{"k":"v"},"items":[{"stringData":{}}],"rows":[{"object":{"DATA":1}}]}`))
	f.Add([]byte(`{"sourceIPs":["a",null],"user":{"username":"u","extra":{"k":["v",null]}},"annotations":{"a":"b"},` +
		`"responseStatus":{"code":409,"details":{"causes":[{"field":"f"}]}},"stageTimestamp":"2026-11-22T15:47:58.1+01:00"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, l := range splices(line) {
			compareAudit(t, l)
		}
	})
}

// FuzzDecodeLog checks that DecodeLog never panics, accepts only JSON that
// encoding/json accepts, and returns compact Fields equal to the input.
func FuzzDecodeLog(f *testing.F) {
	addFiles(f, "testdata/logs/*.jsonl")
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := ingest.DecodeLog(line)
		if err != nil {
			return
		}
		if !json.Valid(line) || !utf8.Valid(line) {
			t.Fatalf("accepted invalid JSON %q", line)
		}
		if c := compactOf(line); !bytes.Equal(c, r.Fields) {
			t.Fatalf("Fields %q, want %q", r.Fields, c)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("accepted a non-object: %v", err)
		}
		if msg, ok := m["msg"].(string); ok && msg != r.Msg {
			t.Fatalf("Msg %q, want %q", r.Msg, msg)
		}
		if cpid, _ := m["cpid"].(string); cpid != r.CPID {
			t.Fatalf("CPID %q, want %q", r.CPID, cpid)
		}
		if sum := sha256.Sum256(r.Fields); !bytes.Equal(sum[:16], r.Hash[:]) {
			t.Fatal("hash is not of the compact line")
		}
	})
}

// FuzzCRI feeds lines through CRI and checks that it never panics, passes
// unwrapped lines through unchanged and never returns more than Max bytes.
func FuzzCRI(f *testing.F) {
	files, _ := filepath.Glob("testdata/cri/*.log")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, 0)
		f.Add(b, 100)
	}
	f.Add([]byte("2026-11-22T15:47:58.123456789Z stdout P {\"a\":\n2026-11-22T15:47:58.123456789Z stdout F 1}"), 64)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		c := ingest.CRI{Max: max % 4096}
		for l := range bytes.SplitSeq(data, []byte("\n")) {
			p, ok, err := c.Feed(l)
			if ok && err != nil {
				t.Fatal("ok with an error")
			}
			if ok && c.Max > 0 && len(p) > c.Max && !bytes.Equal(p, l) {
				t.Fatalf("joined line of %d bytes exceeds Max %d", len(p), c.Max)
			}
		}
		c.End()
		if err := c.End(); err != nil {
			t.Fatalf("End after End: %v", err)
		}
	})
}
