package ingest

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cpid-dev/cpid"
)

// Receiver is the HTTP handler for kube-apiserver's audit webhook backend
// (--audit-webhook-config-file): each POST carries an audit.k8s.io/v1
// EventList, which is stored in one transaction before the response is
// sent. A 2xx therefore means stored: when the receiver crashes first, the
// apiserver's retry sends the batch again, and events already stored are
// skipped as duplicates.
//
// When Token or ClientCerts is set, a request must authenticate with either:
// a bearer token equal to Token, or a client certificate verified by the
// server's TLS configuration (tls.Config.ClientCAs with
// VerifyClientCertIfGiven). Others get 401.
type Receiver struct {
	Sink cpid.RecordWriter
	// Token, when set, is a bearer token that authenticates a request.
	Token string
	// ClientCerts, when set, lets a verified client certificate
	// authenticate a request.
	ClientCerts bool
	// MaxBody is the largest request body accepted, in bytes; larger ones
	// get 413. Default 64 MiB (kube-apiserver's default batch limit,
	// --audit-webhook-truncate-max-batch-size, is 10 MiB).
	MaxBody int64
	// Source names the input in the store (files.path). Default "webhook".
	Source string
	// Redaction removes credentials from audit bodies. Default
	// DefaultRedaction.
	Redaction *Redaction
	// Metrics, when set, counts requests, events and the commit lag.
	Metrics *Metrics
	// Notice, when set, is told about rejected requests and store
	// failures. It may be called from several goroutines at once.
	Notice func(Notice)

	mu sync.Mutex // one batch is written at a time
}

// ServeHTTP stores the EventList of a POST.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := rc.Metrics
	if m == nil {
		m = &Metrics{}
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		rc.reject(w, r, http.StatusMethodNotAllowed, "only POST is accepted")
		return
	}
	if !rc.Authenticated(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cpid"`)
		rc.reject(w, r, http.StatusUnauthorized, "unauthenticated")
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.Contains(ct, "json") {
		rc.reject(w, r, http.StatusUnsupportedMediaType, fmt.Sprintf("content type %q: only JSON is accepted", ct))
		return
	}
	limit := rc.MaxBody
	if limit <= 0 {
		limit = 64 << 20
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		rc.reject(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", limit))
		return
	}
	if err != nil {
		rc.reject(w, r, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	events, err := decodeAudit(body, orDefault(rc.Redaction))
	if err != nil {
		m.Bad.Add(1)
		rc.reject(w, r, http.StatusBadRequest, "not an audit.k8s.io/v1 EventList: "+err.Error())
		return
	}
	m.Lines.Add(int64(len(events)))
	src := rc.Source
	if src == "" {
		src = "webhook"
	}
	b := &cpid.Batch{Audits: make([]cpid.Audit, len(events))}
	for i := range events {
		b.Audits[i] = cpid.Audit{AuditEvent: events[i], Pos: cpid.Pos{File: src, Line: i + 1}}
	}
	rc.mu.Lock()
	n, err := rc.Sink.Write(r.Context(), b)
	rc.mu.Unlock()
	if err != nil {
		m.Failed.Add(1)
		rc.notice(Notice{Name: src, Reason: "store: " + err.Error()})
		http.Error(w, "store failed; retry", http.StatusInternalServerError)
		return
	}
	m.Committed(b, n, time.Now())
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, "{}\n")
}

// Authenticated reports whether r carries the credentials the receiver
// asks for; with none configured, every request is.
func (rc *Receiver) Authenticated(r *http.Request) bool {
	if rc.Token == "" && !rc.ClientCerts {
		return true
	}
	if rc.ClientCerts && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		return true
	}
	if rc.Token != "" {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(rc.Token)) == 1 {
			return true
		}
	}
	return false
}

func (rc *Receiver) reject(w http.ResponseWriter, r *http.Request, code int, why string) {
	if rc.Metrics != nil {
		rc.Metrics.Rejected.Add(1)
	}
	rc.notice(Notice{Name: r.RemoteAddr, Reason: fmt.Sprintf("%d: %s", code, why)})
	http.Error(w, why, code)
}

func (rc *Receiver) notice(n Notice) {
	if rc.Notice != nil {
		rc.Notice(n)
	}
}
