package main

import (
	"context"
	"fmt"
	"io"
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
flags, and from the database (--db, or $CPID_DB, else cpid.db) the ids of
changes (query timeline, spans, related, diff, report, export, --change),
history's TYPE/NAME (the types with writes, then past the slash the names
of their objects), the kinds and namespaces changes started on (--kind,
-n), the clusters (--cluster). Ids are completed with what the change
was, as the shell can show it. Without a database there is nothing to
suggest, and nothing is printed.

What each shell needs:
  bash        the bash-completion package, version 2 (apt-get install
              bash-completion; brew install bash-completion@2), loaded by
              your ~/.bashrc: the script uses its _get_comp_words_by_ref,
              and without it TAB says "_get_comp_words_by_ref: command not
              found"
  zsh         compinit run before the script is loaded (autoload -U
              compinit; compinit in ~/.zshrc)
  fish        nothing more (fish 3)
  powershell  nothing more (Windows PowerShell 5 or PowerShell 7)

As a kubectl plugin (kubectl-cpid on the PATH), kubectl completes
'kubectl cpid ...' itself when an executable kubectl_complete-cpid is on
the PATH too; make install puts one there.

Examples:
  source <(cpid-tui completion bash)                       # bash, this shell (with bash-completion loaded)
  cpid-tui completion bash > /etc/bash_completion.d/cpid-tui
  cpid-tui completion zsh > "${fpath[1]}/_cpid-tui"       # zsh (compinit)
  cpid-tui completion fish > ~/.config/fish/completions/cpid-tui.fish
  cpid-tui completion powershell | Out-String | Invoke-Expression`

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
		// Nothing on stderr: it would land in the middle of the line
		// being typed.
		db, err := openStore(ctx, io.Discard, e.db, e.readMode())
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

// completionObjects is how many objects completing a reference reads.
const completionObjects = 200

// completeRefs completes the TYPE/NAME of history from the objects with
// writes: a type first (dep<TAB>: deployments/), then, past the slash,
// the names of that type's objects in the namespace of ns() (every one
// when ""); a TYPE given as its own argument is followed by a NAME alone.
func completeRefs(e *env, ns func() string) completeFunc {
	names := func(ctx context.Context, st store, typ, prefix string) ([]string, error) {
		tr, err := cpid.ParseType(typ)
		if err != nil {
			return nil, err
		}
		q := cpid.ObjectNameQuery{ResourceMatch: tr.ResourceMatch, Prefix: prefix, Namespace: ns(), Limit: completionObjects}
		q.AllNamespaces = q.Namespace == "" || tr.Scope == cpid.ScopeCluster
		ks, err := st.ObjectNames(ctx, q)
		if err != nil {
			return nil, err
		}
		// One candidate a name, with the namespaces that hold it.
		var out, where []string
		for i, k := range ks {
			if k.Namespace != "" && !slices.Contains(where, k.Namespace) {
				where = append(where, k.Namespace)
			}
			if i+1 < len(ks) && ks[i+1].Name == k.Name {
				continue
			}
			c := k.Name
			if len(where) > 0 {
				c += "\t" + strings.Join(where, ", ")
			}
			out, where = append(out, c), nil
		}
		return out, nil
	}
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		var typ, prefix string
		switch {
		case len(args) == 0 && strings.Contains(toComplete, "/"):
			typ, prefix, _ = strings.Cut(toComplete, "/")
		case len(args) == 0:
			// No space after TYPE/: the name follows.
			out, dir := fromDatabase(e, func(ctx context.Context, db *database, toComplete string) ([]string, error) {
				rs, err := db.view(e.cluster).WrittenResources(ctx)
				if err != nil {
					return nil, err
				}
				var out []string
				for _, r := range rs {
					if strings.HasPrefix(r, strings.ToLower(toComplete)) {
						out = append(out, r+"/")
					}
				}
				// A short name or a kind as typed (rs, Deployment) that
				// names a resource with writes.
				if tr, err := cpid.ParseType(toComplete); err == nil && len(out) == 0 &&
					slices.ContainsFunc(tr.Resources, func(r string) bool { return slices.Contains(rs, r) }) {
					out = append(out, toComplete+"/")
				}
				return out, nil
			})(c, args, toComplete)
			return out, dir | cobra.ShellCompDirectiveNoSpace
		case len(args) == 1 && !strings.Contains(args[0], "/"):
			typ, prefix = args[0], toComplete
		default:
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		out, dir := fromDatabase(e, func(ctx context.Context, db *database, _ string) ([]string, error) {
			return names(ctx, db.view(e.cluster), typ, prefix)
		})(c, args, toComplete)
		if len(args) == 0 {
			for i := range out {
				out[i] = typ + "/" + out[i]
			}
		}
		return out, dir
	}
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
