package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cpid-dev/cpid"
)

func init() {
	register(command{name: "completion", use: "bash|zsh|fish|powershell", group: "other",
		summary: "print a shell completion script (commands, flags, change ids, kinds, namespaces)", help: completionHelp, setup: setupCompletion})
}

const completionHelp = `Prints the script that makes your shell complete cpid-tui's commands and
flags, and from the database (--db, or $CPID_DB) the ids of changes
(timeline, spans, related, diff, report, export, --change), the kinds and
namespaces changes started on (--kind, -n), the clusters (--cluster).
Ids are completed with what the change was, as the shell can show it.

As a kubectl plugin (kubectl-cpid on the PATH), kubectl completes
'kubectl cpid ...' itself when an executable kubectl_complete-cpid is on
the PATH too; make install puts one there.

Examples:
  source <(cpid-tui completion bash)                       # bash, this shell
  cpid-tui completion bash > /etc/bash_completion.d/cpid-tui
  cpid-tui completion zsh > "${fpath[1]}/_cpid-tui"       # zsh (compinit)
  cpid-tui completion fish > ~/.config/fish/completions/cpid-tui.fish`

func setupCompletion(c *cobra.Command, e *env) runFunc {
	noDesc := c.Flags().Bool("no-descriptions", false, "complete without the descriptions of the candidates")
	c.ValidArgs = []string{"bash", "zsh", "fish", "powershell"}
	return func(ctx context.Context, args []string) error {
		if len(args) != 1 {
			return usagef("give one shell: %s", strings.Join(c.ValidArgs, ", "))
		}
		shell, err := oneOf("shell", args[0], c.ValidArgs)
		if err != nil {
			return err
		}
		root := c.Root()
		switch shell {
		case "bash":
			return root.GenBashCompletionV2(e.stdout, !*noDesc)
		case "zsh":
			if *noDesc {
				return root.GenZshCompletionNoDesc(e.stdout)
			}
			return root.GenZshCompletion(e.stdout)
		case "fish":
			return root.GenFishCompletion(e.stdout, !*noDesc)
		}
		// powershell, the last of c.ValidArgs
		if *noDesc {
			return root.GenPowerShellCompletion(e.stdout)
		}
		return root.GenPowerShellCompletionWithDesc(e.stdout)
	}
}

// completeFunc is a cobra completion function.
type completeFunc = func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective)

// fixed completes one of a fixed list.
func fixed(values ...string) completeFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// completionChanges is how many changes completion reads to find kinds and
// namespaces: the newest ones, so that completing stays instant on a large
// database.
const completionChanges = 5000

// fromDB completes from the database of --db, seen from --cluster.
func fromDB(e *env, f func(ctx context.Context, st cpid.ChangeReader, toComplete string) ([]string, error)) completeFunc {
	return fromDatabase(e, func(ctx context.Context, db *database, toComplete string) ([]string, error) {
		return f(ctx, db.view(e.cluster), toComplete)
	})
}

// fromDatabase completes from the database of --db, opened read-only;
// with no database, nothing (a completion never fails aloud).
func fromDatabase(e *env, f func(ctx context.Context, db *database, toComplete string) ([]string, error)) completeFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		ctx := c.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		db, err := openStore(ctx, e.notices(), e.db, readOnly)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer db.close()
		out, err := f(ctx, db, toComplete)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeChanges completes change ids, each with what the change was.
func completeChanges(e *env) completeFunc {
	return fromDB(e, func(ctx context.Context, st cpid.ChangeReader, toComplete string) ([]string, error) {
		cs, err := st.Changes(ctx, cpid.ChangeQuery{IDPrefix: toComplete, Limit: 200})
		if err != nil {
			return nil, err
		}
		out := make([]string, 0, len(cs))
		for _, c := range cs {
			out = append(out, fmt.Sprintf("%s\t%s %s %s", c.ID, clock(c.StartedNS), c.Verb, object(c.Kind, c.Namespace, c.Name)))
		}
		return out, nil
	})
}

// completeKinds completes the types changes started on, as --kind takes
// them (the resource, with its API group when it has one).
func completeKinds(e *env) completeFunc {
	return fromDB(e, func(ctx context.Context, st cpid.ChangeReader, toComplete string) ([]string, error) {
		cs, err := st.Changes(ctx, cpid.ChangeQuery{Limit: completionChanges})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, c := range cs {
			r := c.Resource
			if c.APIGroup != "" {
				r += "." + c.APIGroup
			}
			if r != "" && strings.HasPrefix(r, toComplete) {
				out = append(out, r+"\t"+c.Kind)
			}
		}
		slices.Sort(out)
		return slices.Compact(out), nil
	})
}

// completeNamespaces completes the namespaces changes started in.
func completeNamespaces(e *env) completeFunc {
	return fromDB(e, func(ctx context.Context, st cpid.ChangeReader, toComplete string) ([]string, error) {
		cs, err := st.Changes(ctx, cpid.ChangeQuery{Limit: completionChanges})
		if err != nil {
			return nil, err
		}
		var out []string
		for _, c := range cs {
			if c.Namespace != "" && strings.HasPrefix(c.Namespace, toComplete) {
				out = append(out, c.Namespace)
			}
		}
		slices.Sort(out)
		return slices.Compact(out), nil
	})
}

// completeClusters completes the clusters of the database.
func completeClusters(e *env) completeFunc {
	return fromDatabase(e, func(ctx context.Context, db *database, _ string) ([]string, error) {
		cs, _ := db.clusters(ctx) // what was read before an error
		return cs, nil
	})
}

// argChanges completes the positional arguments of a command that takes
// up to n change ids.
func argChanges(e *env, n int) completeFunc {
	changes := completeChanges(e)
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if n >= 0 && len(args) >= n {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return changes(c, args, toComplete)
	}
}
