package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/spf13/cobra"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

func init() {
	register(command{name: "serve", use: "--listen ADDR --tls-cert FILE --tls-key FILE [--client-ca FILE [--allow-cn NAME]...] [--token-file FILE]",
		group: "live", summary: "receive kube-apiserver's audit webhook (batch mode) into the database", help: serveHelp, setup: setupServe})
}

const serveHelp = `
Receives the audit events that kube-apiserver posts to its audit webhook
backend (--audit-webhook-config-file, batch mode: audit.k8s.io/v1
EventList) and stores them as 'cpid-tui ingest' would.

Each batch is committed before the response: a 2xx means stored, and a
batch posted again is skipped as duplicates, so each event is stored once.
A bad event in a batch (invalid JSON inside it, nested too deep, a field of
the wrong type) is skipped, counted in cpid_webhook_bad_lines_total and
reported with its index; the others are stored and the answer is 2xx. Only
a body that is not an EventList at all gets 400.

What kube-apiserver (k8s.io/apiserver 0.37) does when a post fails: it
retries every failure (refused connection, TLS error, reset, its 30 s
timeout, any status outside 200-206, 400 and 401 included) with its
backoff: 5 attempts, waiting --audit-webhook-initial-backoff (10s by
default) before the second and 1.5 times longer before each next one, each
wait up to 20% longer: 81-98 s in all. Then it drops the batch (logged,
counted in apiserver_audit_error_total). Within one attempt, client-go posts
again after an answer 429 or 5xx with Retry-After, waiting that many
seconds, up to 10 times within the attempt's 30 s. A full buffer
(--audit-webhook-batch-buffer-size) drops events without a post, and a
kube-apiserver that dies loses the events it buffered. So the webhook alone
loses batches when serve is down or failing for longer than the backoff.
For a history with no gap, keep the audit log and tail it into the same
database (cpid-tui tail --audit-log): its events and the webhook's
collapse into one row each (docs/LIVE.md).

Authentication: --client-ca verifies client certificates (only those whose
subject CN is given by --allow-cn, when given), --token-file accepts
"Authorization: Bearer TOKEN"; with either set, a request must pass one of
them (401 otherwise). Without --tls-cert the listener is plain HTTP.
serve refuses to listen on an address other than loopback (127.0.0.1, ::1,
localhost) without TLS and authentication, unless --insecure is given.

Limits: a body larger than --max-body gets 413; the bodies being read and
stored at once hold at most --body-budget bytes, and a request beyond it
gets 503 with Retry-After: 1, which kube-apiserver retries. A request must
be read within --read-timeout, and an idle keep-alive connection is closed
after --idle-timeout. Beyond --max-conns open connections, a new one closes
the one that has waited longest without completing a request (stalled in
its headers or body, or idle), so that stalled connections cannot lock
senders out; only when every open one is handling a request read whole is
the new one closed at once (docs/SECURITY.md).

On SIGTERM or SIGINT serve stops accepting, ends every read at once (a body
still coming gets 503 with Retry-After: the batch was not acknowledged, and
kube-apiserver posts it again), stores and answers the batches read whole,
waiting at most 30 s for them, and exits 0.

/metrics (same listener and authentication) gives the counters and the lag
histogram in the Prometheus text format. GET /healthz answers 200 while
serve runs, GET /readyz 200 when the database answers a query (503
otherwise): both without authentication, for the kubelet's probes, and
saying nothing but ok or not. The webhook kubeconfig to give kube-apiserver
is in docs/LIVE.md; deploy/ runs serve in a cluster (docs/DEPLOY.md).

Example:
  cpid-tui serve --db cpid.db --listen :9443 --tls-cert tls.crt --tls-key tls.key \
    --client-ca ca.crt --allow-cn kube-apiserver`

func setupServe(c *cobra.Command, e *env) runFunc {
	fs := c.Flags()
	listen := fs.String("listen", "127.0.0.1:9443", "address to listen on")
	cert := fs.String("tls-cert", "", "server certificate (PEM); without it, plain HTTP")
	key := fs.String("tls-key", "", "server private key (PEM)")
	clientCA := fs.String("client-ca", "", "CA bundle (PEM) that verifies client certificates")
	var allowCN stringList
	fs.Var(&allowCN, "allow-cn", "accept a client certificate only with this subject common name (repeatable; default: any that --client-ca verifies)")
	tokenFile := fs.String("token-file", "", "file holding the bearer token a client may send instead of a certificate")
	insecure := fs.Bool("insecure", false, "allow listening on an address other than loopback without TLS or without authentication")
	maxBody := fs.Int64("max-body", 64<<20, "largest request body accepted, in bytes (413 beyond)")
	bodyBudget := fs.Int64("body-budget", 128<<20, "bytes of request bodies read and stored at once, over all requests (503 with Retry-After beyond); at least --max-body")
	maxConns := fs.Int("max-conns", 256, "open connections; a new one beyond closes the one that has waited longest without completing a request")
	readTimeout := fs.Duration("read-timeout", time.Minute, "time to read a request, headers and body")
	idleTimeout := fs.Duration("idle-timeout", 2*time.Minute, "time a keep-alive connection may wait for its next request")
	every := fs.Duration("reconstruct-every", 10*time.Second, "bring the derived tables up to date this often (0: never)")
	redaction := redactFlag(fs)
	return func(ctx context.Context, args []string) error {
		db, cluster := e.db, e.writeCluster()
		var bad string
		switch {
		case len(args) > 0:
			bad = "unexpected arguments"
		case (*cert == "") != (*key == ""):
			bad = "--tls-cert and --tls-key go together"
		case *clientCA != "" && *cert == "":
			bad = "--client-ca needs TLS (--tls-cert, --tls-key)"
		case len(allowCN) > 0 && *clientCA == "":
			bad = "--allow-cn needs --client-ca"
		case *maxBody <= 0 || *bodyBudget < *maxBody:
			bad = "--body-budget must be at least --max-body, and both positive"
		case *maxConns <= 0 || *readTimeout <= 0 || *idleTimeout <= 0:
			bad = "--max-conns, --read-timeout and --idle-timeout must be positive"
		}
		if bad != "" {
			return usagef("%s", bad)
		}
		var mu sync.Mutex
		notice := func(n ingest.Notice) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(e.stderr, "serve: %s\n", n)
		}
		m := &ingest.Metrics{}
		wh := &ingest.Receiver{MaxBody: *maxBody, BodyBudget: *bodyBudget, Redaction: redaction(), Metrics: m, Notice: notice}
		srv := &ingest.WebhookServer{Receiver: wh, Addr: *listen, CertFile: *cert, KeyFile: *key, ClientCAFile: *clientCA, AllowCN: allowCN,
			TokenFile: *tokenFile, Insecure: *insecure, MaxConns: *maxConns, ReadTimeout: *readTimeout, IdleTimeout: *idleTimeout,
			Metrics: metricsHandler(m, "cpid_webhook"), Notice: notice}
		if err := srv.Listen(); err != nil {
			return err
		}
		db0, err := openDatabase(ctx, db)
		if err != nil {
			srv.Close()
			return err
		}
		defer db0.close()
		st := db0.view(cluster)
		wh.Sink = st
		srv.Ready = func(ctx context.Context) error { _, err := db0.clusters(ctx); return err }

		// The budget bounds what the bodies hold; a soft memory limit keeps
		// the garbage their decoding leaves from doubling the heap before the
		// GC runs (docs/SECURITY.md gives the peak RSS this bounds).
		if os.Getenv("GOMEMLIMIT") == "" {
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(2**bodyBudget + 128<<20))
		}
		g, ctx := errgroup.WithContext(ctx)
		g.Go(func() error { return srv.Run(ctx) })
		if *every > 0 {
			g.Go(func() error { return reconstructEvery(ctx, st, *every, notice) })
		}
		err = g.Wait()
		fmt.Fprintf(e.stderr, "serve: stopped: %d events received, %d stored, %d duplicates, %d bad, %d batches, %d requests rejected (%d busy), %d stalled connections closed for new ones, %d connections refused\n",
			m.Lines.Load(), m.Audits.Load(), m.Dups.Load(), m.Bad.Load(), m.Batches.Load(), m.Rejected.Load(), wh.Busy(), srv.Evicted(), srv.Refused())
		return err
	}
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
