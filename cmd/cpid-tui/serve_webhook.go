package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
)

// receiver is serve's handler. Each POST carries an audit.k8s.io/v1
// EventList; its body is decoded as it is read, within the memory budget,
// and its good events are stored in one transaction before the answer: a
// 2xx means stored. A bad event is counted, reported with its index and
// skipped; only a body that is not an EventList at all gets 400.
type receiver struct {
	sink    cpid.RecordWriter
	token   string          // a bearer token that authenticates, when set
	certs   bool            // a verified client certificate authenticates
	allowCN map[string]bool // when not empty, the only subject CNs accepted
	maxBody int64           // per request; 413 beyond
	budget  *budget         // over every request; 503 beyond
	red     *ingest.Redaction
	m       *ingest.Metrics
	busy    atomic.Int64 // requests answered 503
	notice  func(ingest.Notice)

	mu sync.Mutex // one batch is written at a time
}

// retryAfter is the Retry-After of a 503. client-go, which kube-apiserver's
// webhook backend posts with, waits that long and posts again (up to 10
// times) before its own backoff takes over.
const retryAfter = "1"

// badShown is how many bad events of one request are reported one by one.
const badShown = 10

// errBusy is the read error of a body that would overrun the budget.
var errBusy = errors.New("memory budget full")

func (h *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.reject(w, r, http.StatusMethodNotAllowed, "only POST is accepted")
		return
	}
	if !h.authenticated(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cpid"`)
		h.reject(w, r, http.StatusUnauthorized, "unauthenticated")
		return
	}
	if err := jsonContentType(r.Header.Get("Content-Type")); err != nil {
		h.reject(w, r, http.StatusUnsupportedMediaType, err.Error())
		return
	}
	if r.ContentLength > h.maxBody {
		h.reject(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", h.maxBody))
		return
	}
	// A body of known length is reserved whole before a byte is read; a
	// chunked one is charged as it comes.
	body := &charged{r: http.MaxBytesReader(w, r.Body, h.maxBody), b: h.budget}
	defer func() { h.budget.give(body.taken) }()
	if !h.budget.take(max(r.ContentLength, 0)) {
		h.tooBusy(w, r, body.r)
		return
	}
	body.taken = max(r.ContentLength, 0)

	batch := &cpid.Batch{}
	var bad []string
	items := 0
	err := ingest.ReadEventList(body, h.red, func(i int, ev cpid.AuditEvent, err error) {
		items++
		if err != nil {
			bad = append(bad, fmt.Sprintf("event %d of the batch: %v", i, err))
			return
		}
		batch.Audits = append(batch.Audits, cpid.Audit{AuditEvent: ev, Pos: cpid.Pos{File: "webhook", Line: i + 1}})
	})
	var tooBig *http.MaxBytesError
	var netErr net.Error
	switch {
	case err == nil:
	case errors.Is(body.err, errBusy):
		h.tooBusy(w, r, body.r)
		return
	case errors.As(body.err, &tooBig):
		h.reject(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", h.maxBody))
		return
	case errors.As(body.err, &netErr) && netErr.Timeout():
		h.reject(w, r, http.StatusRequestTimeout, "body not read within --read-timeout")
		return
	case body.err != nil:
		h.reject(w, r, http.StatusBadRequest, "read body: "+body.err.Error())
		return
	default:
		h.m.Bad.Add(1)
		h.reject(w, r, http.StatusBadRequest, "not an audit.k8s.io/v1 EventList: "+err.Error())
		return
	}
	h.m.Lines.Add(int64(items))
	if len(bad) > 0 {
		h.m.Bad.Add(int64(len(bad)))
		for _, b := range bad[:min(len(bad), badShown)] {
			h.notice(ingest.Notice{Name: r.RemoteAddr, Reason: "skipped " + b})
		}
		if len(bad) > badShown {
			h.notice(ingest.Notice{Name: r.RemoteAddr, Reason: fmt.Sprintf("skipped %d more bad events of the batch", len(bad)-badShown)})
		}
	}
	if len(batch.Audits) > 0 {
		// Not r.Context(): the server cancels it when the connection's read
		// deadline passes during a long commit, and a commit that started
		// should end.
		h.mu.Lock()
		n, err := h.sink.Write(context.WithoutCancel(r.Context()), batch)
		h.mu.Unlock()
		if err != nil {
			h.m.Failed.Add(1)
			h.notice(ingest.Notice{Name: "webhook", Reason: "store: " + err.Error()})
			http.Error(w, "store failed; retry", http.StatusInternalServerError)
			return
		}
		h.m.Committed(batch, n, time.Now())
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, "{}\n")
}

// authenticated reports whether r carries the credentials serve asks for;
// with none configured, every request does.
func (h *receiver) authenticated(r *http.Request) bool {
	if h.token == "" && !h.certs {
		return true
	}
	if h.certs && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		if len(h.allowCN) == 0 || h.allowCN[r.TLS.VerifiedChains[0][0].Subject.CommonName] {
			return true
		}
	}
	if h.token != "" {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(h.token)) == 1 {
			return true
		}
	}
	return false
}

// jsonContentType accepts the media type application/json, with no charset
// or utf-8.
func jsonContentType(ct string) error {
	if ct == "" {
		return errors.New("no Content-Type: want application/json")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return fmt.Errorf("content type %q: %v", ct, err)
	}
	if mt != "application/json" {
		return fmt.Errorf("content type %q: want application/json", ct)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return fmt.Errorf("content type %q: want charset utf-8", ct)
	}
	return nil
}

// tooBusy answers 503 with Retry-After, once the body is read through
// (not kept: it is within --max-body and --read-timeout). A client still
// writing a body that is not read would see its connection reset instead
// of the answer, and lose the Retry-After.
func (h *receiver) tooBusy(w http.ResponseWriter, r *http.Request, body io.Reader) {
	io.Copy(io.Discard, body)
	h.busy.Add(1)
	w.Header().Set("Retry-After", retryAfter)
	h.reject(w, r, http.StatusServiceUnavailable, "memory budget full (--body-budget); retry")
}

func (h *receiver) reject(w http.ResponseWriter, r *http.Request, code int, why string) {
	h.m.Rejected.Add(1)
	h.notice(ingest.Notice{Name: r.RemoteAddr, Reason: fmt.Sprintf("%d: %s", code, why)})
	http.Error(w, why, code)
}

// budget is what the bodies being read, decoded and stored may hold at
// once, in bytes.
type budget struct {
	mu   sync.Mutex
	max  int64
	held int64
}

// take reserves n bytes, or reports that they are not there.
func (b *budget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+n > b.max {
		return false
	}
	b.held += n
	return true
}

func (b *budget) give(n int64) {
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
}

func (b *budget) load() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// charged reads a body, taking from the budget each byte read beyond what
// was reserved, and keeps the first error of the read other than EOF.
type charged struct {
	r     io.Reader
	b     *budget
	taken int64 // bytes taken from b
	read  int64
	err   error
}

// chargeStep is how much more a chunked body takes from the budget at once.
const chargeStep = 64 << 10

func (c *charged) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	if over := c.read - c.taken; over > 0 {
		more := max(over, chargeStep)
		if !c.b.take(more) {
			c.err = errBusy
			return 0, c.err
		}
		c.taken += more
	}
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

// capListener closes at once each connection beyond its cap: a flood of
// idle or slow clients cannot pile up, and kube-apiserver retries a post
// whose connection was closed.
type capListener struct {
	net.Listener
	slots   chan struct{}
	refused atomic.Int64
	full    atomic.Bool
	notice  func(ingest.Notice)
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			l.full.Store(false)
			return &slotConn{Conn: c, l: l}, nil
		default:
			c.Close()
			l.refused.Add(1)
			if !l.full.Swap(true) {
				l.notice(ingest.Notice{Name: c.RemoteAddr().String(),
					Reason: fmt.Sprintf("%d connections open (--max-conns): closing new ones until one ends", cap(l.slots))})
			}
		}
	}
}

// slotConn gives its slot back when closed, before the client can see it
// closed.
type slotConn struct {
	net.Conn
	l    *capListener
	once sync.Once
}

func (c *slotConn) Close() error {
	c.once.Do(func() { <-c.l.slots })
	return c.Conn.Close()
}

// writeMetrics writes what serve counts beside ingest.Metrics, in the
// Prometheus text format.
func writeMetrics(w io.Writer, h *receiver, l *capListener) {
	for _, v := range []struct {
		name, kind, help string
		v                int64
	}{
		{"cpid_webhook_busy_total", "counter", "Requests answered 503 with Retry-After: the memory budget (--body-budget) was full.", h.busy.Load()},
		{"cpid_webhook_body_bytes", "gauge", "Bytes of request bodies held in the memory budget now.", h.budget.load()},
		{"cpid_webhook_body_budget_bytes", "gauge", "The memory budget of request bodies (--body-budget).", h.budget.max},
		{"cpid_webhook_connections", "gauge", "Connections open now.", int64(len(l.slots))},
		{"cpid_webhook_connections_refused_total", "counter", "Connections closed at once: --max-conns were open.", l.refused.Load()},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", v.name, v.help, v.name, v.kind, v.name, v.v)
	}
}
