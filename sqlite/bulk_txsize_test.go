package sqlite

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cpid-dev/cpid"
)

// BenchmarkWriteTxSize measures what a live writer (the tailer) pays per
// event by the size of its transactions: real-shaped audit events with
// content hashes in random order, as real ones are, into a database that
// keeps its indexes (not a bulk load). A transaction costs about the
// index pages it touches whatever its size, so small ones cost more per
// event (ingest.Tailer.CommitEvery). cpu-ns/event is the process's CPU
// time, which a loaded machine distorts less than ns/op. go/ is the
// pure-Go SQLite, c/ SQLite in C (cpid.Native, as cpid-tui tail opens its
// database in a cgo build: rows by the batch).
func BenchmarkWriteTxSize(b *testing.B) {
	evs := fixtureEvents(b)
	engines := map[string][]cpid.OpenOption{"go": nil}
	if haveC {
		engines["c"] = []cpid.OpenOption{cpid.Native()}
	}
	for name, opts := range engines {
		for _, size := range []int{200, 2000, 5000, 20000} {
			b.Run(fmt.Sprintf("%s/%d", name, size), func(b *testing.B) {
				s, err := Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				batch := &cpid.Batch{}
				cpu0 := cpuNS()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					e := evs[i%len(evs)]
					h := sha256.Sum256(binary.LittleEndian.AppendUint64(nil, uint64(i)))
					copy(e.Hash[:], h[:])
					batch.Audits = append(batch.Audits, cpid.Audit{AuditEvent: e, Pos: cpid.Pos{File: "bench", Line: i}})
					if len(batch.Audits) == size || i == b.N-1 {
						if _, err := s.Write(context.Background(), batch); err != nil {
							b.Fatal(err)
						}
						batch.Reset()
					}
				}
				b.ReportMetric(float64(cpuNS()-cpu0)/float64(b.N), "cpu-ns/event")
			})
		}
	}
}

// cpuNS is the CPU time of the process so far, user and system, in ns.
func cpuNS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
