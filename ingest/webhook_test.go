package ingest_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/sqlite"
)

// eventList wraps audit lines from to to-1, and the extra items, into the
// EventList the webhook posts.
func eventList(t *testing.T, from, to int, extra ...string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[`)
	for i := from; i < to; i++ {
		if i > from {
			b.WriteByte(',')
		}
		b.Write(bytes.TrimSpace(auditLine(t, i)))
	}
	for i, x := range extra {
		if i > 0 || to > from {
			b.WriteByte(',')
		}
		b.WriteString(x)
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

// TestReceiver posts over loopback TLS as the apiserver does: each way to
// authenticate, a retried batch, a bad event, and each rejection.
func TestReceiver(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cpid.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := &ingest.Metrics{}
	var notices []string
	var mu sync.Mutex
	rc := &ingest.Receiver{Sink: st, Token: "s3cret", ClientCerts: true, AllowCN: []string{"x"}, MaxBody: 256 << 10, Metrics: m,
		Notice: func(n ingest.Notice) { mu.Lock(); notices = append(notices, n.String()); mu.Unlock() }}
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
		ct     string
		token  string
		body   []byte
		want   int
		stored int // events stored after the request
	}{
		{"no credentials", plain, "POST", "application/json", "", eventList(t, 0, 3), 401, 0},
		{"wrong token", plain, "POST", "application/json", "nope", eventList(t, 0, 3), 401, 0},
		{"bearer token", plain, "POST", "application/json", "s3cret", eventList(t, 0, 3), 200, 3},
		{"retry of a stored batch", plain, "POST", "application/json", "s3cret", eventList(t, 0, 3), 200, 3},
		{"client certificate", withCert, "POST", "application/json", "", eventList(t, 3, 10), 200, 10},
		{"GET", withCert, "GET", "", "", nil, 405, 10},
		{"not JSON", withCert, "POST", "text/plain", "", eventList(t, 10, 12), 415, 10},
		{"not an EventList", withCert, "POST", "application/json", "", []byte(`{"kind":"Pod"}`), 400, 10},
		{"body over the limit", withCert, "POST", "application/json", "", tooBig, 413, 10},
		{"a bad event", withCert, "POST", "application/json", "", eventList(t, 20, 22, `{"auditID":5}`), 200, 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, srv.URL+"/audit", bytes.NewReader(c.body))
			if c.ct != "" {
				req.Header.Set("Content-Type", c.ct)
			}
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
	rc.WriteText(&text, "cpid_webhook")
	for _, want := range []string{"cpid_webhook_audit_events_total 12", "cpid_webhook_duplicates_total 3",
		"cpid_webhook_rejected_total 6", "cpid_webhook_lag_seconds_count 15", "cpid_webhook_lines_total 16",
		"cpid_webhook_bad_lines_total 2", "cpid_webhook_body_bytes 0", "cpid_webhook_body_budget_bytes 524288"} {
		if !strings.Contains(text.String(), want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, text.String())
		}
	}
	mu.Lock()
	if all := strings.Join(notices, "\n"); !strings.Contains(all, "skipped event 2 of the batch") {
		t.Errorf("the bad event is not reported:\n%s", all)
	}
	mu.Unlock()

	// A store that fails gets a 5xx, so that the apiserver retries.
	st.Close()
	req, _ := http.NewRequest("POST", srv.URL, bytes.NewReader(eventList(t, 30, 31)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := withCert.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 500 {
		t.Errorf("status %d with a closed store, want 500", resp.StatusCode)
	}
}

// TestReceiverAuthScheme: the scheme of an Authorization header is
// case-insensitive (RFC 7235, section 2.1), its token is not. Before, only
// "Bearer" authenticated: "bearer TOKEN" got 401.
func TestReceiverAuthScheme(t *testing.T) {
	rc := &ingest.Receiver{Token: "s3cret"}
	for _, c := range []struct {
		header string
		want   bool
	}{
		{"Bearer s3cret", true},
		{"bearer s3cret", true},
		{"BEARER s3cret", true},
		{"bEaReR s3cret", true},
		{"Bearer   s3cret", true},
		{"Bearer S3CRET", false},
		{"Bearer s3cre", false},
		{"Basic s3cret", false},
		{"Bearers3cret", false},
		{"Bearer", false},
		{"s3cret", false},
		{"", false},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		if got := rc.Authenticated(r); got != c.want {
			t.Errorf("Authorization %q: authenticated %v, want %v", c.header, got, c.want)
		}
	}
}

// gatedSink holds each Write of a real store until release is closed.
type gatedSink struct {
	cpid.RecordWriter
	entered, release chan struct{}
	once             sync.Once
}

func (g *gatedSink) Write(ctx context.Context, b *cpid.Batch) (cpid.Written, error) {
	g.once.Do(func() { close(g.entered) })
	<-g.release
	return g.RecordWriter.Write(ctx, b)
}

// TestReceiverDrain: a server shutting down with Drain does not wait for a
// body that stopped coming (the read timeout is an hour): it answers 503
// with Retry-After at once, while a batch read whole is still stored and
// answered 200 before Shutdown returns.
func TestReceiverDrain(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cpid.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sink := &gatedSink{RecordWriter: st, entered: make(chan struct{}), release: make(chan struct{})}
	rc := &ingest.Receiver{Sink: sink}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rc, ReadTimeout: time.Hour, ConnState: rc.ConnState}
	srv.RegisterOnShutdown(rc.Drain)
	go srv.Serve(ln)
	addr := ln.Addr().String()

	// A batch read whole, its commit held.
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	stored := make(chan int, 1)
	go func() {
		resp, err := client.Post("http://"+addr+"/", "application/json", bytes.NewReader(eventList(t, 0, 3)))
		if err != nil {
			stored <- 0
			return
		}
		resp.Body.Close()
		stored <- resp.StatusCode
	}()
	<-sink.entered

	// A body that stopped coming: its handler is reading it once serve
	// answers 100 Continue.
	stalled, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	stalled.SetReadDeadline(time.Now().Add(30 * time.Second)) // a failure, not the test's timeout
	fmt.Fprintf(stalled, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n")
	r := bufio.NewReader(stalled)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("want 100 Continue, got %q, %v", line, err)
	}
	r.ReadString('\n')

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx) }()
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("the stalled body: %v %v; want 503 with Retry-After", resp, err)
	}
	if b, err := io.ReadAll(stalled); err != nil || len(b) > 0 {
		t.Errorf("after the 503: read %q, %v; want the connection closed", b, err)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a batch was being stored", err)
	default:
	}

	close(sink.release)
	if code := <-stored; code != 200 {
		t.Errorf("the batch being stored: status %d, want 200", code)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if n := storedEvents(t, st); n != 3 {
		t.Errorf("%d events stored, want 3", n)
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
