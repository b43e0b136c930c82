package ingest_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/sqlite"
)

// eventList wraps audit lines into the EventList the webhook posts.
func eventList(t *testing.T, from, to int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[`)
	for i := from; i < to; i++ {
		if i > from {
			b.WriteByte(',')
		}
		b.Write(bytes.TrimSpace(auditLine(t, i)))
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

func TestReceiver(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cpid.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := &ingest.Metrics{}
	rc := &ingest.Receiver{Sink: st, Token: "s3cret", ClientCerts: true, MaxBody: 256 << 10, Metrics: m}
	pool, server, client := testPKI(t)
	srv := httptest.NewUnstartedServer(rc)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{server}, ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}
	srv.StartTLS()
	defer srv.Close()
	withCert := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{client}}}}
	plain := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	tooBig := eventList(t, 1000, 1400)
	for _, c := range []struct {
		name   string
		client *http.Client
		method string
		token  string
		body   []byte
		want   int
		stored int // events stored after the request
	}{
		{"no credentials", plain, "POST", "", eventList(t, 0, 3), 401, 0},
		{"wrong token", plain, "POST", "nope", eventList(t, 0, 3), 401, 0},
		{"bearer token", plain, "POST", "s3cret", eventList(t, 0, 3), 200, 3},
		{"retry of a stored batch", plain, "POST", "s3cret", eventList(t, 0, 3), 200, 3},
		{"client certificate", withCert, "POST", "", eventList(t, 3, 10), 200, 10},
		{"GET", withCert, "GET", "", nil, 405, 10},
		{"not an EventList", withCert, "POST", "", []byte(`{"kind":"Pod"}`), 400, 10},
		{"body over the limit", withCert, "POST", "", tooBig, 413, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, srv.URL+"/audit", bytes.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			resp, err := c.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("status %d, want %d", resp.StatusCode, c.want)
			}
			if n := storedEvents(t, st); n != c.stored {
				t.Errorf("%d events stored, want %d", n, c.stored)
			}
		})
	}
	var text strings.Builder
	m.WriteText(&text, "cpid_webhook")
	for _, want := range []string{"cpid_webhook_audit_events_total 10", "cpid_webhook_duplicates_total 3",
		"cpid_webhook_rejected_total 5", "cpid_webhook_lag_seconds_count 13"} {
		if !strings.Contains(text.String(), want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, text.String())
		}
	}

	// A store that fails gets a 5xx, so that the apiserver retries.
	st.Close()
	req, _ := http.NewRequest("POST", srv.URL, bytes.NewReader(eventList(t, 20, 21)))
	resp, err := withCert.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 500 {
		t.Errorf("status %d with a closed store, want 500", resp.StatusCode)
	}
}

func storedEvents(t *testing.T, st *sqlite.Store) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+st.Path()+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM audit_events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// testPKI returns a CA pool, a server certificate for 127.0.0.1 and a client
// certificate, both signed by the CA.
func testPKI(t *testing.T) (*x509.CertPool, tls.Certificate, tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	issue := func(serial int64, usage x509.ExtKeyUsage) tls.Certificate {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "x"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	return pool, issue(2, x509.ExtKeyUsageServerAuth), issue(3, x509.ExtKeyUsageClientAuth)
}

// TestReceiverRedacts posts every credential shape as the webhook does and
// looks for the credentials in the database files.
func TestReceiverRedacts(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "cpid.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewServer(&ingest.Receiver{Sink: st})
	defer srv.Close()
	var list bytes.Buffer
	list.WriteString(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[`)
	for i, sh := range credShapes {
		if i > 0 {
			list.WriteByte(',')
		}
		list.Write(eventWith(sh, credMarker))
	}
	list.WriteString("]}")
	resp, err := http.Post(srv.URL, "application/json", &list)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || storedEvents(t, st) != len(credShapes) {
		t.Fatalf("status %d, %d events stored, want 200 and %d", resp.StatusCode, storedEvents(t, st), len(credShapes))
	}
	for _, name := range []string{"cpid.db", "cpid.db-wal"} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		if bytes.Contains(b, []byte(credMarker)) {
			t.Errorf("credential found in %s", name)
		}
	}
}
