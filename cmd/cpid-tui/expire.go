package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cpid-dev/cpid/postgres"
)

func init() {
	register(command{name: "expire", use: "--before TIME [--dry-run]", group: "load",
		summary: "delete the records older than a time (retention, PostgreSQL)", help: expireHelp, setup: setupExpire})
}

// expirer is an engine that deletes records by age (postgres.Store).
type expirer interface {
	Expire(ctx context.Context, beforeNS int64, dry bool) (postgres.Expired, error)
}

const expireHelp = `
Retention: deletes the audit events received and the controller log lines
logged before --before, with their bodies, from each cluster (--cluster:
that one). Not to be confused with prune, which shrinks the merge graph
and keeps every record.

Every change, write and merge of a cluster it deleted records of is
deleted with them, and the next 'cpid-tui reconstruct' of that cluster (a
tailer's, or one run by hand) is a full rebuild from the records left:
the same result as a post-mortem of what is left. Until it runs, the
cluster has no changes to show.

Exactly-once holds across it: the cluster keeps the time (its horizon),
and a record older than it, read again by a tailer or an ingest, is
skipped as a duplicate. To look at older logs again, ingest them into
another database. Tail checkpoints stay, so tailers go on where they
were. It waits for the cluster's reconstruct run, holds the next ones
until it ends, and holds the cluster's writers only while it moves the
horizon (it waits for the batches being written): the records go after,
20,000 at a time, each batch its own transaction, while tailers and
ingests go on. Stopped half way, it leaves the horizon moved and the
derived rows gone; run it again to delete the rest.

--before is an RFC 3339 time, or a duration back from the newest audit
event. PostgreSQL only for now (docs/SCALE.md, retention).

Examples:
  cpid-tui expire --db postgres://cpid@db/cpid --before 168h --dry-run
  cpid-tui expire --db postgres://cpid@db/cpid --cluster prod-eu --before 2026-11-01T00:00:00Z`

func setupExpire(c *cobra.Command, e *env) runFunc {
	fs := c.Flags()
	before := fs.String("before", "", "delete the records older than this: an RFC 3339 time, or a duration back from the newest event")
	dry := fs.Bool("dry-run", false, "count what would be deleted, delete nothing")
	return func(ctx context.Context, args []string) error {
		if len(args) > 0 || *before == "" {
			return usagef("give --before")
		}
		if !isPostgres(e.db) {
			return fmt.Errorf("only a PostgreSQL database (--db postgres://...) expires records for now; for a SQLite file, ingest the audit files to keep into a new database")
		}
		db, err := openStore(ctx, e.notices(), e.db, readWrite)
		if err != nil {
			return err
		}
		defer db.close()
		v, err := db.view(e.cluster).DataVersion(ctx)
		if err != nil {
			return err
		}
		ns, err := parseWhen("--before", *before, v.NewestNS)
		if err != nil {
			return err
		}
		clusters, err := db.clustersOf(ctx, e.cluster)
		if err != nil {
			return err
		}
		verb := "deleted"
		if *dry {
			verb = "would delete"
		}
		fmt.Fprintf(e.notices(), "expire: records before %s\n", time.Unix(0, ns).UTC().Format(time.RFC3339Nano))
		for _, cl := range clusters {
			x, ok := db.view(cl).(expirer)
			if !ok {
				return fmt.Errorf("expire: this database cannot expire records")
			}
			n, err := x.Expire(ctx, ns, *dry)
			if err != nil {
				return err
			}
			if e.quiet {
				continue
			}
			fmt.Fprintf(e.stdout, "cluster %s: %s %d audit events and %d log lines", cl, verb, n.Audits, n.Logs)
			if !*dry && n.Audits+n.Logs > 0 {
				fmt.Fprintf(e.stdout, " (and %d body blocks); its next reconstruct is a full rebuild", n.Blocks)
			}
			fmt.Fprintln(e.stdout)
		}
		return nil
	}
}
