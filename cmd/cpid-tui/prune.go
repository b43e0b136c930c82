package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cpid-dev/cpid/reconstruct"
)

func init() {
	register(command{name: "prune", summary: "shrink the merge graph under a size or age budget (paper 3.4.2)", run: runPrune})
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func runPrune(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "prune", "[--db cpid.db] [--max-cpids N] [--older-than DURATION] [--keep CPID]... [--dry-run]", strings.TrimSpace(`
Deletes CPIDs from the merge graph (tables mergelogs and mergelog_sources) by
the rules of section 3.4.2 of the CPID paper: only a root (a CPID with no
sources) is deleted, oldest first; deleting it deletes its edges, and a CPID
left with no sources by that is deleted too, since it was made by a merge
and nobody refers to it. So a change still reachable from a kept root is
never broken. Revisions keep their CPIDs; 'cpid-tui reconstruct --full'
rebuilds the whole graph from the logs.

--older-than is measured back from the newest mergelog, not from now, so a
post-mortem database prunes the same way whenever it is opened.

Examples:
  cpid-tui prune --max-cpids 100000
  cpid-tui prune --older-than 24h --keep 044d68ee-6a4f-47dc-a93e-da38a9ba0d77 --dry-run`))
	var db string
	dbFlag(fs, &db)
	cluster := clusterFlag(fs, "")
	maxCPIDs := fs.Int("max-cpids", 0, "keep at most this many CPIDs (0: no size budget)")
	olderThan := fs.Duration("older-than", 0, "delete roots older than this, before the newest mergelog (0: no age budget)")
	dry := fs.Bool("dry-run", false, "say what would be deleted, delete nothing")
	var keep stringList
	fs.Var(&keep, "keep", "never delete this root CPID (repeatable)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 || (*maxCPIDs <= 0 && *olderThan <= 0) {
		fmt.Fprintln(e.stderr, "cpid-tui prune: give --max-cpids or --older-than")
		fs.Usage()
		return errUsage
	}
	db0, err := openStore(ctx, e.stderr, db, readWrite)
	if err != nil {
		return err
	}
	defer db0.close()
	st := db0.view(*cluster)
	b := reconstruct.Budget{MaxCPIDs: *maxCPIDs}
	if len(keep) > 0 {
		pinned := map[string]bool{}
		for _, k := range keep {
			pinned[k] = true
		}
		b.Keep = func(c string) bool { return pinned[c] }
	}
	if *olderThan > 0 {
		newest, err := st.NewestMergelog(ctx)
		if err != nil {
			return err
		}
		b.OlderThanNS = newest - int64(*olderThan)
		fmt.Fprintf(e.stderr, "prune: deleting roots before %s\n", time.Unix(0, b.OlderThanNS).UTC().Format(time.RFC3339))
	}
	clusters, err := db0.clustersOf(ctx, *cluster)
	if err != nil {
		return err
	}
	verb := "deleted"
	if *dry {
		verb = "would delete"
	}
	for _, c := range clusters {
		removed, before, err := reconstruct.PruneStore(ctx, db0.view(c), b, *dry)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", c, err)
		}
		if len(clusters) > 1 {
			fmt.Fprintf(e.stdout, "cluster %s: ", c)
		}
		fmt.Fprintf(e.stdout, "prune: %s %d of %d CPIDs, %d left\n", verb, len(removed), before, before-len(removed))
	}
	return nil
}
