package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/cpid-dev/cpid"
)

// bodyChecker checks, as each batch is written, that the bodies and log
// fields of its records are those of their lines in the input: the
// buffers records point into are reused once their batches are written
// (chunkBuf), so one given back too soon shows here as another line's
// bytes.
type bodyChecker struct {
	t      *testing.T
	lines  map[cpid.Pos][]byte    // the input's lines
	bodies map[cpid.Pos][3][]byte // their audit events' bodies, compacted (wantBodies)
	n      int
}

// wantBodies returns the request, response and status bodies of an audit
// event's line, compacted as ingest stores them (nil for none or null).
func wantBodies(line []byte) ([3][]byte, error) {
	var ev struct{ RequestObject, ResponseObject, ResponseStatus json.RawMessage }
	var out [3][]byte
	if err := json.Unmarshal(line, &ev); err != nil {
		return out, err
	}
	for i, b := range []json.RawMessage{ev.RequestObject, ev.ResponseObject, ev.ResponseStatus} {
		if b != nil && string(b) != "null" {
			var c bytes.Buffer
			json.Compact(&c, b)
			out[i] = c.Bytes()
		}
	}
	return out, nil
}

func (c *bodyChecker) Write(_ context.Context, b *cpid.Batch) (cpid.Written, error) {
	for _, a := range b.Audits {
		if a.Redacted {
			continue
		}
		want, ok := c.bodies[a.Pos]
		if !ok {
			var err error
			if want, err = wantBodies(c.lines[a.Pos]); err != nil {
				c.t.Fatalf("%s: %v", a.Pos, err)
			}
			c.bodies[a.Pos] = want
		}
		for i, p := range [][2][]byte{{a.RequestObject, want[0]}, {a.ResponseObject, want[1]}, {a.ResponseStatus, want[2]}} {
			if !bytes.Equal(p[0], p[1]) {
				c.t.Errorf("%s: body %d is %.80q, the line has %.80q", a.Pos, i, p[0], p[1])
			}
			c.n += len(p[0])
		}
	}
	for _, l := range b.Logs {
		var want map[string]json.RawMessage
		var got map[string]json.RawMessage
		json.Unmarshal(c.lines[l.Pos], &want)
		if err := json.Unmarshal(l.Fields, &got); err != nil || len(got) != len(want) {
			c.t.Errorf("%s: fields %.80q, the line has %d keys", l.Pos, l.Fields, len(want))
		}
	}
	return cpid.Written{Audits: len(b.Audits), Logs: len(b.Logs)}, nil
}

// TestChunkBuffersReused: with batches smaller than a chunk and larger,
// every record's bytes are its line's when its batch is written.
func TestChunkBuffersReused(t *testing.T) {
	dirs := []string{"../fixtures/basic/bundle", "../fixtures/load/bundle/audit"}
	lines := map[cpid.Pos][]byte{}
	w := Walker{}
	for _, d := range dirs {
		files, err := w.Files([]string{d})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			err := w.Read(context.Background(), f, func(s Stream) error {
				sc := bufio.NewScanner(s.R)
				sc.Buffer(nil, 64<<20)
				for n := 1; sc.Scan(); n++ {
					lines[cpid.Pos{File: s.Name, Line: n}] = bytes.Clone(sc.Bytes())
				}
				return sc.Err()
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	bodies := map[cpid.Pos][3][]byte{} // decoded by the first run, compared by both
	for _, size := range []int{7, 5000} {
		c := &bodyChecker{t: t, lines: lines, bodies: bodies}
		sum, err := (&Ingester{Sink: c, BatchSize: size}).Run(context.Background(), dirs)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Written.Audits < 20000 || c.n < 50<<20 {
			t.Errorf("batches of %d: %d events, %d bytes of bodies checked", size, sum.Written.Audits, c.n)
		}
	}
}
