package main

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/cpid-dev/cpid/ingest"
)

// capListener closes at once each connection beyond its cap (--max-conns):
// a flood of idle or slow clients cannot pile up, and kube-apiserver
// retries a post whose connection was closed.
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

// writeMetrics writes the connection counts in the Prometheus text format.
func (l *capListener) writeMetrics(w io.Writer) {
	for _, v := range []struct {
		name, kind, help string
		v                int64
	}{
		{"cpid_webhook_connections", "gauge", "Connections open now.", int64(len(l.slots))},
		{"cpid_webhook_connections_refused_total", "counter", "Connections closed at once: --max-conns were open.", l.refused.Load()},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", v.name, v.help, v.name, v.kind, v.name, v.v)
	}
}
