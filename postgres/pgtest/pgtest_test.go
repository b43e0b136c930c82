package pgtest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestServerCPU: the server's CPU grows by the work of a query its
// backend runs (cmd/tailbench reads it around a measurement), and keeps
// it once the backend's connection closed and the postmaster reaped it
// (its time is then in the postmaster's children's).
func TestServerCPU(t *testing.T) {
	t.Parallel()
	srv := StartTest(t)
	before, err := srv.CPU()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	var backend int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		t.Fatal(err)
	}
	// Work enough for many clock ticks on any machine: a sort of
	// millions of rows.
	var n int64
	if err := conn.QueryRow(ctx, `SELECT count(DISTINCT md5(i::text)) FROM generate_series(1, 2000000) i`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2000000 {
		t.Fatalf("the query counted %d", n)
	}
	open, err := srv.CPU()
	if err != nil {
		t.Fatal(err)
	}
	if open <= before {
		t.Fatalf("server CPU %v before a query that sorts two million rows, %v after", before, open)
	}
	conn.Close(ctx)
	// Reaped: gone from /proc (a zombie still has its entry).
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", backend)); os.IsNotExist(err) {
			break
		}
		runtime.Gosched()
	}
	closed, err := srv.CPU()
	if err != nil {
		t.Fatal(err)
	}
	if closed < open {
		t.Fatalf("server CPU %v with the backend running, %v once it exited: its time was lost", open, closed)
	}
	t.Logf("server CPU %v, %v with the query done, %v with its backend gone", before, open, closed)
}
