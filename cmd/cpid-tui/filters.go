package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/reconstruct"
)

// triggers are the values of --trigger: what reconstruct may give.
var triggers = reconstruct.Triggers

// filters are the flags that narrow what query changes and history list.
type filters struct {
	since, until string
	namespace    string
	allNS        bool
	kind         string
	user, writer string
	trigger      string
	minDuration  time.Duration
}

// whenHelp explains the values of --since and --until.
const whenHelp = `an RFC 3339 time (2026-11-22T16:26:50Z) or a duration back from the newest audit event in the database (10m, 1h30m: recorded logs have no "now")`

// addTime adds --since and --until, for what to.
func (f *filters) addTime(fs *pflag.FlagSet, what string) {
	fs.StringVar(&f.since, "since", "", what+" at or after this: "+whenHelp)
	fs.StringVar(&f.until, "until", "", what+" before this (same forms as --since)")
}

// addNamespace adds -n/--namespace and -A/--all-namespaces.
func (f *filters) addNamespace(fs *pflag.FlagSet, usage string) {
	fs.StringVarP(&f.namespace, "namespace", "n", "", usage)
	fs.BoolVarP(&f.allNS, "all-namespaces", "A", false, "every namespace: the default (recorded logs have no current namespace), said for kubectl's habit; with -n, -A wins, as in kubectl")
}

// ns is the namespace the filters keep: -n, or every one ("") with -A,
// which wins over -n as in kubectl.
func (f *filters) ns() string {
	if f.allNS {
		return ""
	}
	return f.namespace
}

// complete registers the completions of the filters' flags that c has:
// namespaces and kinds from the database (the triggers are a choice).
func (f *filters) complete(c *cobra.Command, e *env) {
	if c.Flags().Lookup("namespace") != nil {
		c.RegisterFlagCompletionFunc("namespace", completeNamespaces(e))
	}
	if c.Flags().Lookup("kind") != nil {
		c.RegisterFlagCompletionFunc("kind", completeKinds(e))
	}
}

// addWho adds --user, --writer and --trigger with their usage texts
// (the list of triggers is added to the last).
func (f *filters) addWho(fs *pflag.FlagSet, user, writer, trigger string) {
	fs.StringVar(&f.user, "user", "", user)
	fs.StringVar(&f.writer, "writer", "", writer)
	choiceVar(fs, &f.trigger, "trigger", "", trigger+": "+strings.Join(triggerNames(), ", "), triggerNames()...)
}

// triggerNames are the values of --trigger as strings.
func triggerNames() []string {
	names := make([]string, len(triggers))
	for i, t := range triggers {
		names[i] = string(t)
	}
	return names
}

// window reads --since and --until as Unix ns (0: open), durations back
// from the newest audit event of the store.
func (f *filters) window(ctx context.Context, st cpid.ChangeReader) (since, until int64, err error) {
	if f.since == "" && f.until == "" {
		return 0, 0, nil
	}
	v, err := st.DataVersion(ctx)
	if err != nil {
		return 0, 0, err
	}
	if since, err = parseWhen("--since", f.since, v.NewestNS); err != nil {
		return 0, 0, err
	}
	if until, err = parseWhen("--until", f.until, v.NewestNS); err != nil {
		return 0, 0, err
	}
	if since != 0 && until != 0 && until <= since {
		return 0, 0, fmt.Errorf("--until %s is not after --since %s", f.until, f.since)
	}
	return since, until, nil
}

// parseWhen reads a time flag: "" (0), an RFC 3339 time, or a duration back
// from newestNS.
func parseWhen(flagName, s string, newestNS int64) (int64, error) {
	if s == "" {
		return 0, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixNano(), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s %q: want an RFC 3339 time (2026-11-22T16:26:50Z) or a duration (10m)", flagName, s)
	}
	if newestNS == 0 {
		return 0, fmt.Errorf("%s %s: the database has no audit event to count back from", flagName, s)
	}
	return newestNS - int64(d), nil
}

// changeQuery adds the filters to q (query changes).
func (f *filters) changeQuery(ctx context.Context, st cpid.ChangeReader, q *cpid.ChangeQuery) error {
	var err error
	if q.SinceNS, q.UntilNS, err = f.window(ctx, st); err != nil {
		return err
	}
	q.Trigger = cpid.Trigger(f.trigger) // one of triggers (a choice)
	if f.kind != "" {
		t, err := cpid.ParseType(f.kind)
		if err != nil {
			return fmt.Errorf("--kind: %w", err)
		}
		q.Kind = &t.ResourceMatch
	}
	if f.minDuration < 0 {
		return fmt.Errorf("--min-duration %s: give 0 or more", f.minDuration)
	}
	q.Namespace, q.User, q.Writer, q.MinDurationNS = f.ns(), f.user, f.writer, int64(f.minDuration)
	return nil
}
