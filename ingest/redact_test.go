package ingest_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	// req and resp build the bodies around the credential c, status the
	// responseStatus; nil leaves a body out (and the status {"code":201}).
	req, resp, status func(c string) string
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
		}, nil},
	{"secret stringData, no kind", `"resource":"secrets","namespace":"d","name":"s","apiVersion":"v1"`,
		func(c string) string { return `{"stringData":{"password":"` + c + `"}}` }, nil, nil},
	{"secret JSON patch", `"resource":"secrets","namespace":"d","name":"s","apiVersion":"v1"`,
		func(c string) string { return `[{"op":"add","path":"/data/password","value":"` + c + `"}]` }, nil, nil},
	{"secret list", `"resource":"secrets","namespace":"d","apiVersion":"v1"`, nil,
		func(c string) string {
			return `{"kind":"SecretList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a"},"data":{"k":"` + c + `"}}]}`
		}, nil},
	{"secret table", `"resource":"secrets","namespace":"d","apiVersion":"v1"`, nil,
		func(c string) string {
			return `{"kind":"Table","apiVersion":"meta.k8s.io/v1","rows":[{"cells":["a"],"object":{"metadata":{"name":"a"},"stringData":{"k":"` + c + `"}}}]}`
		}, nil},
	{"secret last-applied", `"resource":"secrets","namespace":"d","name":"s","apiVersion":"v1"`, nil,
		func(c string) string {
			la, _ := json.Marshal(`{"apiVersion":"v1","kind":"Secret","data":{"k":"` + c + `"}}`)
			return `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","annotations":{"kubectl.kubernetes.io/last-applied-configuration":` + string(la) + `}}}`
		}, nil},
	{"secret managedFields", `"resource":"secrets","namespace":"d","name":"s","apiVersion":"v1"`, nil,
		func(c string) string {
			return `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","managedFields":[{"manager":"m","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:` + c + `":{}}}}]}}`
		}, nil},
	{"TokenRequest", `"resource":"serviceaccounts","subresource":"token","namespace":"d","name":"sa","apiVersion":"v1"`,
		func(string) string {
			return `{"kind":"TokenRequest","apiVersion":"authentication.k8s.io/v1","spec":{"audiences":["x"],"expirationSeconds":3600}}`
		},
		func(c string) string {
			return `{"kind":"TokenRequest","apiVersion":"authentication.k8s.io/v1","spec":{"audiences":["x"]},"status":{"token":"` + c + `","expirationTimestamp":"2026-11-22T16:00:00Z"}}`
		}, nil},
	{"TokenReview", `"resource":"tokenreviews","apiGroup":"authentication.k8s.io","apiVersion":"v1"`,
		func(c string) string {
			return `{"kind":"TokenReview","apiVersion":"authentication.k8s.io/v1","spec":{"token":"` + c + `"}}`
		},
		func(c string) string {
			return `{"kind":"TokenReview","apiVersion":"authentication.k8s.io/v1","spec":{"token":"` + c + `"},"status":{"authenticated":true}}`
		}, nil},
	{"TokenReview without kind", `"resource":"tokenreviews","apiGroup":"authentication.k8s.io","apiVersion":"v1"`,
		func(c string) string { return `{"spec":{"token":"` + c + `"}}` }, nil, nil},
	{"PEM key in a ConfigMap", `"resource":"configmaps","namespace":"d","name":"c","apiVersion":"v1"`, nil,
		func(c string) string {
			v, _ := json.Marshal("cert: x\nkey: |\n" + pemOf(c) + "tail")
			return `{"kind":"ConfigMap","apiVersion":"v1","data":{"config.yaml":` + string(v) + `}}`
		}, nil},
	{"PEM key without its end line", `"resource":"widgets","apiGroup":"example.com","namespace":"d","name":"w","apiVersion":"v1"`, nil,
		func(c string) string {
			v, _ := json.Marshal("-----BEGIN PRIVATE KEY-----\n" + c)
			return `{"kind":"Widget","apiVersion":"example.com/v1","spec":{"key":` + string(v) + `}}`
		}, nil},
	{"base64 PEM key in a custom resource", `"resource":"widgets","apiGroup":"example.com","namespace":"d","name":"w","apiVersion":"v1"`, nil,
		func(c string) string {
			return `{"kind":"Widget","apiVersion":"example.com/v1","spec":{"tls":{"key":"` + base64.StdEncoding.EncodeToString([]byte(pemOf(c))) + `"}}}`
		}, nil},
	{"Secret manifest in a custom resource", `"resource":"bundles","apiGroup":"example.com","namespace":"d","name":"b","apiVersion":"v1"`,
		func(c string) string {
			return `{"kind":"Bundle","apiVersion":"example.com/v1","spec":{"resources":[{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"},"stringData":{"p":"` + c + `"}}]}}`
		}, nil, nil},
	{"Secret manifest in another object's last-applied", `"resource":"bundles","apiGroup":"example.com","namespace":"d","name":"b","apiVersion":"v1"`, nil,
		func(c string) string {
			la, _ := json.Marshal(`{"apiVersion":"example.com/v1","kind":"Bundle","spec":{"resources":[{"apiVersion":"v1","kind":"Secret","data":{"p":"` + c + `"}}]}}`)
			return `{"kind":"Bundle","apiVersion":"example.com/v1","metadata":{"name":"b","annotations":{"kubectl.kubernetes.io/last-applied-configuration":` + string(la) + `}},"spec":{"resources":[]}}`
		}, nil},

	// Kinds and resources in any letter case.
	{"kind SECRET in a custom resource", `"resource":"bundles","apiGroup":"example.com","namespace":"d","name":"b","apiVersion":"v1"`,
		func(c string) string {
			return `{"kind":"Bundle","apiVersion":"example.com/v1","spec":{"resources":[{"apiVersion":"v1","kind":"SECRET","data":{"p":"` + c + `"}}]}}`
		}, nil, nil},
	{"kind tokenrequest in a custom resource", `"resource":"bundles","apiGroup":"example.com","namespace":"d","name":"b","apiVersion":"v1"`, nil,
		func(c string) string {
			return `{"kind":"Bundle","apiVersion":"example.com/v1","spec":{"resources":[{"apiVersion":"authentication.k8s.io/v1","kind":"tokenrequest","status":{"token":"` + c + `"}}]}}`
		}, nil},
	{"resource SECRETS", `"resource":"SECRETS","namespace":"d","name":"s","apiVersion":"v1"`,
		func(c string) string { return `{"stringData":{"password":"` + c + `"}}` }, nil, nil},

	// Private keys in the status and in keys.
	{"PEM key in responseStatus", `"resource":"configmaps","namespace":"d","name":"c","apiVersion":"v1"`, nil, nil,
		func(c string) string {
			m, _ := json.Marshal(`ConfigMap "c" is invalid: data[key.pem]: Invalid value: "` + pemOf(c) + `"`)
			return `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":` + string(m) + `,"reason":"Invalid","code":422}`
		}},
	{"PEM key as a map key", `"resource":"configmaps","namespace":"d","name":"c","apiVersion":"v1"`, nil,
		func(c string) string {
			k, _ := json.Marshal(pemOf(c))
			return `{"kind":"ConfigMap","apiVersion":"v1","data":{` + string(k) + `:"x"}}`
		}, nil},

	// Tokens: env vars, bearer tokens, JWTs, kubeconfigs.
	{"secret env var", `"resource":"pods","namespace":"d","name":"p","apiVersion":"v1"`,
		func(c string) string {
			return `{"kind":"Pod","apiVersion":"v1","spec":{"containers":[{"name":"app","env":[{"name":"POD_IP","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}},` +
				`{"name":"db_Password","value":"` + c + `"}]}]}}`
		}, nil, nil},
	{"bearer token in an env var", `"resource":"deployments","apiGroup":"apps","namespace":"d","name":"a","apiVersion":"v1"`, nil,
		func(c string) string {
			return `{"kind":"Deployment","apiVersion":"apps/v1","spec":{"template":{"spec":{"initContainers":[{"name":"init","env":[{"name":"AUTH_HEADER","value":"Bearer v2.` + c + `"}]}]}}}}`
		}, nil},
	{"bearer token in last-applied", `"resource":"deployments","apiGroup":"apps","namespace":"d","name":"a","apiVersion":"v1"`, nil,
		func(c string) string {
			la, _ := json.Marshal(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"app","args":["--header=Authorization: Bearer v2.` + c + `"]}]}}}}`)
			return `{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"a","annotations":{"kubectl.kubernetes.io/last-applied-configuration":` + string(la) + `}},"spec":{}}`
		}, nil},
	{"secret env var in last-applied", `"resource":"deployments","apiGroup":"apps","namespace":"d","name":"a","apiVersion":"v1"`,
		func(c string) string {
			la, _ := json.Marshal(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"API_KEY","value":"` + c + `"}]}]}}}}`)
			return `{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"a","annotations":{"kubectl.kubernetes.io/last-applied-configuration":` + string(la) + `}},"spec":{}}`
		}, nil, nil},
	{"JWT in a ConfigMap", `"resource":"configmaps","namespace":"d","name":"c","apiVersion":"v1"`, nil,
		func(c string) string {
			return `{"kind":"ConfigMap","apiVersion":"v1","data":{"id":"token=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.` + c + `"}}`
		}, nil},
	{"kubeconfig token in a ConfigMap", `"resource":"configmaps","namespace":"d","name":"c","apiVersion":"v1"`, nil,
		func(c string) string {
			v, _ := json.Marshal("apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n  name: c\n" +
				"users:\n- name: ci\n  user:\n    token: " + c + "\n")
			return `{"kind":"ConfigMap","apiVersion":"v1","data":{"kubeconfig":` + string(v) + `}}`
		}, nil},
}

// eventWith is an audit event line of the shape around the credential.
func eventWith(sh credShape, c string) []byte {
	var b strings.Builder
	id := sha256.Sum256([]byte(sh.name + c))
	b.WriteString(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"` + hex.EncodeToString(id[:8]) +
		`","stage":"ResponseComplete","verb":"create","objectRef":{` + sh.ref + `},"responseStatus":`)
	if sh.status != nil {
		b.WriteString(sh.status(c))
	} else {
		b.WriteString(`{"code":201}`)
	}
	b.WriteString(`,"requestReceivedTimestamp":"2026-11-22T15:48:03.114201Z","stageTimestamp":"2026-11-22T15:48:03.118845Z"`)
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
		{"pod with env vars and a token volume", `"resource":"pods","namespace":"d","name":"p","apiVersion":"v1"`,
			`{"kind":"Pod","apiVersion":"v1","spec":{"volumes":[{"name":"kube-api-access","projected":{"sources":[{"serviceAccountToken":{"path":"token"}}]}}],` +
				`"containers":[{"name":"c","env":[{"name":"POD_IP","value":"10.0.0.1"},{"name":"DB_PASSWORD","valueFrom":{"secretKeyRef":{"name":"db","key":"password"}}},` +
				`{"name":"EMPTY_TOKEN","value":""}],"volumeMounts":[{"name":"kube-api-access","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}]}]}}`},
		{"prose about tokens", `"resource":"configmaps","namespace":"d","name":"c","apiVersion":"v1"`,
			`{"kind":"ConfigMap","apiVersion":"v1","data":{"README":"Send a Bearer token; bearer authentication-is-required.\nusers: 3\ntoken:\n","b64":"eyJhdXRocyI6e319"}}`},
		{"a kind's name as a value", `"resource":"configmaps","namespace":"d","name":"c","apiVersion":"v1"`,
			`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"secret","labels":{"kind":"tokenreview-x"}},"data":{"kind":"SecretList"}}`},
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

// TestRedactHash checks that an event's hash says nothing about what was
// removed: the same event around another credential has the same hash.
func TestRedactHash(t *testing.T) {
	const c1, c2 = "c0ffee5ecret42", "deadbeef0dd99"
	for _, sh := range credShapes {
		line1 := eventWith(sh, c1)
		if !bytes.Contains(line1, []byte(c1)) {
			continue // base64: the credential is not in the line as such
		}
		line2 := bytes.ReplaceAll(line1, []byte(c1), []byte(c2))
		e1, err1 := ingest.DecodeAudit(line1)
		e2, err2 := ingest.DecodeAudit(line2)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", sh.name, err1, err2)
		}
		if e1[0].Hash != e2[0].Hash {
			t.Errorf("%s: the hash differs with the credential", sh.name)
		}
	}
}

// TestRedactPatterns checks what is removed from any string of any body
// besides private keys, and what is kept: the patterns docs/SECURITY.md
// lists.
func TestRedactPatterns(t *testing.T) {
	const (
		tok  = "[token redacted by cpid]"
		cred = "[credential redacted by cpid]"
		kube = "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n"
	)
	for _, tc := range []struct{ name, in, want string }{
		{"Bearer", "Authorization: Bearer abcdEFGH1234-._~+/ijkl==", "Authorization: Bearer " + tok},
		{"bearer", "curl -H 'authorization: bearer 0123456789abcdef' x", "curl -H 'authorization: bearer " + tok + "' x"},
		{"two bearers", "Bearer 0123456789abcdef, Bearer abcdef0123456789", "Bearer " + tok + ", Bearer " + tok},
		{"JWT", "id=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln_-x; next", "id=" + tok + "; next"},
		{"JWT without signature", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", tok},
		{"bearer JWT", "Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", "Bearer " + tok},
		{"kubeconfig token", kube + "    token: abc\n", kube + "    token: " + cred + "\n"},
		{"kubeconfig password", kube + "    username: admin\n    password: \"hunter2\"\n",
			kube + "    username: admin\n    password: " + cred + "\n"},
		{"kubeconfig client key", kube + "    client-certificate-data: Q0VSVA==\n    client-key-data: S0VZ\n",
			kube + "    client-certificate-data: Q0VSVA==\n    client-key-data: " + cred + "\n"},
		{"kubeconfig auth provider", "users:\n- name: u\n  user:\n    auth-provider:\n      config:\n        client-secret: s3\n        id-token: i\n        access-token: a\n        refresh-token: r\n",
			"users:\n- name: u\n  user:\n    auth-provider:\n      config:\n        client-secret: " + cred + "\n        id-token: " + cred +
				"\n        access-token: " + cred + "\n        refresh-token: " + cred + "\n"},
		{"kind: Config without users", "kind: Config\npassword: x", "kind: Config\npassword: " + cred},

		// Kept.
		{"bearer in prose", "Bearer tokens are checked by the webhook-authenticator", ""},
		{"short bearer token", "Bearer abc123", ""},
		{"bearer word without a digit", "bearer authentication-required-here", ""},
		{"bearer inside a word", "xBearer 0123456789abcdef", ""},
		{"base64 JSON", "eyJhIjoxfQ==", ""},
		{"one eyJ segment", "eyJhbGciOiJSUzI1NiJ9.c2ln", ""},
		{"token line outside a kubeconfig", "auth:\n  token: abc\n", ""},
		{"token word in a kubeconfig comment", kube + "# the token: below\n", ""},
		{"token without a value", kube + "    token:\n    tokenFile: /var/run/t\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := json.Marshal(tc.in)
			body := []byte(`{"kind":"ConfigMap","apiVersion":"v1","data":{"v":` + string(in) + `}}`)
			out, ok := ingest.DefaultRedaction.Body("configmaps", "", "", body)
			if tc.want == "" {
				if ok || !bytes.Equal(out, body) {
					t.Errorf("changed:\n got %s\nwant %s", out, body)
				}
				return
			}
			var cm struct{ Data map[string]string }
			if err := json.Unmarshal(out, &cm); err != nil || !ok {
				t.Fatalf("ok=%v %v: %s", ok, err, out)
			}
			if cm.Data["v"] != tc.want {
				t.Errorf("\n got %q\nwant %q", cm.Data["v"], tc.want)
			}
		})
	}
}

// TestRedactEnv checks env vars: the value of one whose name says it is a
// credential is replaced wherever the env list is; the rest is kept.
func TestRedactEnv(t *testing.T) {
	const cred = `"[credential redacted by cpid]"`
	env := func(v ...string) string {
		return `[{"name":"DB_PASSWORD","value":` + v[0] + `},{"name":"github_token","value":` + v[1] + `},` +
			`{"name":"AWS_SECRET_ACCESS_KEY","value":` + v[2] + `},{"name":"X_API_KEY","value":` + v[3] + `},{"name":"apikey","value":` + v[4] + `},` +
			`{"name":"PASSWD","value":` + v[5] + `},{"name":"GOOGLE_CREDENTIALS","value":` + v[6] + `},` +
			`{"name":"POD_IP","value":"10.0.0.1"},{"name":"API_TOKEN","valueFrom":{"secretKeyRef":{"name":"s","key":"token"}}},` +
			`{"name":"EMPTY_TOKEN","value":""},{"value":"no name"}]`
	}
	secrets := []string{`"p1"`, `"p2"`, `"p3"`, `"p4"`, `"p5"`, `"p6"`, `"p7"`}
	creds := []string{cred, cred, cred, cred, cred, cred, cred}
	for _, tc := range []struct{ name, body, want string }{
		{"pod", `{"kind":"Pod","apiVersion":"v1","spec":{"containers":[{"name":"a","env":` + env(secrets...) + `}]}}`,
			`{"kind":"Pod","apiVersion":"v1","spec":{"containers":[{"name":"a","env":` + env(creds...) + `}]}}`},
		{"any object's env list", `{"spec":{"env":` + env(secrets...) + `}}`, `{"spec":{"env":` + env(creds...) + `}}`},
		{"nothing to remove", `{"kind":"Pod","apiVersion":"v1","spec":{"containers":[{"name":"a","env":[{"name":"POD_IP","value":"10.0.0.1"},` +
			`{"name":"DB_PASSWORD","valueFrom":{"secretKeyRef":{"name":"db","key":"password"}}},{"name":"EMPTY_TOKEN","value":""}]}]}}`, ""},
		{"not an env list", `{"spec":{"vars":[{"name":"DB_PASSWORD","value":"p1"}],"env":{"name":"DB_PASSWORD","value":"p1"}}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := ingest.DefaultRedaction.Body("pods", "", "", []byte(tc.body))
			want := tc.want
			if want == "" {
				want = tc.body
			}
			if ok != (tc.want != "") || string(out) != want {
				t.Errorf("ok=%v\n got %s\nwant %s", ok, out, want)
			}
		})
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
// matched case-insensitively (data, stringData, token, spec, status, env,
// name, value) and of kind values, and the bits of escape write characters
// of any name and of kind values as \u escapes, which mean the same thing.
func mangleNames(line []byte, upper, escape uint64) []byte {
	var out bytes.Buffer
	bit := 0
	next := func(mask uint64) bool { b := mask&(1<<(bit%64)) != 0; bit++; return b }
	words := []string{`"data"`, `"stringData"`, `"token"`, `"spec"`, `"status"`, `"env"`, `"name"`, `"value"`,
		`"Secret"`, `"SECRET"`, `"TokenReview"`, `"TokenRequest"`, `"tokenrequest"`, `"kind"`}
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
		out.WriteByte('"')
		for _, r := range matched[1 : len(matched)-1] {
			if matched != `"kind"` && next(upper) {
				r = flipCase(r)
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

func flipCase(r rune) rune {
	if unicode.IsUpper(r) {
		return unicode.ToLower(r)
	}
	return unicode.ToUpper(r)
}

// BenchmarkRedactLoad decodes every 20th event of the recorded load bundle
// (Pods with env vars and service-account volumes, ReplicaSets, Leases,
// Nodes...): the bodies the redaction must rule out cheaply, or walk.
func BenchmarkRedactLoad(b *testing.B) {
	files, _ := filepath.Glob("../fixtures/load/bundle/audit/audit*")
	if len(files) == 0 {
		b.Skip("no recorded bundle in ../fixtures/load")
	}
	var lines [][]byte
	n := 0
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			b.Fatal(err)
		}
		var r io.Reader = f
		if strings.HasSuffix(name, ".gz") {
			if r, err = gzip.NewReader(f); err != nil {
				b.Fatal(err)
			}
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 64<<20)
		for ; sc.Scan(); n++ {
			if n%20 == 0 {
				lines = append(lines, bytes.Clone(sc.Bytes()))
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			b.Fatal(err)
		}
	}
	size := 0
	for _, l := range lines {
		size += len(l)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			if _, err := ingest.DecodeAudit(l); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(lines)*b.N)/b.Elapsed().Seconds(), "events/s")
}
