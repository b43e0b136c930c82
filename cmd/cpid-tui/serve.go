package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

func init() {
	register(command{name: "serve", summary: "receive kube-apiserver's audit webhook (batch mode) into the database", run: runServe})
}

func runServe(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "serve", "[--db cpid.db] --listen ADDR --tls-cert FILE --tls-key FILE [--client-ca FILE] [--token-file FILE]", strings.TrimSpace(`
Receives the audit events that kube-apiserver posts to its audit webhook
backend (--audit-webhook-config-file, batch mode: audit.k8s.io/v1
EventList) and stores them as 'cpid-tui ingest' would.

Each batch is committed before the response: a 2xx means stored, and a
batch posted again is skipped as duplicates, so each event is stored once.
kube-apiserver retries a failed post (refused connection, reset, timeout,
any non-2xx answer) only within its backoff (--audit-webhook-initial-backoff,
10s by default, x1.5, 5 attempts: about 80 s), then drops the batch; a full
buffer drops events too. For a history with no gap, also tail the audit log
file into the same database (cpid-tui tail --audit-log): its events collapse
with the webhook's (docs/LIVE.md).

Authentication: --client-ca verifies client certificates, --token-file
accepts "Authorization: Bearer TOKEN"; with either set, a request must pass
one of them (401 otherwise). Without --tls-cert the listener is plain HTTP
(for tests; the apiserver's kubeconfig may use http://).

/metrics (same listener and authentication) gives the counters and the lag
histogram in the Prometheus text format. The webhook kubeconfig to give
kube-apiserver is in docs/LIVE.md.

Example:
  cpid-tui serve --db cpid.db --listen :9443 --tls-cert tls.crt --tls-key tls.key --client-ca ca.crt`))
	var db string
	dbFlag(fs, &db)
	listen := fs.String("listen", "127.0.0.1:9443", "address to listen on")
	cert := fs.String("tls-cert", "", "server certificate (PEM); without it, plain HTTP")
	key := fs.String("tls-key", "", "server private key (PEM)")
	clientCA := fs.String("client-ca", "", "CA bundle (PEM) that verifies client certificates")
	tokenFile := fs.String("token-file", "", "file holding the bearer token a client may send instead of a certificate")
	maxBody := fs.Int64("max-body", 64<<20, "largest request body accepted, in bytes (413 beyond)")
	every := fs.Duration("reconstruct-every", 10*time.Second, "bring the derived tables up to date this often (0: never)")
	redaction := redactFlag(fs)
	cluster := clusterFlag(fs, defaultCluster)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 || (*cert == "") != (*key == "") || (*clientCA != "" && *cert == "") {
		switch {
		case (*cert == "") != (*key == ""):
			fmt.Fprintln(e.stderr, "cpid-tui serve: --tls-cert and --tls-key go together")
		case *clientCA != "" && *cert == "":
			fmt.Fprintln(e.stderr, "cpid-tui serve: --client-ca needs TLS (--tls-cert, --tls-key)")
		}
		fs.Usage()
		return errUsage
	}
	var tlsConf *tls.Config
	if *cert != "" {
		pair, err := tls.LoadX509KeyPair(*cert, *key)
		if err != nil {
			return fmt.Errorf("load TLS key pair: %w", err)
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
		if *clientCA != "" {
			pem, err := os.ReadFile(*clientCA)
			if err != nil {
				return fmt.Errorf("read client CA: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return fmt.Errorf("client CA %s: no PEM certificate", *clientCA)
			}
			tlsConf.ClientCAs = pool
			tlsConf.ClientAuth = tls.VerifyClientCertIfGiven
		}
	}
	var token string
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return fmt.Errorf("read token file: %w", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return fmt.Errorf("token file %s is empty", *tokenFile)
		}
	}
	db0, err := openDatabase(ctx, db)
	if err != nil {
		return err
	}
	defer db0.close()
	st := db0.view(*cluster)

	var mu sync.Mutex
	notice := func(n ingest.Notice) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(e.stderr, "serve: %s\n", n)
	}
	m := &ingest.Metrics{}
	rc := &ingest.Receiver{Sink: st, Token: token, ClientCerts: *clientCA != "", MaxBody: *maxBody, Metrics: m, Notice: notice,
		Redaction: redaction()}
	mux := http.NewServeMux()
	mux.Handle("/metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !rc.Authenticated(r) {
			http.Error(w, "unauthenticated", http.StatusUnauthorized)
			return
		}
		metricsHandler(m, "cpid_webhook").ServeHTTP(w, r)
	}))
	mux.Handle("/", rc)
	if token == "" && *clientCA == "" {
		notice(ingest.Notice{Name: *listen, Reason: "no --client-ca or --token-file: anyone who reaches this address can write audit events"})
	}

	g, ctx := errgroup.WithContext(ctx)
	var wrap func(net.Listener) net.Listener
	if tlsConf != nil {
		wrap = func(ln net.Listener) net.Listener { return tls.NewListener(ln, tlsConf) }
	}
	if err := serveUntil(ctx, g, *listen, mux, wrap); err != nil {
		return err
	}
	notice(ingest.Notice{Name: *listen, Reason: "listening"})
	if *every > 0 {
		g.Go(func() error { return reconstructEvery(ctx, st, *every, notice) })
	}
	err = g.Wait()
	fmt.Fprintf(e.stderr, "serve: stopped: %d events received, %d stored, %d duplicates, %d batches, %d requests rejected\n",
		m.Lines.Load(), m.Audits.Load(), m.Dups.Load(), m.Batches.Load(), m.Rejected.Load())
	return err
}

// reconstructEvery brings the derived tables up to date every interval
// until ctx ends. A failed run is reported, and the next one tries again.
func reconstructEvery(ctx context.Context, st cpid.DerivedStore, every time.Duration, notice func(ingest.Notice)) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := reconstruct.Run(ctx, st, runOptions(false, reconstruct.LiveStepRows)); err != nil && ctx.Err() == nil {
				notice(ingest.Notice{Name: "reconstruct", Reason: err.Error()})
			}
		}
	}
}
