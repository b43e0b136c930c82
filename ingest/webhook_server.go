package ingest

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// WebhookServer serves a Receiver to kube-apiserver's audit webhook: it
// loads the TLS key pair, the client CA and the bearer token, refuses an
// address beyond loopback without TLS and authentication (unless
// Insecure), caps the connections (MaxConns: a new one closes the one
// stalled longest), answers the kubelet's probes and /metrics beside the
// webhook, and on shutdown ends every read at once and stores the batches
// read whole before it returns (Receiver.Drain). cpid-tui serve fills it
// from its flags, whose names its errors and notices use.
//
// Listen binds the address (what can fail before the store is opened);
// Run serves until its context ends.
type WebhookServer struct {
	// Receiver is the webhook handler: its Sink, limits, Metrics and
	// Notice are the caller's; Listen sets its Token, ClientCerts and
	// AllowCN from the fields below.
	Receiver *Receiver
	// Addr is the address to listen on (host:port).
	Addr string
	// CertFile and KeyFile are the server's key pair (PEM); without them
	// the listener is plain HTTP.
	CertFile, KeyFile string
	// ClientCAFile is the CA bundle (PEM) that verifies client
	// certificates; AllowCN, when not empty, the only subject common names
	// accepted.
	ClientCAFile string
	AllowCN      []string
	// TokenFile holds the bearer token a client may send instead of a
	// certificate.
	TokenFile string
	// Insecure allows an address beyond loopback without TLS or without
	// authentication.
	Insecure bool
	// MaxConns caps the open connections (default 256).
	MaxConns int
	// ReadTimeout bounds the read of a request, headers and body;
	// IdleTimeout the wait of a keep-alive connection for its next one.
	ReadTimeout, IdleTimeout time.Duration
	// Ready answers GET /readyz: nil when the store answers a query.
	Ready func(context.Context) error
	// Metrics, when set, writes the caller's counters first on /metrics;
	// the receiver's and the connections' follow.
	Metrics http.Handler
	// Notice is told what the server does and refuses (required; it may
	// be called from several goroutines at once).
	Notice func(Notice)

	tls  *tls.Config
	ln   net.Listener
	conn *capListener
}

// ShutdownGrace is how long Run waits, once its context ends, for the
// batches being stored (Receiver.Drain has ended every read).
const ShutdownGrace = 30 * time.Second

// readyTimeout bounds the query of /readyz: a store that does not answer
// within it is not ready (the Deployment's probe waits a little longer,
// deploy/deployment.yaml).
const readyTimeout = 5 * time.Second

// Listen loads the key pair, the client CA and the token, checks that the
// address may be exposed so, and binds it.
func (s *WebhookServer) Listen() error {
	if s.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return fmt.Errorf("load TLS key pair: %w", err)
		}
		s.tls = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
		if s.ClientCAFile != "" {
			pem, err := os.ReadFile(s.ClientCAFile)
			if err != nil {
				return fmt.Errorf("read client CA: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return fmt.Errorf("client CA %s: no PEM certificate", s.ClientCAFile)
			}
			s.tls.ClientCAs = pool
			s.tls.ClientAuth = tls.VerifyClientCertIfGiven
		}
	}
	var token string
	if s.TokenFile != "" {
		b, err := os.ReadFile(s.TokenFile)
		if err != nil {
			return fmt.Errorf("read token file: %w", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return fmt.Errorf("token file %s is empty", s.TokenFile)
		}
	}
	s.Receiver.Token, s.Receiver.ClientCerts, s.Receiver.AllowCN = token, s.ClientCAFile != "", s.AllowCN
	need := s.lacks()
	if need != "" && !s.Insecure && !loopback(s.Addr) {
		return fmt.Errorf("refusing to listen on %s without %s: anyone who reaches it could write audit events; "+
			"listen on 127.0.0.1, or pass --insecure to accept that", s.Addr, need)
	}
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.Addr, err)
	}
	// "localhost" could name another address: what counts is the one bound.
	if a, ok := ln.Addr().(*net.TCPAddr); need != "" && !s.Insecure && (!ok || !a.IP.IsLoopback()) {
		ln.Close()
		return fmt.Errorf("refusing to listen on %s (%s, not loopback) without %s; pass --insecure to accept that", s.Addr, ln.Addr(), need)
	}
	s.conn = newCapListener(ln, cmp.Or(s.MaxConns, 256), s.Notice)
	s.ln = s.conn
	if s.tls != nil {
		s.ln = tls.NewListener(s.conn, s.tls)
	}
	return nil
}

// open reports a server without authentication.
func (s *WebhookServer) open() bool { return s.Receiver.Token == "" && s.ClientCAFile == "" }

// lacks is what a listener beyond loopback lacks: authentication, else
// TLS; "" for neither.
func (s *WebhookServer) lacks() string {
	switch {
	case s.open():
		return "authentication (--client-ca, --token-file)"
	case s.tls == nil:
		return "TLS (--tls-cert, --tls-key)"
	}
	return ""
}

// Close closes the listener Listen bound, for a caller that fails before
// Run (which closes it when it returns).
func (s *WebhookServer) Close() error { return s.conn.Close() }

// Run serves the webhook, the probes and /metrics on the listener Listen
// bound until ctx ends, then shuts down: reads end at once, the batches
// read whole are stored and answered (within ShutdownGrace), and the
// listener is closed.
func (s *WebhookServer) Run(ctx context.Context) error {
	defer s.conn.Close()
	wh := s.Receiver
	mux := http.NewServeMux()
	mux.Handle("/metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !wh.Authenticated(r) {
			http.Error(w, "unauthenticated", http.StatusUnauthorized)
			return
		}
		if s.Metrics != nil {
			s.Metrics.ServeHTTP(w, r)
		}
		wh.WriteText(w, "cpid_webhook")
		s.conn.writeMetrics(w)
	}))
	handleProbes(mux, s.Ready, s.Notice)
	mux.Handle("/", wh)
	handler := s.conn.track(mux) // at MaxConns, which connections are stalled
	switch {
	case s.open():
		s.Notice(Notice{Name: s.Addr, Reason: "no --client-ca or --token-file: anyone who reaches this address can write audit events"})
	case s.ClientCAFile != "" && len(s.AllowCN) == 0:
		s.Notice(Notice{Name: s.Addr, Reason: "--client-ca without --allow-cn: any certificate that CA signed is accepted"})
	}

	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: s.ReadTimeout, IdleTimeout: s.IdleTimeout,
		ConnState: wh.ConnState, ConnContext: s.conn.connContext, ErrorLog: log.New(noticeWriter(s.Notice), "", 0)}
	// On shutdown, reads end at once: a body still coming would otherwise
	// hold Shutdown until ReadTimeout. Only the batches read whole are
	// still stored and answered.
	srv.RegisterOnShutdown(wh.Drain)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve %s: %w", s.Addr, err)
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			return fmt.Errorf("shut down: requests still in progress after %s: %w", ShutdownGrace, err)
		}
		return nil
	})
	s.Notice(Notice{Name: s.conn.Addr().String(), Reason: "listening"})
	return g.Wait()
}

// Evicted counts the stalled connections closed for new ones at MaxConns.
func (s *WebhookServer) Evicted() int64 { return s.conn.evicted.Load() }

// Refused counts the new connections closed at once at MaxConns, every
// open one handling a request read whole.
func (s *WebhookServer) Refused() int64 { return s.conn.refused.Load() }

// loopback reports whether addr (host:port) names a loopback address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// noticeWriter turns the lines net/http logs (TLS handshake errors) into
// notices.
type noticeWriter func(Notice)

// Write tells one logged line.
func (f noticeWriter) Write(p []byte) (int, error) {
	f(Notice{Name: "http", Reason: strings.TrimSpace(string(p))})
	return len(p), nil
}

// handleProbes adds the kubelet's probes to mux. They carry no client
// certificate or token, so both answer without authentication, and say
// nothing but "ok" or "not ready" (docs/SECURITY.md): /healthz that the
// process serves HTTP, /readyz that the store answers a query (ping; why
// not goes to notice, once each time the answer changes). Only GET and
// HEAD: any other method goes to the webhook, which asks for
// authentication.
func handleProbes(mux *http.ServeMux, ping func(context.Context) error, notice func(Notice)) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	var mu sync.Mutex
	failing := false // as last said
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		var err error
		if ping != nil {
			err = ping(ctx)
		}
		mu.Lock()
		if changed := (err != nil) != failing; changed {
			failing = err != nil
			if failing {
				notice(Notice{Name: "readyz", Reason: "not ready: the database does not answer: " + err.Error()})
			} else {
				notice(Notice{Name: "readyz", Reason: "ready: the database answers again"})
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err != nil {
			// The reason stays in the log: the answer is unauthenticated, and
			// a database error may name hosts or paths.
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready: the database does not answer")
			return
		}
		fmt.Fprintln(w, "ok")
	})
}
