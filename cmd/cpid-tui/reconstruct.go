package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/cpid-dev/cpid/ingest"
	"github.com/cpid-dev/cpid/reconstruct"
)

func init() {
	register(command{name: "reconstruct", use: "[--full] [--window [RULE/]WRITER=DURATION]...", group: "load",
		summary: "rebuild revisions, mergelogs, changes and timelines from what was ingested", help: reconstructHelp, setup: setupReconstruct})
}

const reconstructHelp = `
Derives from the ingested audit events and controller logs: every object's
revisions in order, the CPID each write carries (from its annotation, or
inferred from owner references, the object's previous write, Service and
EndpointSlice targets, Node changes), the mergelogs and merge DAG, the root
changes (a user's write, or what the environment did: a node, a controller
that started again with nothing pending, a schedule, the garbage
collector) with the writes they caused, and anomalies. A change ends only
on such evidence: a write that waited past its writer's reaction window
with nothing in the logs to say why stays in its cause's change,
"unexplained", and the run warns with how many and the longest.

Only what was ingested since the last run is processed; a run that finds
events older than what it already processed (a rotated backup ingested late,
controller logs ingested after the audit log they explain) rebuilds
everything, in one transaction: readers see the old result until the new one
is complete. --full forces a rebuild. Either way the result is the same. See
docs/SCHEMA.md for the tables it fills.

Every hop (cause -> write) is explained: by evidence (a retry after a failed
write, the writer's process starting again or a new leader, client-side
throttling, the apiserver's own latency) or within its writer's reaction
window (informer, kubelet, toleration, node-grace, deletion-grace, pod-gc;
reconstruct.DefaultWindows), else "unexplained". --window kwok=10m
replaces a writer's windows (wider or narrower); query hops --window
kwok=10m prints them beside the hops observed (docs/CAUSALITY.md).
--ignore-cpids leaves out the CPIDs instrumented writers carry, so that
inference alone decides (to measure it against an instrumented recording;
on a copy of the database). -q prints only its warnings. On a terminal,
a run that lasts prints where it is every 2 s on stderr: the writes
through so far, then the end it stores (a first run over ten million
events takes minutes).

Memory: a run holds at most --max-objects objects' states in memory (30000
by default); past that it moves the half it met least recently to a
temporary file in $TMPDIR, removed as it is made, and reads one back when a
write meets it again, so that memory follows the objects in use, not the
size of the bundle; the rows are the same. The Go heap has a soft limit of
280 MiB while the engine runs and 128 MiB once it is done (GOMEMLIMIT
overrides both; GOGC is 200 unless set); past it the collector works
harder, with at most half the CPU. SQLite's page cache adds 16 MiB while
the run writes, and the sorts that end a full rebuild (its indexes) their
own, each given back as it ends (a build with cgo, on Linux).

Speed: a cpid-tui built with cgo (make build) runs reconstruct on SQLite
in C, its writes read and its revisions stored by the batch; one built
without (the release archives) on the pure-Go SQLite, about 1.5x the CPU.
Both derive the same rows.`

func setupReconstruct(c *cobra.Command, e *env) runFunc {
	fs := c.Flags()
	full := fs.Bool("full", false, "rebuild everything instead of going on from the last run")
	ignore := fs.Bool("ignore-cpids", false, "leave out the CPIDs writes carry (annotations, controllers' mergelog lines): inference alone decides, to measure it against an instrumented recording (a run that changes this setting rebuilds everything)")
	maxObjects := fs.Int("max-objects", reconstruct.DefaultMaxObjects, "objects' states held in memory before the least recently met half go to a temporary file (-1: never)")
	var windows paths
	fs.Var(&windows, "window", "a reaction window `[RULE/]WRITER=DURATION` before the defaults (repeatable; query hops shows them); with --full to apply it to what was derived before")
	return func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected arguments %q", args)
		}
		opt := runOptions(*full, 0)
		opt.IgnoreCPIDs = *ignore
		if *maxObjects == 0 || *maxObjects < -1 {
			return usagef("--max-objects must be a positive count, or -1 for no limit")
		}
		opt.MaxObjects = *maxObjects
		for _, w := range windows {
			win, err := readWindow(w)
			if err != nil {
				return err
			}
			opt.Windows = append(opt.Windows, win)
		}
		if err := existing(ctx, e.notices(), e.db); err != nil {
			return err
		}
		db, err := openStore(ctx, e.notices(), e.db, readWriteNative)
		if err != nil {
			return err
		}
		defer db.close()
		// A run holds the merge graph and every object's state in maps that
		// live to its end: collecting less often costs some memory and saves
		// time (docs/BENCHMARKS.md), up to a soft limit of the Go heap,
		// past which the collector runs more often (with at most half the
		// CPU). On 1M synthetic events: peak RSS 283-285 MB with a limit of
		// 200 MiB, 381-396 MB without, and 4% more CPU (before the end's
		// memory was given back: 214-232 MiB now). The limit is set again for
		// each cluster's run, and lowered once its engine is done: the end
		// of a full rebuild sorts in SQLite's memory, beside the Go heap.
		// GOGC and GOMEMLIMIT, when set, decide.
		if os.Getenv("GOGC") == "" {
			debug.SetGCPercent(200)
		}
		clusters, err := db.clustersOf(ctx, e.cluster)
		if err != nil {
			return err
		}
		for _, c := range clusters {
			if f, ok := e.stderr.(*os.File); ok && !e.quiet && term.IsTerminal(int(f.Fd())) {
				// Where a long run is, on a terminal only: what scripts
				// and logs read stays the summary below.
				name := ""
				if len(clusters) > 1 {
					name = "cluster " + c + ": "
				}
				opt.Progress, opt.ProgressEvery = progressPrinter(e.stderr, name), 2*time.Second
			}
			if os.Getenv("GOMEMLIMIT") == "" {
				debug.SetMemoryLimit(reconstructHeapLimit)
				opt.Ended = func() { debug.SetMemoryLimit(reconstructEndHeapLimit) }
			}
			r, err := reconstruct.Run(ctx, db.view(c), opt)
			if err != nil {
				return fmt.Errorf("cluster %s: %w", c, err)
			}
			if e.quiet {
				for _, w := range r.Warnings {
					fmt.Fprintf(e.stderr, "reconstruct: warning: cluster %s: %s\n", c, w)
				}
				continue
			}
			if len(clusters) > 1 {
				fmt.Fprintf(e.stdout, "cluster %s: ", c)
			}
			fmt.Fprintln(e.stdout, r)
		}
		return nil
	}
}

// progressPrinter prints a reconstruct run's progress (Options.Progress):
// the writes through so far, then that the run stores its end, said in
// full once; the run's summary follows its last line.
func progressPrinter(w io.Writer, name string) func(reconstruct.Progress) {
	ended := false
	return func(p reconstruct.Progress) {
		el := p.Elapsed.Round(time.Second)
		switch {
		case p.Done:
		case p.End && ended:
			fmt.Fprintf(w, "reconstruct: %sstill storing the end, %s\n", name, el)
		case p.End:
			fmt.Fprintf(w, "reconstruct: %severy write through (%d); storing the end (indexes, renumbering, summaries, the commit), %s\n",
				name, p.Writes, el)
			ended = true
		default:
			fmt.Fprintf(w, "reconstruct: %s%d writes through, %.0f/s, %s\n", name, p.Writes, float64(p.Writes)/p.Elapsed.Seconds(), el)
		}
	}
}

// reconstructHeapLimit is the Go heap's soft limit in a reconstruct run
// (GOMEMLIMIT overrides it), and reconstructEndHeapLimit its limit once
// the engine is done: the end of a run (a full rebuild's indexes above
// all) sorts in SQLite's memory, in C, beside the Go heap. A full rebuild
// of 10M synthetic events ends its scan with 150-175 MB of live heap (the
// merge graph and the book of the changes grow with them): at 200 MiB the
// collector ran every 80 ms for the last half of the scan, 36% of the CPU;
// at 280, 10-15% less time, peak RSS 328-332 MiB (BENCHMARKS.md). On 1M
// the live heap stays under 70 MB: the first limit is not reached.
const (
	reconstructHeapLimit    = 280 << 20
	reconstructEndHeapLimit = 128 << 20
)

// runOptions are the options of a reconstruct run from the command line:
// inputs are named by their rotation family (ingest.Family).
func runOptions(full bool, stepRows int) reconstruct.Options {
	return reconstruct.Options{Full: full, StepRows: stepRows, Family: ingest.Family}
}
