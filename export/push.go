package export

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Pusher sends traces to an OTLP/HTTP receiver (an OpenTelemetry
// Collector, Tempo, Jaeger v2...) as protobuf, POST to Endpoint.
//
// A request that fails with 429, 502, 503 or 504, or with no answer (the
// connection refused or cut, a timeout), is sent again after a backoff
// (Backoff, doubling up to MaxBackoff), or after what the receiver's
// Retry-After asks for when it asks (up to MaxBackoff), at most Attempts
// times in all; any other status fails at once, as the OTLP specification
// says.
type Pusher struct {
	// Endpoint is the URL requests go to (EndpointURL makes one).
	Endpoint string
	// Header is sent with every request (authentication, a tenant).
	Header http.Header
	// Client sends the requests; http.DefaultClient with Timeout when nil.
	Client *http.Client
	// Timeout bounds each request (30 s when 0).
	Timeout time.Duration
	// Attempts is how many times a request is sent at most (5 when 0).
	Attempts int
	// Backoff is the first wait between attempts (1 s when 0), MaxBackoff
	// the longest (30 s when 0).
	Backoff, MaxBackoff time.Duration
	// MaxSpans is how many spans one request holds at most (2,000 when
	// 0); a trace is never split.
	MaxSpans int
	// Sleep waits d or until ctx ends (a test seam: tests record the waits).
	Sleep func(ctx context.Context, d time.Duration) error
	// Retried, when set, is told of each attempt that will be retried.
	Retried func(attempt int, wait time.Duration, err error)
}

// Pushed counts what a push sent.
type Pushed struct {
	Requests, Traces, Spans int
	// Rejected is what receivers reported rejecting (OTLP partial
	// success), Message their last explanation.
	Rejected int64
	Message  string
}

// EndpointURL is the URL to push to: a URL with no path (or "/") gets
// OTLP/HTTP's /v1/traces, as OTEL_EXPORTER_OTLP_ENDPOINT does; one with a
// path is used as it is.
func EndpointURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("--otlp-endpoint %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("--otlp-endpoint %q: give an http:// or https:// URL, e.g. http://localhost:4318", s)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// Push sends traces, a batch of whole traces per request.
func (p *Pusher) Push(ctx context.Context, traces []Trace) (Pushed, error) {
	var n Pushed
	maxSpans := p.MaxSpans
	if maxSpans <= 0 {
		maxSpans = 2000
	}
	for start := 0; start < len(traces); {
		end, spans := start, 0
		for end < len(traces) && (end == start || spans+len(traces[end].Spans) <= maxSpans) {
			spans += len(traces[end].Spans)
			end++
		}
		rejected, msg, err := p.send(ctx, traces[start:end])
		if err != nil {
			return n, err
		}
		n.Requests++
		n.Traces += end - start
		n.Spans += spans
		n.Rejected += rejected
		if msg != "" {
			n.Message = msg
		}
		start = end
	}
	return n, nil
}

// errRetry marks a failure worth another attempt; wait is what the
// receiver asked for (0: the backoff decides).
type errRetry struct {
	err  error
	wait time.Duration
}

func (e *errRetry) Error() string { return e.err.Error() }
func (e *errRetry) Unwrap() error { return e.err }

func (p *Pusher) send(ctx context.Context, traces []Trace) (int64, string, error) {
	body, err := proto.Marshal(Proto(traces))
	if err != nil {
		return 0, "", fmt.Errorf("otlp: encode: %w", err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(body)
	if err := zw.Close(); err != nil {
		return 0, "", err
	}
	attempts := p.Attempts
	if attempts <= 0 {
		attempts = 5
	}
	backoff, maxBackoff := p.Backoff, p.MaxBackoff
	if backoff <= 0 {
		backoff = time.Second
	}
	if maxBackoff <= 0 {
		maxBackoff = 30 * time.Second
	}
	sleep := p.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	for attempt := 1; ; attempt++ {
		rejected, msg, err := p.post(ctx, z.Bytes())
		var retry *errRetry
		if err == nil || !errors.As(err, &retry) || ctx.Err() != nil {
			return rejected, msg, err
		}
		if attempt >= attempts {
			return 0, "", fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
		}
		wait := backoff
		if retry.wait > 0 {
			wait = retry.wait
		}
		wait = min(wait, maxBackoff)
		if p.Retried != nil {
			p.Retried(attempt, wait, err)
		}
		if err := sleep(ctx, wait); err != nil {
			return 0, "", err
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// post sends one request.
func (p *Pusher) post(ctx context.Context, body []byte) (int64, string, error) {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, p.Endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, "", fmt.Errorf("otlp: %w", err)
	}
	for k, vs := range p.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "gzip")
	c := p.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, "", ctx.Err()
		}
		return 0, "", &errRetry{err: fmt.Errorf("otlp: push to %s: %w", p.Endpoint, err)}
	}
	defer resp.Body.Close()
	// A 200 is the receiver taking the data: what it says with it (a
	// partial success) is read if it can be.
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusOK:
		rejected, msg := partialSuccess(answer)
		return rejected, msg, nil
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return 0, "", &errRetry{err: fmt.Errorf("otlp: push to %s: %s%s", p.Endpoint, resp.Status, statusMessage(resp, answer)),
			wait: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	return 0, "", fmt.Errorf("otlp: push to %s: %s%s", p.Endpoint, resp.Status, statusMessage(resp, answer))
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// partialSuccess reads an ExportTraceServiceResponse (protobuf):
// partial_success (1) { rejected_spans (1), error_message (2) }.
func partialSuccess(b []byte) (int64, string) {
	ps := field(b, 1, protowire.BytesType)
	if ps == nil {
		return 0, ""
	}
	var rejected int64
	if v := field(ps, 1, protowire.VarintType); v != nil {
		n, _ := protowire.ConsumeVarint(v)
		rejected = int64(n)
	}
	return rejected, string(field(ps, 2, protowire.BytesType))
}

// field is the last value of field num of type typ in message b (a varint
// still encoded), nil when absent or b is not protobuf.
func field(b []byte, num protowire.Number, typ protowire.Type) []byte {
	var out []byte
	for len(b) > 0 {
		n, t, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil
		}
		b = b[l:]
		var v []byte
		switch t {
		case protowire.BytesType:
			x, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil
			}
			v, l = x, m
		default:
			l = protowire.ConsumeFieldValue(n, t, b)
			if l < 0 {
				return nil
			}
			v = b[:l]
		}
		if n == num && t == typ {
			out = v
		}
		b = b[l:]
	}
	return out
}

// statusMessage is what a failed answer says: a google.rpc.Status's
// message (2) when it is protobuf, else the text, short.
func statusMessage(resp *http.Response, b []byte) string {
	msg := ""
	if strings.Contains(resp.Header.Get("Content-Type"), "protobuf") {
		msg = string(field(b, 2, protowire.BytesType))
	} else {
		msg = strings.TrimSpace(string(b))
	}
	// The answer is the receiver's text: no control characters on our
	// terminal.
	msg = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return ' '
		}
		return r
	}, msg)
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	if msg == "" {
		return ""
	}
	return ": " + msg
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
