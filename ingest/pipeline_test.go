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
	t     *testing.T
	lines map[cpid.Pos][]byte // the input's lines
	n     int
}

func (c *bodyChecker) Write(_ context.Context, b *cpid.Batch) (cpid.Written, error) {
	for _, a := range b.Audits {
		if a.Redacted {
			continue
		}
		var ev struct{ RequestObject, ResponseObject, ResponseStatus json.RawMessage }
		if err := json.Unmarshal(c.lines[a.Pos], &ev); err != nil {
			c.t.Fatalf("%s: %v", a.Pos, err)
		}
		for i, p := range [][2][]byte{{a.RequestObject, ev.RequestObject}, {a.ResponseObject, ev.ResponseObject}, {a.ResponseStatus, ev.ResponseStatus}} {
			var want bytes.Buffer
			if p[1] != nil && string(p[1]) != "null" {
				json.Compact(&want, p[1])
			}
			if !bytes.Equal(p[0], want.Bytes()) {
				c.t.Errorf("%s: body %d is %.80q, the line has %.80q", a.Pos, i, p[0], want.Bytes())
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
	for _, size := range []int{7, 5000} {
		c := &bodyChecker{t: t, lines: lines}
		sum, err := (&Ingester{Sink: c, BatchSize: size}).Run(context.Background(), dirs)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Written.Audits < 20000 || c.n < 50<<20 {
			t.Errorf("batches of %d: %d events, %d bytes of bodies checked", size, sum.Written.Audits, c.n)
		}
	}
}
