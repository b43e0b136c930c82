package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/cpid-dev/cpid/cmd/cpid-tui/tui"
)

func init() {
	register(command{name: "browse", use: "[--change ID]", group: "read", summary: "terminal UI: changes, their merge DAG, timelines, logs and revisions",
		help: browseHelp, setup: setupBrowse})
}

const browseHelp = `
Opens a terminal UI on a database that ingest and reconstruct filled: the
root changes, newest first; for one change its merge DAG, a timeline with one
lane per controller and the critical path, its controllers' log lines, and
the revisions of its objects with a diff between any two. Press ? for the
keys, q to quit: / filters (names, writers, verbs, HTTP codes), S jumps to
a change's slowest hop and ] [ walk its critical path, space and d compare
two changes, and : takes commands as k9s does (:history deploy/web,
:anomalies, :diff ID1 ID2, :changes). When tail writes to the same
database, the view refreshes and keeps its cursor. NO_COLOR turns colors
off; 80x24 is enough (docs/TUI.md).

For scripts, cpid-tui query gives the same data as tables, JSON or CSV.`

func setupBrowse(c *cobra.Command, e *env) runFunc {
	fs := c.Flags()
	change := fs.String("change", "", "open this change (an id from the changes list, or a unique prefix of one) first")
	refresh := fs.Duration("refresh", 2*time.Second, "how often to look for new data; 0 never")
	c.RegisterFlagCompletionFunc("change", completeChanges(e))
	return func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usagef("unexpected arguments %q", args)
		}
		if *refresh < 0 {
			return usagef("--refresh %s: give 0 (never) or more", *refresh)
		}
		// Never a new empty file: browsing one would only hide a wrong path.
		db, err := e.openReader(ctx)
		if err != nil {
			return err
		}
		defer db.close()
		in, inOK := e.stdin.(*os.File)
		out, outOK := e.stdout.(*os.File)
		if !inOK || !outOK || !term.IsTerminal(in.Fd()) || !term.IsTerminal(out.Fd()) {
			return errors.New("browse needs a terminal (cpid-tui query gives the same data to scripts)")
		}
		st := db.view(e.cluster)
		if *change != "" {
			if *change, err = resolveChange(ctx, st, *change); err != nil {
				return err
			}
		}
		noColor := os.Getenv("NO_COLOR") != ""
		m := tui.New(ctx, st, tui.Options{Change: *change, Refresh: *refresh, Color: !noColor})
		opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out)}
		if noColor {
			// https://no-color.org: any non-empty value, which the terminal
			// detection (strconv.ParseBool) would not all take.
			opts = append(opts, tea.WithColorProfile(colorprofile.ASCII))
		}
		if _, err := tea.NewProgram(m, opts...).Run(); err != nil && !errors.Is(err, tea.ErrProgramKilled) {
			return fmt.Errorf("terminal UI: %w", err)
		}
		return nil
	}
}
