package ingest

import (
	"cmp"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cpid-dev/cpid"
)

// Receiver is the HTTP handler for kube-apiserver's audit webhook backend
// (--audit-webhook-config-file, batch mode). Each POST carries an
// audit.k8s.io/v1 EventList; its body is decoded as it is read
// (StreamEventList), within the memory budget, and its good events are
// stored before the answer, in transactions of at most flushEvents events:
// a 2xx means stored. When the
// receiver dies first, the apiserver's retry sends the batch again, and the
// events already stored are skipped as duplicates. A bad event is counted,
// reported with its index and skipped; only a body that is not an EventList
// at all gets 400.
//
// A Receiver with a Sink is ready to use; the other fields are optional.
// To shut down without waiting for stalled bodies, set ConnState as the
// http.Server's ConnState and register Drain with RegisterOnShutdown.
type Receiver struct {
	Sink cpid.RecordWriter
	// Token, when set, is a bearer token that authenticates a request.
	Token string
	// ClientCerts, when set, lets a client certificate verified by the
	// server's TLS configuration (tls.Config.ClientCAs with
	// VerifyClientCertIfGiven) authenticate a request.
	ClientCerts bool
	// AllowCN, when not empty, are the only subject common names of a
	// client certificate that authenticate.
	AllowCN []string
	// MaxBody is the largest request body accepted, in bytes; larger ones
	// get 413. Default 64 MiB (kube-apiserver's default batch limit,
	// --audit-webhook-truncate-max-batch-size, is 10 MiB).
	MaxBody int64
	// BodyBudget is what the bodies being read, decoded and stored may hold
	// at once, over every request, in bytes; a request beyond it gets 503
	// with Retry-After. Default twice MaxBody. It should be at least
	// MaxBody, or the largest bodies never fit.
	BodyBudget int64
	// Source names the input in the store (files.path). Default "webhook".
	Source string
	// Redaction removes credentials from audit bodies. Default
	// DefaultRedaction.
	Redaction *Redaction
	// Metrics, when set, counts requests, events and the commit lag.
	Metrics *Metrics
	// Notice, when set, is told about rejected requests, skipped events
	// and store failures. It may be called from several goroutines at once.
	Notice func(Notice)

	budget bodyBudget
	busy   atomic.Int64 // requests answered 503 for the budget
	write  sync.Mutex   // one batch is written at a time

	connMu   sync.Mutex
	conns    map[net.Conn]bool // open, for Drain
	draining bool
}

// retryAfter is the Retry-After of a 503. client-go, which kube-apiserver's
// webhook backend posts with, waits that long and posts again (up to 10
// times) before its own backoff takes over.
const retryAfter = "1"

// badShown is how many bad events of one request are reported one by one.
const badShown = 10

// errBusy is the read error of a body that would overrun the budget.
var errBusy = errors.New("memory budget full")

// longAgo is a read deadline that has passed: reads fail at once.
var longAgo = time.Unix(1, 0)

func (rc *Receiver) maxBody() int64 {
	if rc.MaxBody > 0 {
		return rc.MaxBody
	}
	return 64 << 20
}

func (rc *Receiver) maxBudget() int64 {
	if rc.BodyBudget > 0 {
		return rc.BodyBudget
	}
	return 2 * rc.maxBody()
}

func (rc *Receiver) metrics() *Metrics {
	if rc.Metrics != nil {
		return rc.Metrics
	}
	return &Metrics{}
}

// ServeHTTP stores the EventList of a POST.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rc.isDraining() {
		// The server is shutting down: this body is not read (see Drain).
		http.NewResponseController(w).SetReadDeadline(longAgo)
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
	if err := jsonContentType(r.Header.Get("Content-Type")); err != nil {
		rc.reject(w, r, http.StatusUnsupportedMediaType, err.Error())
		return
	}
	limit := rc.maxBody()
	if r.ContentLength > limit {
		rc.reject(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", limit))
		return
	}
	// A body of known length is reserved whole before a byte is read; a
	// chunked one is charged as it comes.
	body := &charged{r: http.MaxBytesReader(w, r.Body, limit), b: &rc.budget, max: rc.maxBudget()}
	defer func() { rc.budget.give(body.taken) }()
	if !rc.budget.take(max(r.ContentLength, 0), body.max) {
		rc.tooBusy(w, r, body.r)
		return
	}
	body.taken = max(r.ContentLength, 0)

	m := rc.metrics()
	src := cmp.Or(rc.Source, "webhook")
	h := held{rc: rc, ctx: context.WithoutCancel(r.Context()), src: src, max: body.max, body: body}
	defer h.release()
	var bad []string // the first badShown
	nbad, items := 0, 0
	err := StreamEventList(body, rc.Redaction, func(it *ListItem) error {
		items++
		if it.Err != nil {
			nbad++
			if len(bad) < badShown {
				bad = append(bad, fmt.Sprintf("event %d of the batch: %v", it.Index, it.Err))
			}
			return nil
		}
		return h.add(it)
	})
	if err == nil && h.err == nil {
		err = h.flush()
	}
	var tooBig *http.MaxBytesError
	var netErr net.Error
	timeout := errors.As(body.err, &netErr) && netErr.Timeout()
	switch {
	case h.err != nil && errors.Is(err, h.err):
		switch {
		case errors.Is(h.err, errBusy):
			rc.tooBusy(w, r, body.r)
		case errors.Is(h.err, errUnlisted):
			rc.reject(w, r, http.StatusRequestEntityTooLarge, h.err.Error())
		default:
			m.Failed.Add(1)
			rc.notice(Notice{Name: src, Reason: "store: " + h.err.Error()})
			http.Error(w, "store failed; retry", http.StatusInternalServerError)
		}
		return
	case err == nil:
	case errors.Is(body.err, errBusy):
		rc.tooBusy(w, r, body.r)
		return
	case errors.As(body.err, &tooBig):
		rc.reject(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", limit))
		return
	case timeout && rc.isDraining():
		w.Header().Set("Retry-After", retryAfter)
		rc.reject(w, r, http.StatusServiceUnavailable, "shutting down; retry")
		return
	case timeout:
		rc.reject(w, r, http.StatusRequestTimeout, "body not read within --read-timeout")
		return
	case body.err != nil:
		rc.reject(w, r, http.StatusBadRequest, "read body: "+body.err.Error())
		return
	default:
		m.Bad.Add(1)
		rc.reject(w, r, http.StatusBadRequest, "not an audit.k8s.io/v1 EventList: "+err.Error())
		return
	}
	m.Lines.Add(int64(items))
	if nbad > 0 {
		m.Bad.Add(int64(nbad))
		for _, b := range bad {
			rc.notice(Notice{Name: r.RemoteAddr, Reason: "skipped " + b})
		}
		if nbad > len(bad) {
			rc.notice(Notice{Name: r.RemoteAddr, Reason: fmt.Sprintf("skipped %d more bad events of the batch", nbad-len(bad))})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, "{}\n")
}

// What one request holds decoded before it is stored. The events of a body
// are stored in batches of at most flushEvents events or flushBytes bytes
// (each event counted as its bytes in the body plus itemFloor), so that
// what a request holds does not grow with its body, whatever its items:
// a million {} items cost the bytes read and nothing more, a million tiny
// events a batch at a time. The body's bytes are in the memory budget
// already (reserved or charged as read); what the held events cost beyond
// them is taken from it too, and given back once stored. When the budget
// has no room for it, the events held are stored at once instead.
const (
	flushEvents = 4096
	flushBytes  = 4 << 20
	// itemFloor is the least a decoded event holds besides its bytes (the
	// event's fields, the copy of its item): measured at about 700 bytes
	// for an event of a few fields (TestReceiverTinyItems).
	itemFloor = 1 << 10
	// maxUnlisted is what a request may hold of an EventList whose kind
	// comes after its items (held whole until the kind says it is an
	// EventList); kube-apiserver writes the kind first.
	maxUnlisted = 16 << 20
)

// errUnlisted is the error of an EventList whose items, before its kind,
// pass maxUnlisted.
var errUnlisted = fmt.Errorf("an EventList whose kind and apiVersion come after its items is held whole, at most %d MiB of it: give kind and apiVersion first", maxUnlisted>>20)

// held is the events of a request decoded and not yet stored.
type held struct {
	rc    *Receiver
	ctx   context.Context
	src   string
	max   int64 // the budget's
	batch cpid.Batch
	body  *charged // the request's body, whose bytes are in the budget
	cost  int64    // of the events in batch: their bytes and floors
	taken int64    // of the budget, for the events beyond the body's bytes
	err   error    // the first of add or flush: the request ends with it
}

// add holds the event of it, and stores the batch once it is full (and
// the list's kind was read: before that, the batch grows up to
// maxUnlisted).
func (h *held) add(it *ListItem) error {
	h.batch.Audits = append(h.batch.Audits, cpid.Audit{AuditEvent: it.Event, Pos: cpid.Pos{File: h.src, Line: it.Index + 1}})
	h.cost += int64(it.Size) + itemFloor
	// The held events beyond what the body has of the budget (many tiny
	// events cost more decoded than their bytes) take the rest from it.
	if need := h.cost - h.body.taken - h.taken; need > 0 {
		switch {
		case h.rc.budget.take(need, h.max):
			h.taken += need
		case len(h.batch.Audits) == 1:
			// One event in hand: its bytes are the body's, reserved.
		case it.Listed:
			return h.flush() // store what is held rather than wait for room
		default:
			h.err = errBusy
			return h.err
		}
	}
	full := len(h.batch.Audits) >= flushEvents || h.cost >= flushBytes
	switch {
	case full && it.Listed:
		return h.flush()
	case !it.Listed && h.cost > maxUnlisted:
		h.err = errUnlisted
		return h.err
	}
	return nil
}

// flush stores the held events in one transaction. Not the request's
// context: the server cancels it when the connection's read deadline
// passes during a long commit (or Drain cuts it), and a commit that
// started should end.
func (h *held) flush() error {
	if len(h.batch.Audits) == 0 {
		return nil
	}
	h.rc.write.Lock()
	n, err := h.rc.Sink.Write(h.ctx, &h.batch)
	h.rc.write.Unlock()
	if err != nil {
		h.err = err
		return err
	}
	h.rc.metrics().Committed(&h.batch, n, time.Now())
	h.release()
	return nil
}

// release empties the batch and gives what it took back to the budget.
func (h *held) release() {
	h.batch.Reset()
	h.rc.budget.give(h.taken)
	h.cost, h.taken = 0, 0
}

// Authenticated reports whether r carries the credentials the receiver
// asks for; with none configured, every request does.
func (rc *Receiver) Authenticated(r *http.Request) bool {
	if rc.Token == "" && !rc.ClientCerts {
		return true
	}
	if rc.ClientCerts && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		if len(rc.AllowCN) == 0 || slices.Contains(rc.AllowCN, r.TLS.VerifiedChains[0][0].Subject.CommonName) {
			return true
		}
	}
	if rc.Token != "" {
		// The scheme is case-insensitive (RFC 7235), the token is not.
		scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(rc.Token)) == 1 {
			return true
		}
	}
	return false
}

// ConnState keeps the open connections for Drain; set it as the
// http.Server's ConnState.
func (rc *Receiver) ConnState(c net.Conn, s http.ConnState) {
	rc.connMu.Lock()
	defer rc.connMu.Unlock()
	switch s {
	case http.StateNew:
		if rc.conns == nil {
			rc.conns = map[net.Conn]bool{}
		}
		rc.conns[c] = true
		if rc.draining {
			c.SetReadDeadline(longAgo)
		}
	case http.StateClosed, http.StateHijacked:
		delete(rc.conns, c)
	}
}

// Drain stops reading: every read of every open connection (see ConnState)
// fails from now on, so that a body still coming, or stalled, ends at once
// with 503 and Retry-After; a request that comes later is answered the
// same. A batch read whole is still stored and answered 2xx. Register it
// with http.Server.RegisterOnShutdown: without it, Shutdown waits for a
// stalled body until the server's ReadTimeout. A batch cut short was not
// acknowledged, and the apiserver posts it again.
func (rc *Receiver) Drain() {
	rc.connMu.Lock()
	defer rc.connMu.Unlock()
	rc.draining = true
	// A connection whose request is read whole only loses the server's
	// background read, which watches for the client going away.
	for c := range rc.conns {
		c.SetReadDeadline(longAgo)
	}
}

func (rc *Receiver) isDraining() bool {
	rc.connMu.Lock()
	defer rc.connMu.Unlock()
	return rc.draining
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
// (not kept: it is within MaxBody and the server's read timeout). A client
// still writing a body that is not read would see its connection reset
// instead of the answer, and lose the Retry-After.
func (rc *Receiver) tooBusy(w http.ResponseWriter, r *http.Request, body io.Reader) {
	io.Copy(io.Discard, body)
	rc.busy.Add(1)
	w.Header().Set("Retry-After", retryAfter)
	rc.reject(w, r, http.StatusServiceUnavailable, "memory budget full (--body-budget); retry")
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

// Busy is the number of requests answered 503 because the budget was full.
func (rc *Receiver) Busy() int64 { return rc.busy.Load() }

// WriteText writes what the receiver counts beside its Metrics (the 503s of
// the budget, the bytes it holds), in the Prometheus text format, each name
// prefixed with prefix (e.g. "cpid_webhook").
func (rc *Receiver) WriteText(w io.Writer, prefix string) error {
	for _, v := range []struct {
		name, kind, help string
		v                int64
	}{
		{"busy_total", "counter", "Requests answered 503 with Retry-After: the memory budget (--body-budget) was full.", rc.busy.Load()},
		{"body_bytes", "gauge", "Bytes of request bodies held in the memory budget now.", rc.budget.load()},
		{"body_budget_bytes", "gauge", "The memory budget of request bodies (--body-budget).", rc.maxBudget()},
	} {
		if _, err := fmt.Fprintf(w, "# HELP %s_%s %s\n# TYPE %s_%s %s\n%s_%s %d\n",
			prefix, v.name, v.help, prefix, v.name, v.kind, prefix, v.name, v.v); err != nil {
			return err
		}
	}
	return nil
}

// bodyBudget is what the bodies being read, decoded and stored hold at once,
// in bytes.
type bodyBudget struct {
	mu   sync.Mutex
	held int64
}

// take reserves n bytes if the budget, of max bytes, has them.
func (b *bodyBudget) take(n, max int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+n > max {
		return false
	}
	b.held += n
	return true
}

func (b *bodyBudget) give(n int64) {
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
}

func (b *bodyBudget) load() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// charged reads a body, taking from the budget each byte read beyond what
// was reserved, and keeps the first error of the read other than EOF.
type charged struct {
	r     io.Reader
	b     *bodyBudget
	max   int64 // of b
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
		if !c.b.take(more, c.max) {
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
