package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/plugin/pkg/audit/buffered"
	"k8s.io/apiserver/plugin/pkg/audit/webhook"
)

// pki is a CA with a server certificate for 127.0.0.1 and a client
// certificate, written as PEM files in dir.
type pki struct{ ca, serverCert, serverKey, clientCert, clientKey string }

func newPKI(t *testing.T, dir string) pki {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cpid test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, _ := x509.MarshalECPrivateKey(key)
		c, k := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
		os.WriteFile(c, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
		os.WriteFile(k, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
		return c, k
	}
	p := pki{ca: filepath.Join(dir, "ca.crt")}
	os.WriteFile(p.ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600)
	p.serverCert, p.serverKey = issue("server", 2, x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = issue("kube-apiserver", 3, x509.ExtKeyUsageClientAuth)
	return p
}

// webhookKubeconfig is the file given to kube-apiserver's
// --audit-webhook-config-file (docs/LIVE.md shows the same).
const webhookKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: cpid
  cluster:
    server: https://%s/audit
    certificate-authority: %s
users:
- name: kube-apiserver
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: default
  context: {cluster: cpid, user: kube-apiserver}
current-context: default
`

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitTLS polls until addr accepts a TLS handshake.
func waitTLS(t *testing.T, addr string, conf *tls.Config) {
	t.Helper()
	var err error
	waitUntil(t, "serve to listen on "+addr, func() bool {
		var c *tls.Conn
		if c, err = tls.Dial("tcp", addr, conf); err == nil {
			c.Close()
		}
		return err == nil
	}, func() string { return err.Error() })
}

// dropCounter is the webhook backend, recording the auditIDs of the
// batches it gave up on: the apiserver retries a failed post (any error)
// only within its backoff, then drops the batch (and logs it).
type dropCounter struct {
	audit.Backend
	mu      sync.Mutex
	dropped map[string]bool
	batches int
}

func (d *dropCounter) ProcessEvents(ev ...*auditinternal.Event) bool {
	ok := d.Backend.ProcessEvents(ev...)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.batches++
	if !ok {
		for _, e := range ev {
			d.dropped[string(e.AuditID)] = true
		}
	}
	return ok
}

// TestServeWebhookTorture: the real audit webhook backend of
// k8s.io/apiserver (batch mode: buffered + webhook, as kube-apiserver runs
// it) posts real-shaped events over loopback TLS with a client certificate
// to `serve`, which is SIGKILLed and restarted mid-stream. Every event of a
// batch the sender did not give up on must be stored exactly once (a 2xx
// means committed, and a retried batch is collapsed); an event of a batch
// it gave up on, at most once. The sender says which batches it dropped,
// so the test does not depend on how fast serve comes back.
func TestServeWebhookTorture(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := newPKI(t, dir)
	db := filepath.Join(dir, "cpid.db")
	addr := freeAddr(t)
	kubeconfig := filepath.Join(dir, "webhook.kubeconfig")
	os.WriteFile(kubeconfig, fmt.Appendf(nil, webhookKubeconfig, addr, p.ca, p.clientCert, p.clientKey), 0o600)
	serveArgs := []string{"serve", "--db", db, "--listen", addr, "--tls-cert", p.serverCert, "--tls-key", p.serverKey,
		"--client-ca", p.ca, "--reconstruct-every", "0"}
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(p.ca)
	pool.AppendCertsFromPEM(caPEM)
	probe := &tls.Config{RootCAs: pool}

	// runServe starts serve; exited is closed once it ended, its error
	// then in *werr.
	runServe := func() (srv proc, exited chan struct{}, werr *error) {
		srv, exited, werr = helper(t, "cpid-tui", serveArgs...), make(chan struct{}), new(error)
		go func() { *werr = srv.Wait(); close(exited) }()
		return srv, exited, werr
	}
	srv, exited, werr := runServe()
	waitTLS(t, addr, probe)

	// The events: the fixture's audit events with fresh auditIDs.
	const n = 6000
	var events []*auditinternal.Event
	err := tortureLines(n, func(i int, l []byte) error {
		var v1 auditv1.Event
		if err := json.Unmarshal(l, &v1); err != nil {
			return err
		}
		var ev auditinternal.Event
		if err := audit.Scheme.Convert(&v1, &ev, nil); err != nil {
			return err
		}
		ev.AuditID = types.UID(tortureID(i))
		events = append(events, &ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// The apiserver's backoff (DefaultRetryBackoffWithInitialDelay) with a
	// shorter first delay and more steps: about 5 s of retries. (A Cap
	// would end the retries as soon as it is reached: wait.Backoff sets
	// Steps to zero there.)
	backoff := wait.Backoff{Duration: 20 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 12}
	wb, err := webhook.NewBackend(kubeconfig, auditv1.SchemeGroupVersion, backoff, nil)
	if err != nil {
		t.Fatal(err)
	}
	sender := &dropCounter{Backend: wb, dropped: map[string]bool{}}
	backend := buffered.NewBackend(sender, buffered.BatchConfig{BufferSize: n, MaxBatchSize: 100,
		MaxBatchWait: 10 * time.Millisecond, AsyncDelegate: true})
	stop := make(chan struct{})
	if err := backend.Run(stop); err != nil {
		t.Fatal(err)
	}

	// Kill and restart serve at random moments while the events flow,
	// each once serve listens (it says so): counted from its start, the
	// moment came, on a loaded machine, mostly before it listened, and the
	// sender gave up on most batches. The moments are random (the seed is
	// logged): they pace the test and decide nothing.
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill moments: seed %d", seed)
	rng := mrand.New(mrand.NewPCG(seed, 7))
	var mu sync.Mutex
	sent := 0
	killerDone := make(chan int)
	go func() {
		kills := 0
		for {
			for !strings.Contains(srv.stderr.String(), "listening") {
				select {
				case <-srv.stderr.woken():
				case <-exited:
					t.Errorf("serve exited before listening: %v\n%s", *werr, tail(srv.stderr.String(), 2048))
					killerDone <- kills
					return
				}
			}
			<-time.After(time.Duration(rng.IntN(300)) * time.Millisecond)
			mu.Lock()
			done := sent == n
			mu.Unlock()
			if done && kills >= 3 {
				killerDone <- kills
				return
			}
			srv.Process.Signal(syscall.SIGKILL)
			<-exited
			kills++
			srv, exited, werr = runServe()
		}
	}()
	// About 3,000 events/s, in the apiserver's pattern of many small calls.
	tick := time.NewTicker(time.Millisecond)
	for i := 0; i < n; i += 3 {
		<-tick.C
		if !backend.ProcessEvents(events[i:min(i+3, n)]...) {
			t.Fatalf("the buffered backend dropped events at %d", i)
		}
		mu.Lock()
		sent = min(i+3, n)
		mu.Unlock()
	}
	tick.Stop()
	kills := <-killerDone
	waitTLS(t, addr, probe)
	close(stop)
	flushed := make(chan struct{})
	go func() { backend.Shutdown(); close(flushed) }()
	waitOn(t, "the webhook backend to deliver its batches", func() bool {
		select {
		case <-flushed:
			return true
		default:
			return false
		}
	}, func() <-chan struct{} { return flushed }, nil)
	srv.Process.Signal(syscall.SIGTERM)
	if <-exited; *werr != nil {
		t.Errorf("serve after SIGTERM: %v", *werr)
	}

	ids, rows, _, _, _ := storedIDs(t, db)
	var missing, twice []string
	lostWithDrop := 0
	for i := 0; i < n; i++ {
		id := tortureID(i)
		switch c := ids[id]; {
		case c > 1:
			twice = append(twice, strconv.Itoa(i))
		case c == 0 && sender.dropped[id]:
			lostWithDrop++
		case c == 0:
			missing = append(missing, strconv.Itoa(i))
		}
	}
	t.Logf("serve SIGKILLed %d times; %d events stored; the sender posted %d batches and gave up on %d events (%d of them not stored)",
		kills, rows, sender.batches, len(sender.dropped), lostWithDrop)
	if len(missing) > 0 || len(twice) > 0 {
		t.Errorf("%d rows for %d events: %d missing that the sender did not drop %v, %d more than once %v",
			rows, n, len(missing), first(missing, 20), len(twice), first(twice, 20))
	}
	if len(sender.dropped) == n {
		t.Error("the sender dropped every batch")
	}
}
