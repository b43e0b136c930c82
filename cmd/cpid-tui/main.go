// Command cpid-tui traces cascading changes in a Kubernetes control plane from
// the kube-apiserver audit log and controller JSON logs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"syscall"
)

// command is one subcommand. Each lives in its own file and registers itself
// from init, so adding one touches no other file.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what a subcommand may touch besides its flags.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

// errUsage marks a usage error: the message has been printed, exit 2.
var errUsage = errors.New("usage")

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
	code := run(ctx, &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
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

// run executes one command line and returns the process exit code:
// 0 success, 1 failure, 2 usage error.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "cpid-tui: unknown command %q\n\n", args[0])
		usage(e.stderr)
		return 2
	}
	err := c.run(ctx, e, args[1:])
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		fmt.Fprintf(e.stderr, "cpid-tui %s: %v\n", c.name, err)
		return 1
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `cpid-tui traces cascading changes in a Kubernetes control plane, from the
kube-apiserver audit log and controller JSON logs, into a SQLite database.

Usage: cpid-tui COMMAND [flags] [args]

Commands:
`)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, `
Run 'cpid-tui COMMAND -h' for the flags of one command.
Exit codes: 0 success (bad input lines are reported, not fatal), 1 failure, 2 usage error.
`)
}

// newFlags returns a flag set whose usage text starts with the command's
// synopsis and description.
func newFlags(e *env, name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: cpid-tui %s %s\n\n%s\n\nFlags:\n", name, synopsis, description)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and maps a parse failure to errUsage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	return nil
}

// parseArgs is parseFlags for commands that take positional arguments: flags
// and arguments may come in any order, "--" ends the flags. It returns the
// positional arguments.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
