// Command cpid-tui traces cascading changes in a Kubernetes control plane from
// the kube-apiserver audit log and controller JSON logs.
package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// CPID_CPUPROFILE=file writes a CPU profile of the run (for developers).
	if p := os.Getenv("CPID_CPUPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	// CPID_TRACE=file writes an execution trace of the run (for
	// developers: go tool trace file), to see what waits on what.
	if p := os.Getenv("CPID_TRACE"); p != "" {
		if f, err := os.Create(p); err == nil {
			trace.Start(f)
			defer func() { trace.Stop(); f.Close() }()
		}
	}
	// CPID_MEMPROFILE=file writes every allocation of the run (for
	// developers: go tool pprof -sample_index=alloc_space).
	if os.Getenv("CPID_MEMPROFILE") != "" {
		runtime.MemProfileRate = 64 << 10
	}
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, prog: progName(filepath.Base(os.Args[0]))}
	code := run(ctx, e, os.Args[1:])
	if p := os.Getenv("CPID_MEMPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	stop()
	if code != 0 {
		pprof.StopCPUProfile()
		os.Exit(code)
	}
}
