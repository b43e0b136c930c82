package postgres_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/postgres"
	"github.com/cpid-dev/cpid/postgres/pgtest"
	"github.com/cpid-dev/cpid/reconstruct"
	"github.com/jackc/pgx/v5"
)

var (
	benchSettings = flag.String("pg.settings", "fsync=on,full_page_writes=on,synchronous_commit=off",
		"BenchmarkFleetWrite: the server's settings, comma-separated (tailbench's by default)")
	benchReconstruct = flag.Duration("pg.reconstruct-every", 0,
		"BenchmarkFleetWrite: reconstruct each cluster this often beside the writes, as a tailer does (0: never)")
	benchExec = flag.String("pg.exec", "",
		"BenchmarkFleetWrite: SQL run on each new database before the writes (to measure what a constraint or an index costs)")
	benchStatements = flag.Bool("pg.statements", false,
		"BenchmarkFleetWrite: log the statements that took the server's time (pg_stat_statements, loaded at the server's start)")
)

// BenchmarkFleetWrite stores the audit events of the basic fixture, with
// fresh hashes, from 4 writers at once, one per cluster, into one database
// of a throwaway server started with -pg.settings: what the tailers of a
// fleet do. Each writer stores batches of the size of the sub-benchmark
// with one checkpoint, one after the other; an operation is one batch of
// each cluster. It reports events stored per second, all clusters
// together.
//
//	go test -run '^$' -bench FleetWrite -benchtime 20x ./postgres/
func BenchmarkFleetWrite(b *testing.B) {
	const clusters = 4
	audits := fixtureAudits(b)
	settings := strings.Split(*benchSettings, ",")
	if *benchStatements {
		settings = append(settings, "shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track=all")
	}
	srv := pgtest.StartTest(b, settings...)
	for _, size := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			dsn, err := srv.CreateDatabase(ctx, fmt.Sprintf("bench%d_%d", size, time.Now().UnixNano()))
			if err != nil {
				b.Fatal(err)
			}
			st, err := postgres.Open(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			if *benchExec != "" {
				if err := execSQL(ctx, dsn, *benchExec); err != nil {
					b.Fatal(err)
				}
			}
			// Each cluster's batches, built before the clock starts.
			batches := make([][]*cpid.Batch, clusters)
			for c := range clusters {
				for i := range b.N {
					batches[c] = append(batches[c], freshBatch(audits, c, i, size))
				}
			}
			var recon sync.WaitGroup
			if *benchReconstruct > 0 {
				for c := range clusters {
					recon.Go(func() {
						v := st.InCluster(fmt.Sprintf("c%d", c))
						t := time.NewTicker(*benchReconstruct)
						defer t.Stop()
						for {
							select {
							case <-ctx.Done():
								return
							case <-t.C:
							}
							if _, err := reconstruct.Run(ctx, v, reconstruct.Options{StepRows: reconstruct.LiveStepRows, Family: ingest.Family}); err != nil && ctx.Err() == nil {
								b.Error(err)
							}
						}
					})
				}
			}
			wal := walBytes(b, dsn)
			server := serverCPU(b, dsn)
			client := clientCPU()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for c := range clusters {
				wg.Go(func() {
					v := st.InCluster(fmt.Sprintf("c%d", c))
					for _, bt := range batches[c] {
						w, err := v.Write(ctx, bt)
						if err != nil {
							b.Error(err)
							return
						}
						if w.Audits != len(bt.Audits) {
							b.Errorf("stored %d of %d", w.Audits, len(bt.Audits))
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			cancel()
			recon.Wait()
			events := float64(clusters * size * b.N)
			b.ReportMetric(events/elapsed.Seconds(), "events/s")
			// CPU time per event tells what wall time cannot on a machine
			// that others load.
			b.ReportMetric(float64(server()/time.Microsecond)/events, "server-µs/event")
			b.ReportMetric(float64(client()/time.Microsecond)/events, "client-µs/event")
			b.ReportMetric(float64(wal())/events, "WAL-B/event")
			if *benchStatements && b.N > 1 {
				logStatements(b, dsn)
			}
		})
	}
}

// freshBatch is size events of audits from cluster c's i-th batch on, each
// with a hash of its own, and one checkpoint covering them.
func freshBatch(audits []cpid.Audit, c, i, size int) *cpid.Batch {
	bt := &cpid.Batch{}
	for j := range size {
		n := i*size + j
		a := audits[n%len(audits)]
		binary.BigEndian.PutUint32(a.Hash[8:], uint32(c))
		binary.BigEndian.PutUint32(a.Hash[12:], uint32(n))
		a.Line = n + 1
		bt.Audits = append(bt.Audits, a)
	}
	bt.Checkpoints = []cpid.Checkpoint{{Source: "audit.log", File: "audit.log", FingerprintLen: 64, Offset: int64(size * (i + 1)),
		Line: size * (i + 1), Audits: size, Lines: int64(size), NewestNS: bt.Audits[size-1].StageNS}}
	return bt
}

// fixtureAudits are the audit events of fixtures/basic, copied out of the
// ingester's buffers.
func fixtureAudits(tb testing.TB) []cpid.Audit {
	tb.Helper()
	var sink collect
	if _, err := (&ingest.Ingester{Sink: &sink}).Run(context.Background(), []string{"../fixtures/basic/bundle"}); err != nil {
		tb.Fatal(err)
	}
	if len(sink.audits) == 0 {
		tb.Fatal("no audit events in fixtures/basic")
	}
	for i := range sink.audits {
		sink.audits[i].File = "audit.log"
	}
	return sink.audits
}

// collect is a RecordWriter that keeps deep copies of the audit events.
type collect struct{ audits []cpid.Audit }

func (c *collect) Write(_ context.Context, b *cpid.Batch) (cpid.Written, error) {
	for _, a := range b.Audits {
		e := a.AuditEvent
		for _, s := range []*string{&e.AuditID, &e.Stage, &e.Level, &e.Verb, &e.RequestURI, &e.APIGroup, &e.APIVersion,
			&e.Resource, &e.Subresource, &e.Namespace, &e.Name, &e.UID, &e.ResourceVersion, &e.Username, &e.UserAgent,
			&e.CPID, &e.Traceparent, &a.File} {
			*s = strings.Clone(*s)
		}
		e.SourceIPs = cloneStrings(e.SourceIPs)
		e.CPIDAncestors = cloneStrings(e.CPIDAncestors)
		for _, r := range []*[]byte{(*[]byte)(&e.OwnerRefs), (*[]byte)(&e.Annotations), (*[]byte)(&e.ResponseStatus),
			(*[]byte)(&e.RequestObject), (*[]byte)(&e.ResponseObject)} {
			*r = bytes.Clone(*r)
		}
		c.audits = append(c.audits, cpid.Audit{AuditEvent: e, Pos: cpid.Pos{File: strings.Clone(a.File), Line: a.Line}})
	}
	return cpid.Written{Audits: len(b.Audits), Logs: len(b.Logs)}, nil
}

func cloneStrings(ss []string) []string {
	var out []string
	for _, s := range ss {
		out = append(out, strings.Clone(s))
	}
	return out
}

// logStatements logs the statements of the database of dsn that took the
// most of the server's time, with their share of it.
func logStatements(b *testing.B, dsn string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		b.Fatal(err)
	}
	rows, err := conn.Query(ctx, `SELECT round(total_exec_time)::bigint, calls, rows, round(100 * total_exec_time / sum(total_exec_time) OVER ())::bigint,
		left(regexp_replace(query, '\s+', ' ', 'g'), 110)
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time DESC LIMIT 16`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var ms, calls, n, pct int64
		var q string
		if err := rows.Scan(&ms, &calls, &n, &pct, &q); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "%7d ms %3d%% %6d calls %8d rows  %s\n", ms, pct, calls, n, q)
	}
}

// serverCPU returns a function that returns the CPU time the server's
// processes spent since serverCPU was called: the postmaster's and its
// children's, those that ended included.
func serverCPU(tb testing.TB, dsn string) func() time.Duration {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	var backend int
	err = conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend)
	conn.Close(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	st, err := procStat(backend)
	if err != nil {
		tb.Fatal(err)
	}
	postmaster := int(st[1])
	total := func() time.Duration {
		var ticks int64
		if st, err := procStat(postmaster); err == nil {
			ticks += st[11] + st[12] + st[13] + st[14] // utime stime cutime cstime
		}
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if st, err := procStat(pid); err == nil && int(st[1]) == postmaster {
				ticks += st[11] + st[12]
			}
		}
		return time.Duration(ticks) * time.Second / 100 // USER_HZ
	}
	before := total()
	return func() time.Duration { return total() - before }
}

// procStat is the numeric fields of /proc/PID/stat after the command's
// name: [0] is the state (0), [1] the parent's pid, [11] utime...
func procStat(pid int) ([]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	out := make([]int64, len(fields))
	for i, f := range fields {
		out[i], _ = strconv.ParseInt(f, 10, 64)
	}
	return out, nil
}

// clientCPU returns a function that returns the CPU time this process
// spent since clientCPU was called.
func clientCPU() func() time.Duration {
	used := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	before := used()
	return func() time.Duration { return used() - before }
}

func execSQL(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// walBytes returns a function that returns how many bytes of WAL the
// server wrote since walBytes was called.
func walBytes(tb testing.TB, dsn string) func() int64 {
	tb.Helper()
	ctx := context.Background()
	lsn := func() int64 {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			tb.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int64
		if err := conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint`).Scan(&n); err != nil {
			tb.Fatal(err)
		}
		return n
	}
	before := lsn()
	return func() int64 { return lsn() - before }
}
