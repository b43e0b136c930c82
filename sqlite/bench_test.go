package sqlite

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
)

// fixtureEvents decodes every audit event of the real fixture.
func fixtureEvents(b *testing.B) []cpid.AuditEvent {
	b.Helper()
	files, _ := filepath.Glob("../fixtures/basic/bundle/audit/*")
	var evs []cpid.AuditEvent
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			b.Fatal(err)
		}
		var r io.Reader = fh
		if filepath.Ext(f) == ".gz" {
			if r, err = gzip.NewReader(fh); err != nil {
				b.Fatal(err)
			}
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			e, err := ingest.DecodeAudit(sc.Bytes())
			if err != nil {
				b.Fatal(err)
			}
			evs = append(evs, e...)
		}
		fh.Close()
	}
	return evs
}

// BenchmarkWrite measures the store alone: batches of 5000 real-shaped audit
// events, each with a fresh hash, one transaction per batch.
func BenchmarkWrite(b *testing.B) {
	evs := fixtureEvents(b)
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	batch := &cpid.Batch{}
	var bytes int64
	for _, e := range evs {
		bytes += int64(len(e.RequestObject) + len(e.ResponseObject) + len(e.RequestURI) + len(e.UserAgent) + 200)
	}
	b.SetBytes(bytes / int64(len(evs)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := evs[i%len(evs)]
		binary.LittleEndian.PutUint64(e.Hash[:], uint64(i))
		batch.Audits = append(batch.Audits, cpid.Audit{AuditEvent: e, Pos: cpid.Pos{File: "bench", Line: i}})
		if len(batch.Audits) == 5000 || i == b.N-1 {
			if _, err := s.Write(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
}

// BenchmarkBulkWrite measures the bulk load of a new file (OpenBulk) alone:
// batches of 5000 real-shaped audit events with bodies, each with a
// content hash in random order as real ones are, and the indexes built at
// the end (Finish) counted too.
func BenchmarkBulkWrite(b *testing.B) {
	evs := fixtureEvents(b)
	bk, err := OpenBulk(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	batch := &cpid.Batch{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := evs[i%len(evs)]
		h := sha256.Sum256(binary.LittleEndian.AppendUint64(nil, uint64(i)))
		copy(e.Hash[:], h[:])
		batch.Audits = append(batch.Audits, cpid.Audit{AuditEvent: e, Pos: cpid.Pos{File: "bench", Line: i}})
		if len(batch.Audits) == 5000 || i == b.N-1 {
			if _, err := bk.Write(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	if _, err := bk.Finish(context.Background()); err != nil {
		b.Fatal(err)
	}
}
