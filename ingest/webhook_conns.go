package ingest

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// capListener holds at most max connections open
// (WebhookServer.MaxConns). At the cap, a new connection closes the one
// that has waited longest without completing a request: one stalled in its headers or its body (a slow
// loris, which the read timeouts alone let hold its slot for a minute), or
// idle since its last answer. So connections that stall cannot lock real
// senders out: each new one is served, and a stalled one keeps its slot
// only until max newer connections have come. A connection whose request
// was read whole is not closed while it is handled (its batch being
// stored); only when every open one is, the new one is closed at once.
// kube-apiserver retries a post whose connection was closed.
//
// The handler must be wrapped by track, and the server's ConnContext be
// connContext, for the listener to know which requests were read whole.
type capListener struct {
	net.Listener
	max    int
	notice func(Notice)

	mu   sync.Mutex
	open map[*slotConn]struct{}
	seq  uint64 // orders the connections by when they last started to wait
	said string // what the cap does now, as last said ("" below it)

	refused atomic.Int64 // closed at once: every open connection was busy
	evicted atomic.Int64 // stalled connections closed to make room
}

// newCapListener caps ln at max connections, telling notice what the cap
// does each time that changes.
func newCapListener(ln net.Listener, max int, notice func(Notice)) *capListener {
	return &capListener{Listener: ln, max: max, notice: notice, open: map[*slotConn]struct{}{}}
}

// Accept returns the next connection, closing a stalled one (or the new
// one) at the cap.
func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		var victim *slotConn
		say := ""
		if len(l.open) >= l.max {
			if victim = l.stalled(); victim == nil {
				say = fmt.Sprintf("%d connections open (--max-conns), each handling a request read whole: closing new ones until one is done", l.max)
			} else {
				say = fmt.Sprintf("%d connections open (--max-conns): each new one closes the one that has waited longest without a complete request", l.max)
			}
		}
		tell := say != l.said
		l.said = say
		if say != "" && victim == nil {
			l.mu.Unlock()
			l.refused.Add(1)
			c.Close()
			if tell {
				l.notice(Notice{Name: c.RemoteAddr().String(), Reason: say})
			}
			continue
		}
		if victim != nil {
			// Its slot is given back before it can see it closed.
			delete(l.open, victim)
			l.evicted.Add(1)
		}
		l.seq++
		sc := &slotConn{Conn: c, l: l, seq: l.seq}
		l.open[sc] = struct{}{}
		l.mu.Unlock()
		if victim != nil {
			victim.Conn.Close()
			if tell {
				l.notice(Notice{Name: victim.RemoteAddr().String(), Reason: say + " (this one first)"})
			}
		}
		return sc, nil
	}
}

// stalled is the open connection that has waited longest without
// completing a request, nil when every one is handling a request read
// whole. l.mu is held.
func (l *capListener) stalled() *slotConn {
	var oldest *slotConn
	for c := range l.open {
		if !c.busy && (oldest == nil || c.seq < oldest.seq) {
			oldest = c
		}
	}
	return oldest
}

// slotConn is a connection that holds a slot until it is closed. seq and
// busy are guarded by the listener's mu.
type slotConn struct {
	net.Conn
	l    *capListener
	seq  uint64 // when it was accepted, or answered its last request
	busy bool   // its request is read whole and being handled
}

// Close gives the slot back, before the client can see the connection
// closed.
func (c *slotConn) Close() error {
	c.l.mu.Lock()
	delete(c.l.open, c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// read marks c's request read whole: c is not closed for a new one while
// it is handled.
func (c *slotConn) read() {
	c.l.mu.Lock()
	c.busy = true
	c.l.mu.Unlock()
}

// served marks c's request handled: c waits for its next one from now on.
func (c *slotConn) served() {
	c.l.mu.Lock()
	c.busy = false
	c.l.seq++
	c.seq = c.l.seq
	c.l.mu.Unlock()
}

// slotKey is the context key of a request's slotConn.
type slotKey struct{}

// connContext is the http.Server's ConnContext: it gives each request's
// context the slot of its connection (under TLS, of the connection
// beneath).
func (l *capListener) connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if sc, ok := c.(*slotConn); ok {
		return context.WithValue(ctx, slotKey{}, sc)
	}
	return ctx
}

// track wraps h so that the listener knows when a request's body has been
// read to its end (the connection is then busy, not stalled) and when its
// answer is done.
func (l *capListener) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := r.Context().Value(slotKey{}).(*slotConn)
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		defer c.served()
		if r.Body == nil || r.Body == http.NoBody {
			c.read()
		} else {
			r.Body = &trackedBody{ReadCloser: r.Body, c: c}
		}
		h.ServeHTTP(w, r)
	})
}

// trackedBody marks its connection busy once the body is read to its end.
type trackedBody struct {
	io.ReadCloser
	c *slotConn
}

// Read reads the body, marking the connection busy at its end.
func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.c.read()
	}
	return n, err
}

// writeMetrics writes the connection counts in the Prometheus text format.
func (l *capListener) writeMetrics(w io.Writer) {
	l.mu.Lock()
	open := len(l.open)
	l.mu.Unlock()
	for _, v := range []struct {
		name, kind, help string
		v                int64
	}{
		{"cpid_webhook_connections", "gauge", "Connections open now.", int64(open)},
		{"cpid_webhook_connections_evicted_total", "counter", "Connections closed for a new one at --max-conns: each the one open longest without completing a request.", l.evicted.Load()},
		{"cpid_webhook_connections_refused_total", "counter", "New connections closed at once: --max-conns were open, each handling a request read whole.", l.refused.Load()},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", v.name, v.help, v.name, v.kind, v.name, v.v)
	}
}
