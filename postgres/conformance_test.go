package postgres_test

import (
	"context"
	"testing"

	"github.com/cpid-dev/cpid/postgres"
	"github.com/cpid-dev/cpid/postgres/pgtest"
	"github.com/cpid-dev/cpid/storetest"
)

// TestConformance runs the engines' conformance suite against a real
// PostgreSQL server (pgtest's): what it reads of every recorded fixture
// equals storetest's golden files, byte for byte as SQLite does.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Engine {
		s, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s.InCluster("")
	})
}
