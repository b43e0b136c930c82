package ingest

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCapListener: at the cap, a new connection closes the open one that
// has waited longest without completing a request (since it was accepted,
// or answered its last one); a connection whose request was read whole is
// not closed while it is handled, and when every open one is, the new
// connection is closed at once.
func TestCapListener(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var notices []string
	cl := newCapListener(ln, 2, func(n Notice) { mu.Lock(); notices = append(notices, n.Reason); mu.Unlock() })
	defer cl.Close()
	accepted := make(chan *slotConn)
	go func() {
		for {
			c, err := cl.Accept()
			if err != nil {
				return
			}
			accepted <- c.(*slotConn)
		}
	}()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	closed := func(name string, c net.Conn) {
		t.Helper()
		if out, closed := readConn(t, c); !closed || out != "" {
			t.Errorf("%s: closed %v, read %q; want closed", name, closed, out)
		}
	}
	dial()
	b := dial()
	sa, sb := <-accepted, <-accepted
	sa.read() // both requests read whole, being handled
	sb.read()
	closed("a new connection while every open one is busy", dial())
	if n := cl.refused.Load(); n != 1 {
		t.Errorf("%d refused, want 1", n)
	}

	sb.served() // b waits for its next request: it may be closed
	d := dial()
	sd := <-accepted
	closed("the one not busy", b)
	sa.served() // a answered after d came: d has waited longer
	dial()
	<-accepted
	closed("the one waiting longest", d)
	cl.mu.Lock()
	_, aOpen := cl.open[sa]
	_, dOpen := cl.open[sd]
	cl.mu.Unlock()
	if !aOpen || dOpen || cl.evicted.Load() != 2 {
		t.Errorf("a open %v, d open %v, %d evicted; want a open, d closed, 2 evicted", aOpen, dOpen, cl.evicted.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notices) != 2 || !strings.Contains(notices[0], "closing new ones") || !strings.Contains(notices[1], "waited longest") {
		t.Errorf("notices %q: want the refusal, then the closing of stalled ones, each once", notices)
	}
}

// readConn reads c to its end and says whether it was closed: a read
// still blocked when the test binary's -timeout is near fails the test
// as c left open, instead of its timeout.
func readConn(t *testing.T, c net.Conn) (string, bool) {
	t.Helper()
	if end, bounded := t.Deadline(); bounded {
		c.SetReadDeadline(end.Add(-30 * time.Second))
	}
	b, err := io.ReadAll(c)
	var ne net.Error
	timedOut := err != nil && errors.As(err, &ne) && ne.Timeout()
	return string(b), !timedOut
}
