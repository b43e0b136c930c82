package ingest_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
)

// A credential shape is an audit event that carries a credential somewhere
// the redaction table covers. The credential is a marker that appears
// nowhere else, so that finding it in the output means it survived.
type credShape struct {
	name string
	// ref is the event's objectRef members.
	ref string
	// req and resp build the bodies around the credential c; "" leaves a
	// body out.
	req, resp func(c string) string
}

// pemOf is a private key as PEM whose body holds c.
func pemOf(c string) string {
	return "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + c + "\nAAAA\n-----END RSA PRIVATE KEY-----\n"
}

var credShapes = []credShape{
	{"secret data", `"resource":"secrets","namespace":"d","name":"s","apiVersion":"v1"`,
		func(c string) string {
			return `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s"},"data":{"password":"` + c + `"}}`
		},
		func(c string) string {
			return `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s"},"data":{"password":"` + c + `"}}`
		}},
	{"secret stringData, no kind", `"resource":"secrets","namespace":"d","name":"s","apiVersion":"v1"`,
		func(c string) string { return `{"stringData":{"password":"` + c + `"}}` }, nil},
	{"secret JSON patch", `"resource":"secrets","namespace":"d","name":"s","apiVersion":"v1"`,
		func(c string) string { return `[{"op":"add","path":"/data/password","value":"` + c + `"}]` }, nil},
	{"secret list", `"resource":"secrets","namespace":"d","apiVersion":"v1"`, nil,
		func(c string) string {
			return `{"kind":"SecretList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a"},"data":{"k":"` + c + `"}}]}`
		}},
	{"secret table", `"resource":"secrets","namespace":"d","apiVersion":"v1"`, nil,
		func(c string) string {
			return `{"kind":"Table","apiVersion":"meta.k8s.io/v1","rows":[{"cells":["a"],"object":{"metadata":{"name":"a"},"stringData":{"k":"` + c + `"}}}]}`
		}},
	{"secret last-applied", `"resource":"secrets","namespace":"d","name":"s","apiVersion":"v1"`, nil,
		func(c string) string {
			la, _ := json.Marshal(`{"apiVersion":"v1","kind":"Secret","data":{"k":"` + c + `"}}`)
			return `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","annotations":{"kubectl.kubernetes.io/last-applied-configuration":` + string(la) + `}}}`
		}},
	{"secret managedFields", `"resource":"secrets","namespace":"d","name":"s","apiVersion":"v1"`, nil,
		func(c string) string {
			return `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","managedFields":[{"manager":"m","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:` + c + `":{}}}}]}}`
		}},
	{"TokenRequest", `"resource":"serviceaccounts","subresource":"token","namespace":"d","name":"sa","apiVersion":"v1"`,
		func(string) string {
			return `{"kind":"TokenRequest","apiVersion":"authentication.k8s.io/v1","spec":{"audiences":["x"],"expirationSeconds":3600}}`
		},
		func(c string) string {
			return `{"kind":"TokenRequest","apiVersion":"authentication.k8s.io/v1","spec":{"audiences":["x"]},"status":{"token":"` + c + `","expirationTimestamp":"2026-11-22T16:00:00Z"}}`
		}},
	{"TokenReview", `"resource":"tokenreviews","apiGroup":"authentication.k8s.io","apiVersion":"v1"`,
		func(c string) string {
			return `{"kind":"TokenReview","apiVersion":"authentication.k8s.io/v1","spec":{"token":"` + c + `"}}`
		},
		func(c string) string {
			return `{"kind":"TokenReview","apiVersion":"authentication.k8s.io/v1","spec":{"token":"` + c + `"},"status":{"authenticated":true}}`
		}},
	{"TokenReview without kind", `"resource":"tokenreviews","apiGroup":"authentication.k8s.io","apiVersion":"v1"`,
		func(c string) string { return `{"spec":{"token":"` + c + `"}}` }, nil},
	{"PEM key in a ConfigMap", `"resource":"configmaps","namespace":"d","name":"c","apiVersion":"v1"`, nil,
		func(c string) string {
			v, _ := json.Marshal("cert: x\nkey: |\n" + pemOf(c) + "tail")
			return `{"kind":"ConfigMap","apiVersion":"v1","data":{"config.yaml":` + string(v) + `}}`
		}},
	{"PEM key without its end line", `"resource":"widgets","apiGroup":"example.com","namespace":"d","name":"w","apiVersion":"v1"`, nil,
		func(c string) string {
			v, _ := json.Marshal("-----BEGIN PRIVATE KEY-----\n" + c)
			return `{"kind":"Widget","apiVersion":"example.com/v1","spec":{"key":` + string(v) + `}}`
		}},
	{"base64 PEM key in a custom resource", `"resource":"widgets","apiGroup":"example.com","namespace":"d","name":"w","apiVersion":"v1"`, nil,
		func(c string) string {
			return `{"kind":"Widget","apiVersion":"example.com/v1","spec":{"tls":{"key":"` + base64.StdEncoding.EncodeToString([]byte(pemOf(c))) + `"}}}`
		}},
	{"Secret manifest in a custom resource", `"resource":"bundles","apiGroup":"example.com","namespace":"d","name":"b","apiVersion":"v1"`,
		func(c string) string {
			return `{"kind":"Bundle","apiVersion":"example.com/v1","spec":{"resources":[{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"},"stringData":{"p":"` + c + `"}}]}}`
		}, nil},
	{"Secret manifest in another object's last-applied", `"resource":"bundles","apiGroup":"example.com","namespace":"d","name":"b","apiVersion":"v1"`, nil,
		func(c string) string {
			la, _ := json.Marshal(`{"apiVersion":"example.com/v1","kind":"Bundle","spec":{"resources":[{"apiVersion":"v1","kind":"Secret","data":{"p":"` + c + `"}}]}}`)
			return `{"kind":"Bundle","apiVersion":"example.com/v1","metadata":{"name":"b","annotations":{"kubectl.kubernetes.io/last-applied-configuration":` + string(la) + `}},"spec":{"resources":[]}}`
		}},
}

// eventWith is an audit event line of the shape around the credential.
func eventWith(sh credShape, c string) []byte {
	var b strings.Builder
	id := sha256.Sum256([]byte(sh.name + c))
	b.WriteString(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"` + hex.EncodeToString(id[:8]) +
		`","stage":"ResponseComplete","verb":"create","objectRef":{` + sh.ref + `},"responseStatus":{"code":201},` +
		`"requestReceivedTimestamp":"2026-11-22T15:48:03.114201Z","stageTimestamp":"2026-11-22T15:48:03.118845Z"`)
	if sh.req != nil {
		b.WriteString(`,"requestObject":` + sh.req(c))
	}
	if sh.resp != nil {
		b.WriteString(`,"responseObject":` + sh.resp(c))
	}
	b.WriteString("}")
	return []byte(b.String())
}

// survives reports where c appears in what a stored event holds: any key or
// string of its bodies, decoded, with JSON and base64 inside strings
// decoded too.
func survives(e cpid.AuditEvent, c string) string {
	for name, raw := range map[string][]byte{"requestObject": e.RequestObject, "responseObject": e.ResponseObject,
		"annotations": e.Annotations, "ownerRefs": e.OwnerRefs, "responseStatus": e.ResponseStatus} {
		if raw == nil {
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Sprintf("%s: not JSON: %v", name, err)
		}
		if where := findIn(v, c, name); where != "" {
			return where
		}
	}
	return ""
}

func findIn(v any, c, at string) string {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if strings.Contains(k, c) {
				return at + " key " + k
			}
			if w := findIn(x, c, at+"."+k); w != "" {
				return w
			}
		}
	case []any:
		for i, x := range v {
			if w := findIn(x, c, fmt.Sprintf("%s[%d]", at, i)); w != "" {
				return w
			}
		}
	case string:
		if strings.Contains(v, c) {
			return at
		}
		var inner any
		if json.Unmarshal([]byte(v), &inner) == nil {
			if w := findIn(inner, c, at+"(JSON)"); w != "" {
				return w
			}
		}
		if d, err := base64.StdEncoding.DecodeString(v); err == nil && bytes.Contains(d, []byte(c)) {
			return at + "(base64)"
		}
	}
	return ""
}

var update = flag.Bool("update", false, "rewrite testdata/audit/credentials.jsonl")

// credMarker is the credential of testdata/audit/credentials.jsonl, which
// holds every shape once: the end-to-end tests look for it in the database
// files.
const credMarker = "c0ffee5ecret42"

func TestRedactShapes(t *testing.T) {
	const c = credMarker
	var all bytes.Buffer
	for _, sh := range credShapes {
		all.Write(eventWith(sh, c))
		all.WriteByte('\n')
	}
	const golden = "testdata/audit/credentials.jsonl"
	if *update {
		if err := os.WriteFile(golden, all.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(golden); err != nil || !bytes.Equal(b, all.Bytes()) {
		t.Errorf("%s is not every shape (%v): go test ./ingest -run TestRedactShapes -update", golden, err)
	}
	for _, sh := range credShapes {
		t.Run(sh.name, func(t *testing.T) {
			line := eventWith(sh, c)
			if !bytes.Contains(line, []byte(c)) && !bytes.Contains(line, []byte(base64.StdEncoding.EncodeToString([]byte(pemOf(c))))) {
				t.Fatal("the shape does not carry the credential")
			}
			evs, err := ingest.DecodeAudit(line)
			if err != nil {
				t.Fatal(err)
			}
			if w := survives(evs[0], c); w != "" {
				t.Errorf("credential stored at %s", w)
			}
			if !evs[0].Redacted {
				t.Error("Redacted not set")
			}
			// The webhook's EventList carries the same event: the same result.
			list := append(append([]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[`), line...), "]}"...)
			evs, err = ingest.DecodeAudit(list)
			if err != nil {
				t.Fatal(err)
			}
			if w := survives(evs[0], c); w != "" {
				t.Errorf("EventList: credential stored at %s", w)
			}
		})
	}
}

// TestRedactKeepsTheRest checks that what is not a credential is kept as it
// came: a certificate, a Pod that mounts a Secret, a ConfigMap, and the
// rest of a redacted object.
func TestRedactKeepsTheRest(t *testing.T) {
	cert, _ := json.Marshal("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	for _, tc := range []struct{ name, ref, body string }{
		{"certificate", `"resource":"configmaps","namespace":"d","name":"c","apiVersion":"v1"`,
			`{"kind":"ConfigMap","apiVersion":"v1","data":{"ca.crt":` + string(cert) + `}}`},
		{"pod with a secret volume", `"resource":"pods","namespace":"d","name":"p","apiVersion":"v1"`,
			`{"kind":"Pod","apiVersion":"v1","spec":{"volumes":[{"name":"v","secret":{"secretName":"s"}}],"containers":[{"name":"c","envFrom":[{"secretRef":{"name":"Secret"}}]}]}}`},
		{"escaped but harmless", `"resource":"configmaps","namespace":"d","name":"c","apiVersion":"v1"`,
			`{"kind":"ConfigMap","apiVersion":"v1","data":{"a":"\u003cb\u003e PRIVATE matters"}}`},
		{"a token outside the rules' paths", `"resource":"configmaps","namespace":"d","name":"c","apiVersion":"v1"`,
			`{"kind":"ConfigMap","apiVersion":"v1","data":{"token":"not-a-rule"},"status":{"token":"x"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := []byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"a","stage":"ResponseComplete",` +
				`"verb":"create","objectRef":{` + tc.ref + `},"responseObject":` + tc.body + `}`)
			evs, err := ingest.DecodeAudit(line)
			if err != nil {
				t.Fatal(err)
			}
			if evs[0].Redacted || !bytes.Equal(evs[0].ResponseObject, []byte(tc.body)) {
				t.Errorf("changed: redacted=%v\n got %s\nwant %s", evs[0].Redacted, evs[0].ResponseObject, tc.body)
			}
		})
	}
	// A redacted object keeps everything else.
	evs, err := ingest.DecodeAudit(eventWith(credShapes[7], "tok"))
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		Spec   struct{ Audiences []string }
		Status map[string]any
	}
	if err := json.Unmarshal(evs[0].ResponseObject, &tr); err != nil {
		t.Fatal(err)
	}
	if len(tr.Spec.Audiences) != 1 || tr.Status["expirationTimestamp"] == nil || tr.Status["token"] != nil {
		t.Errorf("TokenRequest after redaction: %s", evs[0].ResponseObject)
	}
}

// TestRedactCustomRule checks a --redact rule, on the resource's own
// requests and on its kind embedded elsewhere.
func TestRedactCustomRule(t *testing.T) {
	for _, bad := range []string{"", "x", "x:", ":a", "x:a..b", "x:a[0]"} {
		if _, err := ingest.ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) accepted", bad)
		}
	}
	rule, err := ingest.ParseRule("sealedsecrets.bitnami.com:{.spec.encryptedData}")
	if err != nil {
		t.Fatal(err)
	}
	if got := rule.String(); got != "sealedsecrets.bitnami.com:spec.encryptedData" {
		t.Errorf("String() = %q", got)
	}
	red := ingest.NewRedaction(rule)
	body := []byte(`{"kind":"SealedSecret","apiVersion":"bitnami.com/v1alpha1","spec":{"encryptedData":{"k":"AgBy"},"template":{}}}`)
	out, ok := red.Body("sealedsecrets", "", "bitnami.com", body)
	if !ok || bytes.Contains(out, []byte("AgBy")) || !bytes.Contains(out, []byte(`"template":{}`)) {
		t.Errorf("own request: %v %s", ok, out)
	}
	// Embedded in a list of another resource, found by its kind.
	list := []byte(`{"items":[` + string(body) + `]}`)
	if out, ok := red.Body("things", "", "example.com", list); !ok || bytes.Contains(out, []byte("AgBy")) {
		t.Errorf("embedded: %v %s", ok, out)
	}
	// Another group's resource of the same name is not covered.
	if _, ok := red.Body("sealedsecrets", "", "other.io", []byte(`{"spec":{"encryptedData":1}}`)); ok {
		t.Error("a rule for bitnami.com redacted other.io")
	}
	// The default redaction leaves it.
	if _, ok := ingest.DefaultRedaction.Body("sealedsecrets", "", "bitnami.com", body); ok {
		t.Error("the default redaction covers SealedSecrets")
	}
}

// FuzzRedact builds every credential shape around a credential the fuzzer
// varies, with the bodies' names in any letter case and any of their
// characters \u-escaped, and checks that the credential is stored nowhere.
func FuzzRedact(f *testing.F) {
	for i := range credShapes {
		f.Add(uint8(i), uint64(0), uint64(0), "s3cr3t")
		f.Add(uint8(i), uint64(0x5555), uint64(0xaaaa), "x")
	}
	f.Fuzz(func(t *testing.T, shape uint8, upper, escape uint64, seed string) {
		sh := credShapes[int(shape)%len(credShapes)]
		sum := sha256.Sum256([]byte(seed))
		c := "cred" + hex.EncodeToString(sum[:6])
		line := mangleNames(eventWith(sh, c), upper, escape)
		evs, err := ingest.DecodeAudit(line)
		if err != nil {
			t.Fatalf("%s: %v\n%s", sh.name, err, line)
		}
		if w := survives(evs[0], c); w != "" {
			t.Fatalf("%s: credential stored at %s\n%s", sh.name, w, line)
		}
	})
}

// mangleNames rewrites the names that the redaction matches inside the
// bodies of line: the bits of upper flip the letter case of the members
// matched case-insensitively (data, stringData, token, spec, status), and
// the bits of escape write characters of any name and of kind values as
// \u escapes, which mean the same thing.
func mangleNames(line []byte, upper, escape uint64) []byte {
	var out bytes.Buffer
	bit := 0
	next := func(mask uint64) bool { b := mask&(1<<(bit%64)) != 0; bit++; return b }
	words := []string{`"data"`, `"stringData"`, `"token"`, `"spec"`, `"status"`, `"Secret"`, `"TokenReview"`, `"TokenRequest"`, `"kind"`}
	for i := 0; i < len(line); {
		matched := ""
		for _, w := range words {
			if bytes.HasPrefix(line[i:], []byte(w)) {
				matched = w
				break
			}
		}
		if matched == "" {
			out.WriteByte(line[i])
			i++
			continue
		}
		isKindValue := matched == `"Secret"` || matched == `"TokenReview"` || matched == `"TokenRequest"`
		out.WriteByte('"')
		for _, r := range matched[1 : len(matched)-1] {
			if !isKindValue && matched != `"kind"` && next(upper) {
				r = unicode.ToUpper(r)
			}
			if next(escape) {
				fmt.Fprintf(&out, `\u%04x`, r)
			} else {
				out.WriteRune(r)
			}
		}
		out.WriteByte('"')
		i += len(matched)
	}
	return out.Bytes()
}
