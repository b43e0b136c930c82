package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cpid-dev/cpid/present"
	"github.com/cpid-dev/cpid/reconstruct"
)

func init() {
	register(command{name: "prune", use: "[--max-cpids N] [--older-than DURATION] [--keep CPID]... [--dry-run]", group: "load",
		summary: "shrink the merge graph under a size or age budget (paper 3.4.2)", help: pruneHelp, formats: listFormats, setup: setupPrune})
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
func (l *stringList) Type() string       { return "strings" }

// pruned is a CPID prune deleted, or would delete with --dry-run.
type pruned struct {
	Cluster string `json:"cluster"`
	CPID    string `json:"cpid"`
	Deleted bool   `json:"deleted"`
}

const pruneHelp = `
Deletes CPIDs from the merge graph (tables mergelogs and mergelog_sources) by
the rules of section 3.4.2 of the CPID paper: only a root (a CPID with no
sources) is deleted, oldest first; deleting it deletes its edges, and a CPID
left with no sources by that is deleted too, since it was made by a merge
and nobody refers to it. So a change still reachable from a kept root is
never broken. Revisions keep their CPIDs; 'cpid-tui reconstruct --full'
rebuilds the whole graph from the logs.

--older-than is measured back from the newest mergelog, not from now, so a
post-mortem database prunes the same way whenever it is opened.

It prints how many CPIDs it deleted; --dry-run deletes nothing and lists
the CPIDs it would delete, after the count (-o name: the CPIDs alone, -o
json: each with its cluster). With -o, a real run lists what it deleted
too.

Examples:
  cpid-tui prune --max-cpids 100000
  cpid-tui prune --older-than 24h --keep 044d68ee-6a4f-47dc-a93e-da38a9ba0d77 --dry-run
  cpid-tui prune --max-cpids 1000 --dry-run -o name | wc -l`

func setupPrune(c *cobra.Command, e *env) runFunc {
	fs := c.Flags()
	maxCPIDs := fs.Int("max-cpids", 0, "keep at most this many CPIDs (0: no size budget)")
	olderThan := fs.Duration("older-than", 0, "delete roots older than this, before the newest mergelog (0: no age budget)")
	dry := fs.Bool("dry-run", false, "say what would be deleted, delete nothing")
	var keep stringList
	fs.Var(&keep, "keep", "never delete this root CPID, or the one a unique prefix names (repeatable)")
	return func(ctx context.Context, args []string) error {
		if len(args) > 0 || (*maxCPIDs <= 0 && *olderThan <= 0) {
			return usagef("give --max-cpids or --older-than")
		}
		if err := existing(ctx, e.notices(), e.db); err != nil {
			return err
		}
		db, err := openStore(ctx, e.notices(), e.db, readWrite)
		if err != nil {
			return err
		}
		defer db.close()
		st := db.view(e.cluster)
		b := reconstruct.Budget{MaxCPIDs: *maxCPIDs}
		if len(keep) > 0 {
			pinned := map[string]bool{}
			for _, k := range keep {
				full, err := resolveCPID(ctx, st, k)
				if err != nil {
					return fmt.Errorf("--keep: %w", err)
				}
				pinned[full] = true
			}
			b.Keep = func(c string) bool { return pinned[c] }
		}
		if *olderThan > 0 {
			newest, err := st.NewestMergelog(ctx)
			if err != nil {
				return err
			}
			b.OlderThanNS = newest - int64(*olderThan)
			fmt.Fprintf(e.notices(), "prune: deleting roots before %s\n", time.Unix(0, b.OlderThanNS).UTC().Format(time.RFC3339))
		}
		clusters, err := db.clustersOf(ctx, e.cluster)
		if err != nil {
			return err
		}
		verb := "deleted"
		if *dry {
			verb = "would delete"
		}
		format := e.format(c)
		list := *dry || e.output != ""
		l := listing{head: []string{"CLUSTER", "CPID"}, data: &[]pruned{}}
		var rows []pruned
		for _, cl := range clusters {
			removed, before, err := reconstruct.PruneStore(ctx, db.view(cl), b, *dry)
			if err != nil {
				return fmt.Errorf("cluster %s: %w", cl, err)
			}
			for _, id := range removed {
				rows = append(rows, pruned{Cluster: cl, CPID: id, Deleted: !*dry})
				l.rows = append(l.rows, []string{cl, id})
				l.names = append(l.names, id)
			}
			if e.quiet || (format != "table" && format != "wide") {
				continue
			}
			if len(clusters) > 1 {
				fmt.Fprintf(e.stdout, "cluster %s: ", cl)
			}
			fmt.Fprintf(e.stdout, "prune: %s %d of %s, %d left\n", verb, len(removed), present.Plural(before, "CPID"), before-len(removed))
		}
		if !list {
			return nil
		}
		if rows != nil {
			l.data = rows
		}
		if (format == "table" || format == "wide") && len(rows) == 0 {
			return nil
		}
		return e.print(c, l)
	}
}
