package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/postgres/pgtest"
)

// get sends a request without a body and returns its status and body.
func get(t *testing.T, c *http.Client, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeProbes: serve as deploy/ runs it (TLS, --client-ca, --allow-cn)
// answers the kubelet's probes, which carry no client certificate, and
// nothing else without one: /healthz and /readyz 200, /metrics and a post
// to any path (/healthz included) 401, nothing stored.
func TestServeProbes(t *testing.T) {
	t.Parallel()
	p := newPKI(t, t.TempDir())
	addr, db, _ := startServe(t, "--tls-cert", p.serverCert, "--tls-key", p.serverKey, "--client-ca", p.ca, "--allow-cn", "kube-apiserver")
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(p.ca)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(caPEM)
	anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer anonymous.CloseIdleConnections()
	pair, err := tls.LoadX509KeyPair(p.clientCert, p.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	apiserver := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}}}
	defer apiserver.CloseIdleConnections()
	base := "https://" + addr

	for _, tc := range []struct {
		name         string
		client       *http.Client
		method, path string
		code         int
		body         string
	}{
		{"healthz", anonymous, "GET", "/healthz", 200, "ok\n"},
		{"healthz HEAD", anonymous, "HEAD", "/healthz", 200, ""},
		{"readyz", anonymous, "GET", "/readyz", 200, "ok\n"},
		{"metrics without a certificate", anonymous, "GET", "/metrics", 401, ""},
		{"metrics with the apiserver's", apiserver, "GET", "/metrics", 200, ""},
		{"readyz with a certificate", apiserver, "GET", "/readyz", 200, "ok\n"},
	} {
		code, body := get(t, tc.client, tc.method, base+tc.path)
		if code != tc.code || (tc.body != "" && body != tc.body) {
			t.Errorf("%s: %s %s: %d %q, want %d %q", tc.name, tc.method, tc.path, code, body, tc.code, tc.body)
		}
	}
	for _, path := range []string{"/healthz", "/readyz", "/"} {
		if code, _, msg := post(t, anonymous, base+path, "application/json", bytes.NewReader(eventList(goodEvents(t, 0, 1)...))); code != 401 {
			t.Errorf("POST %s without a certificate: %d %q, want 401", path, code, msg)
		}
	}
	if _, rows, _, _, _ := storedIDs(t, db); rows != 0 {
		t.Errorf("%d events stored by unauthenticated posts, want 0", rows)
	}
	// The webhook still takes any path, /healthz too, from the apiserver.
	if code, _, msg := post(t, apiserver, base+"/healthz", "application/json", bytes.NewReader(eventList(goodEvents(t, 0, 2)...))); code != 200 {
		t.Errorf("POST /healthz with the apiserver's certificate: %d %q, want 200", code, msg)
	}
	if _, rows, _, _, _ := storedIDs(t, db); rows != 2 {
		t.Errorf("%d events stored, want 2", rows)
	}
}

// TestServeReadyzPostgres: /readyz follows the database. With the
// PostgreSQL server killed it answers 503 without saying where the
// database is (the reason goes to stderr, once), and 200 again once the
// server is back; /healthz stays 200 throughout.
func TestServeReadyzPostgres(t *testing.T) {
	t.Parallel()
	srv := pgtest.StartTest(t) // its own server, which it kills
	dsn, err := srv.CreateDatabase(context.Background(), "cpid")
	if err != nil {
		t.Fatal(err)
	}
	addr, _, stderr := startServe(t, "--db", dsn)
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	base := "http://" + addr
	if code, body := get(t, c, "GET", base+"/readyz"); code != 200 {
		t.Fatalf("readyz, the server up: %d %q, want 200", code, body)
	}

	srv.Kill()
	for range 3 {
		code, body := get(t, c, "GET", base+"/readyz")
		if code != 503 || body != "not ready: the database does not answer\n" {
			t.Errorf("readyz, the server killed: %d %q, want 503 and no detail", code, body)
		}
		if code, _ := get(t, c, "GET", base+"/healthz"); code != 200 {
			t.Errorf("healthz, the server killed: %d, want 200", code)
		}
	}
	if n := strings.Count(stderr.String(), "readyz: not ready: the database does not answer"); n != 1 {
		t.Errorf("the failure said %d times on stderr, want once:\n%s", n, stderr.String())
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "readyz 200 with the server back", func() bool {
		code, _ := get(t, c, "GET", base+"/readyz")
		return code == 200
	})
	if !strings.Contains(stderr.String(), "readyz: ready: the database answers again") {
		t.Errorf("the recovery not said on stderr:\n%s", stderr.String())
	}
}
