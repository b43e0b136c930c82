package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/plugin/pkg/audit/webhook"
)

// startServe runs `cpid-tui serve` in this process on a free loopback
// address with a fresh database in t.TempDir(), until the test ends.
func startServe(t *testing.T, args ...string) (addr, db string, stderr *syncBuffer) {
	t.Helper()
	db = filepath.Join(t.TempDir(), "cpid.db")
	addr = freeAddr(t)
	stderr = &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr},
			append([]string{"serve", "--db", db, "--listen", addr, "--reconstruct-every", "0"}, args...))
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("serve stderr (last 4 KB): %s", tail(stderr.String(), 4096))
		}
	})
	waitUntil(t, "serve to listen on "+addr, func() bool {
		select {
		case code := <-done:
			done <- code
			t.Fatalf("serve exited with %d before listening: %s", code, stderr.String())
		default:
		}
		// The probe reads until serve closes it: its connection no longer
		// counts against --max-conns when startServe returns.
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.(*net.TCPConn).CloseWrite()
			io.Copy(io.Discard, c)
			c.Close()
		}
		return err == nil
	}, nil)
	return addr, db, stderr
}

// eventList is an EventList body of the items, each a JSON value.
func eventList(items ...string) []byte {
	return []byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[` + strings.Join(items, ",") + `]}`)
}

// goodEvents are n of the real fixture's events with the auditIDs
// tortureID(from) and on.
func goodEvents(t *testing.T, from, n int) []string {
	t.Helper()
	var out []string
	err := tortureLines(from+n, func(i int, l []byte) error {
		if i >= from {
			out = append(out, string(bytes.TrimSpace(l)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func post(t *testing.T, c *http.Client, url, contentType string, body io.Reader) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func metricsText(t *testing.T, c *http.Client, base string) string {
	t.Helper()
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestServeRefusesOpenListener: without authentication, or without TLS,
// serve does not listen beyond loopback, and says which flag would let it.
func TestServeRefusesOpenListener(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	os.WriteFile(token, []byte("s3cret\n"), 0o600)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"all interfaces, no authentication", []string{"--listen", "0.0.0.0:0"}, "without authentication"},
		{"no host, no authentication", []string{"--listen", ":0"}, "without authentication"},
		{"a token over plain HTTP", []string{"--listen", "0.0.0.0:0", "--token-file", token}, "without TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Before serve refused, it ran until this context ended.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var stderr bytes.Buffer
			code := run(ctx, &env{stdout: io.Discard, stderr: &stderr},
				append([]string{"serve", "--db", filepath.Join(t.TempDir(), "cpid.db"), "--reconstruct-every", "0"}, tc.args...))
			if code != 1 || !strings.Contains(stderr.String(), tc.want) || !strings.Contains(stderr.String(), "--insecure") {
				t.Errorf("exit %d, stderr %q: want exit 1 and an error naming --insecure (%s)", code, stderr.String(), tc.want)
			}
			if strings.Contains(stderr.String(), "listening") {
				t.Error("serve listened")
			}
		})
	}
}

// TestServeContentType: only the media type application/json, with no
// charset or utf-8, is accepted.
func TestServeContentType(t *testing.T) {
	addr, _, _ := startServe(t)
	body := string(eventList(goodEvents(t, 0, 1)...))
	for _, tc := range []struct {
		ct   string
		want int
	}{
		{"application/json", 200},
		{"application/json; charset=utf-8", 200},
		{"Application/JSON; charset=\"UTF-8\"", 200},
		{"text/plain; charset=json", 415},
		{"application/json; charset=latin1", 415},
		{"application/jsonl", 415},
		{"application/x-json+json", 415},
		{"application/json;;", 415},
		{"", 415},
	} {
		if code, _, msg := post(t, http.DefaultClient, "http://"+addr+"/", tc.ct, strings.NewReader(body)); code != tc.want {
			t.Errorf("Content-Type %q: %d %q, want %d", tc.ct, code, msg, tc.want)
		}
	}
}

// TestServeBadEventsInBatch: the bad events of a batch are skipped,
// counted and reported with their index; the good ones are stored and the
// answer is 200. Only a body that is not an EventList gets 400.
func TestServeBadEventsInBatch(t *testing.T) {
	addr, db, stderr := startServe(t)
	url := "http://" + addr + "/"
	items := goodEvents(t, 0, 100)
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	items[3] = `null`
	items[57] = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"deep","stage":"ResponseComplete",` +
		`"verb":"create","requestReceivedTimestamp":"2025-01-01T00:00:00.000000Z","stageTimestamp":"2025-01-01T00:00:00.000000Z","requestObject":` + deep + `}`
	items[80] = `{"auditID":5}`
	if code, _, msg := post(t, http.DefaultClient, url, "application/json", bytes.NewReader(eventList(items...))); code != 200 {
		t.Fatalf("a batch with 3 bad events of 100: %d %q, want 200", code, msg)
	}
	ids, rows, _, _, _ := storedIDs(t, db)
	for i := range items {
		if want := i != 3 && i != 57 && i != 80; (ids[tortureID(i)] == 1) != want {
			t.Errorf("event %d stored %d times, want stored: %v", i, ids[tortureID(i)], want)
		}
	}
	if rows != 97 {
		t.Errorf("%d rows, want 97", rows)
	}
	if m := metricsText(t, http.DefaultClient, "http://"+addr); !strings.Contains(m, "cpid_webhook_bad_lines_total 3\n") ||
		!strings.Contains(m, "cpid_webhook_lines_total 100\n") {
		t.Errorf("metrics do not count 100 events, 3 bad:\n%s", m)
	}
	for _, i := range []int{3, 57, 80} {
		if !strings.Contains(stderr.String(), fmt.Sprintf("event %d of the batch", i)) {
			t.Errorf("the log does not report event %d", i)
		}
	}

	// The members of an EventList may come in any order.
	more := goodEvents(t, 100, 2)
	body := `{"items":[` + strings.Join(more, ",") + `],"apiVersion":"audit.k8s.io/v1","kind":"EventList"}`
	if code, _, msg := post(t, http.DefaultClient, url, "application/json", strings.NewReader(body)); code != 200 {
		t.Errorf("items before kind: %d %q, want 200", code, msg)
	}
	if ids, _, _, _, _ := storedIDs(t, db); ids[tortureID(100)] != 1 || ids[tortureID(101)] != 1 {
		t.Errorf("items before kind were not stored")
	}

	for name, body := range map[string]string{
		"not an object":       `[1,2]`,
		"another kind":        `{"kind":"Pod","apiVersion":"v1","items":[]}`,
		"another apiVersion":  `{"kind":"EventList","apiVersion":"audit.k8s.io/v1beta1","items":[]}`,
		"one Event":           more[0],
		"items not an array":  `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":{}}`,
		"kind twice":          `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","kind":"EventList","items":[]}`,
		"truncated":           string(eventList(more...))[:200],
		"data after the list": string(eventList()) + `{}`,
		"empty":               ``,
	} {
		if code, _, msg := post(t, http.DefaultClient, url, "application/json", strings.NewReader(body)); code != 400 {
			t.Errorf("%s: %d %q, want 400", name, code, msg)
		}
	}
}

// rawPost sends the headers of a POST of n bytes and the first bytes of
// its body, and returns the connection, open.
func rawPost(t *testing.T, addr string, n int, first string, header string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s", addr, n, header, first)
	return c
}

// TestServeBudget: the bytes of the bodies being read are reserved in one
// budget; a request beyond it gets 503 with Retry-After, which the
// apiserver retries, and is accepted once the budget has room again.
func TestServeBudget(t *testing.T) {
	addr, _, _ := startServe(t, "--max-body", "1000000", "--body-budget", "1000000")
	url := "http://" + addr + "/"
	body := eventList(goodEvents(t, 0, 1)...)
	const n = 700000
	body = append(body, bytes.Repeat([]byte(" "), n-len(body))...)

	// The first request holds its 700,000 bytes: serve answers 100
	// Continue when its handler, the budget taken, first reads the body.
	held := rawPost(t, addr, n, "", "Expect: 100-continue\r\n")
	r := bufio.NewReader(held)
	held.SetReadDeadline(nearTimeout(t)) // a failure, not the test's timeout
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("want 100 Continue, got %q, %v", line, err)
	}
	r.ReadString('\n')

	code, h, msg := post(t, http.DefaultClient, url, "application/json", bytes.NewReader(body))
	if code != 503 || h.Get("Retry-After") == "" {
		t.Errorf("a known length beyond the budget: %d %q, Retry-After %q; want 503 with Retry-After", code, msg, h.Get("Retry-After"))
	}
	// A chunked body is charged as it is read.
	code, h, msg = post(t, http.DefaultClient, url, "application/json", io.MultiReader(bytes.NewReader(body)))
	if code != 503 || h.Get("Retry-After") == "" {
		t.Errorf("a chunked body beyond the budget: %d %q, Retry-After %q; want 503 with Retry-After", code, msg, h.Get("Retry-After"))
	}
	code, _, msg = post(t, http.DefaultClient, url, "application/json", bytes.NewReader(append(body, make([]byte, 400000)...)))
	if code != 413 {
		t.Errorf("a body beyond --max-body: %d %q, want 413", code, msg)
	}

	held.Write(body)
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the held request: %v %v, want 200", resp, err)
	}
	if code, _, msg := post(t, http.DefaultClient, url, "application/json", bytes.NewReader(body)); code != 200 {
		t.Errorf("once the budget has room: %d %q, want 200", code, msg)
	}
	if m := metricsText(t, http.DefaultClient, "http://"+addr); !strings.Contains(m, "cpid_webhook_busy_total 2\n") ||
		!strings.Contains(m, "cpid_webhook_body_bytes 0\n") {
		t.Errorf("metrics:\n%s", m)
	}
}

// readAll reads c until it is closed, and reports what it read and
// whether it was closed. It has no deadline of its own, so that a loaded
// machine makes a test slower, never red: it stops reading when the test
// binary's -timeout is near (nearTimeout), and then reports c open.
func readAll(t *testing.T, c net.Conn) (string, bool) {
	c.SetReadDeadline(nearTimeout(t))
	b, err := io.ReadAll(c)
	var ne net.Error
	timedOut := err != nil && errors.As(err, &ne) && ne.Timeout()
	return string(b), !timedOut
}

// TestServeTimeouts: a body that stops coming and an idle keep-alive
// connection are closed by serve, not kept open forever.
func TestServeTimeouts(t *testing.T) {
	addr, _, _ := startServe(t, "--read-timeout", "1s", "--idle-timeout", "1s")
	slow := rawPost(t, addr, 1000, `{"kind":"Ev`, "")
	// Before serve had a read timeout, the connection stayed open until
	// the test binary's -timeout was near (only the headers were timed).
	if out, closed := readAll(t, slow); !closed {
		t.Errorf("a body that stopped coming: the connection is still open (read %q)", out)
	}

	body := eventList(goodEvents(t, 0, 1)...)
	idle := rawPost(t, addr, len(body), string(body), "")
	if out, closed := readAll(t, idle); !closed || !strings.HasPrefix(out, "HTTP/1.1 200") {
		t.Errorf("an idle keep-alive connection: closed %v after %q; want 200, then closed", closed, out)
	}
}

// TestServeConnectionCap: at --max-conns, a new connection closes the one
// that has waited longest without completing a request, so that
// connections stalled in their headers or body (a slow loris) cannot lock
// a real sender out. Before, the new connection was closed at once, without
// an answer, until a stalled one reached --read-timeout (a minute).
func TestServeConnectionCap(t *testing.T) {
	addr, db, _ := startServe(t, "--max-conns", "4")
	// Eight connections stall, in turn in their headers and in their body:
	// the last four to come hold the cap.
	var stalled []net.Conn
	for i := range 8 {
		if i%2 == 0 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Ty", addr)
			stalled = append(stalled, c)
		} else {
			stalled = append(stalled, rawPost(t, addr, 1000, `{"kind":"Ev`, ""))
		}
	}
	// One connection, kept alive: the metrics come on the post's.
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", bytes.NewReader(eventList(goodEvents(t, 0, 1)...)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("a real post beside %d stalled connections: %v", len(stalled), err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a real post beside %d stalled connections: %d, want 200", len(stalled), resp.StatusCode)
	}
	if ids, _, _, _, _ := storedIDs(t, db); ids[tortureID(0)] != 1 {
		t.Errorf("the post's event is stored %d times, want 1", ids[tortureID(0)])
	}
	// The first five stalled connections were closed, the oldest first,
	// one for each that came after them.
	for i, c := range stalled[:5] {
		if out, closed := readAll(t, c); !closed {
			t.Errorf("stalled connection %d: still open (read %q)", i, out)
		}
	}
	m := metricsText(t, client, "http://"+addr)
	for _, want := range []string{"cpid_webhook_connections_evicted_total 5\n", "cpid_webhook_connections_refused_total 0\n", "cpid_webhook_connections 4\n"} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q:\n%s", want, m)
		}
	}
}

// TestServeAllowCN: with --allow-cn, a certificate of the CA authenticates
// only when its subject CN is one of them.
func TestServeAllowCN(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(p.ca)
	pool.AppendCertsFromPEM(caPEM)
	pair, err := tls.LoadX509KeyPair(p.clientCert, p.clientKey) // CN kube-apiserver
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}}}
	defer client.CloseIdleConnections()
	body := eventList(goodEvents(t, 0, 1)...)
	for _, tc := range []struct {
		name string
		cns  []string
		want int
	}{
		{"another CN", []string{"someone-else"}, 401},
		{"its CN", []string{"someone-else", "kube-apiserver"}, 200},
		{"no --allow-cn", nil, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--tls-cert", p.serverCert, "--tls-key", p.serverKey, "--client-ca", p.ca}
			for _, cn := range tc.cns {
				args = append(args, "--allow-cn", cn)
			}
			addr, _, _ := startServe(t, args...)
			if code, _, msg := post(t, client, "https://"+addr+"/", "application/json", bytes.NewReader(body)); code != tc.want {
				t.Errorf("%d %q, want %d", code, msg, tc.want)
			}
		})
	}
}

// TestServeBusyWebhookRetries: the real webhook backend of k8s.io/apiserver
// (client-go underneath) is answered 503 with Retry-After while the budget
// is full, waits as told and posts again, and its batch is stored. Its own
// backoff here gives up after 2 quick attempts: only the Retry-After that
// client-go honours keeps the batch alive while the budget is held.
func TestServeBusyWebhookRetries(t *testing.T) {
	addr, db, _ := startServe(t, "--max-body", "1000000", "--body-budget", "1000000")
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "webhook.kubeconfig")
	os.WriteFile(kubeconfig, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: cpid
  cluster: {server: "http://%s/audit"}
users:
- name: kube-apiserver
  user: {}
contexts:
- name: default
  context: {cluster: cpid, user: kube-apiserver}
current-context: default
`, addr), 0o600)
	var events []*auditinternal.Event
	for i, l := range goodEvents(t, 0, 5) {
		var v1 auditv1.Event
		if err := json.Unmarshal([]byte(l), &v1); err != nil {
			t.Fatal(err)
		}
		var ev auditinternal.Event
		if err := audit.Scheme.Convert(&v1, &ev, nil); err != nil {
			t.Fatal(err)
		}
		ev.AuditID = types.UID(tortureID(i))
		events = append(events, &ev)
	}
	wb, err := webhook.NewBackend(kubeconfig, auditv1.SchemeGroupVersion, wait.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}

	// A request holds the whole budget (see TestServeBudget).
	const n = 1000000
	body := eventList()
	body = append(body, bytes.Repeat([]byte(" "), n-len(body))...)
	held := rawPost(t, addr, n, "", "Expect: 100-continue\r\n")
	r := bufio.NewReader(held)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("want 100 Continue, got %q, %v", line, err)
	}
	r.ReadString('\n')

	sent := make(chan bool, 1)
	go func() { sent <- wb.ProcessEvents(events...) }()
	for !strings.Contains(metricsText(t, http.DefaultClient, "http://"+addr), "cpid_webhook_busy_total 1\n") {
		select {
		case ok := <-sent:
			t.Fatalf("the backend returned (%v) before it was answered 503", ok)
		case <-time.After(20 * time.Millisecond):
		}
	}
	held.Write(body)
	if resp, err := http.ReadResponse(r, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the held request: %v %v, want 200", resp, err)
	}
	if !<-sent {
		t.Fatal("the webhook backend gave up on its batch")
	}
	ids, _, _, _, _ := storedIDs(t, db)
	for i := range events {
		if ids[tortureID(i)] != 1 {
			t.Errorf("event %d stored %d times, want 1", i, ids[tortureID(i)])
		}
	}
}
