package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/cpid-dev/cpid/sqlite"
	"github.com/cpid-dev/cpid/storetest"
)

// TestConformance runs the engines' conformance suite against SQLite: what
// it reads of every recorded fixture equals storetest's golden files.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Engine {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cpid.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s.InCluster("")
	})
}
