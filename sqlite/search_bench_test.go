package sqlite

import (
	"os"
	"testing"

	"github.com/cpid-dev/cpid"
)

// BenchmarkFilterReads measures, on the database named by CPID_BENCH_DB
// (the ten-million-event one of fixtures/bench10m.sh, opened read-only),
// what the terminal UI's filter runs at each key of the typing in
// BenchmarkBrowse (n, ns, n, nothing): the count of the changes it keeps
// and their first page; and history's search for its busiest object.
func BenchmarkFilterReads(b *testing.B) {
	path := os.Getenv("CPID_BENCH_DB")
	if path == "" {
		b.Skip("set CPID_BENCH_DB to a database to measure")
	}
	s, err := Open(b.Context(), path, cpid.ReadOnly())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for _, f := range []string{"n", "ns", "web", "y", "kwok", "409", "update", "zzz"} {
		b.Run("count-"+f, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.CountChanges(b.Context(), f); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("page-"+f, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Changes(b.Context(), cpid.ChangeQuery{Filter: f, Limit: 50}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("objects-node", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Objects(b.Context(), cpid.ObjectQuery{ResourceMatch: cpid.ResourceMatch{Resources: []string{"nodes"}}, Name: "kwok-node-0"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
