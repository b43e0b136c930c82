package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cpid-dev/cpid"
)

// env is what a command may touch besides its own flags: the standard
// streams, the name it was run by, and the root command's flags.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// prog is the name the user typed: cpid-tui, or kubectl cpid when
	// kubectl runs the binary as its plugin kubectl-cpid ("": cpid-tui).
	prog string

	db, cluster string
	output      string // -o: "" is the command's first format
	noHeaders   bool
	quiet       bool
	// columns, when not 0, is the width of the terminal stdout is taken
	// to be (tests); else tableWidth measures it.
	columns int
	// pureReads opens a SQLite database to read with the pure-Go SQLite
	// even where the build has cgo (tests that count its statements
	// through that driver's hooks).
	pureReads bool
}

// runFunc runs a command once its flags are parsed, with its positional
// arguments.
type runFunc func(ctx context.Context, args []string) error

// command is one subcommand. Each lives in its own file and registers itself
// from init, so adding one touches no other file.
type command struct {
	name    string
	use     string // the synopsis after the name: "ID [flags]"
	summary string // one line
	// help is the description; from a line "Examples:" (or "Example:")
	// on, the examples.
	help  string
	group string // load, read, live (help lists commands by group)
	// formats are the values of -o the command prints, its default first;
	// none when it prints no listing (then -o is refused).
	formats []string
	// setup defines the command's flags (and their completions) on c and
	// returns the function that runs it.
	setup  func(c *cobra.Command, e *env) runFunc
	hidden bool
}

var commands []command

func register(c command) { commands = append(commands, c) }

// Exit codes, as the root's help documents them.
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitBadLines = 3
)

// errUsage marks a usage error: exit 2, with the command's synopsis.
var errUsage = errors.New("usage")

// errBadLines marks a run that stored its input but skipped bad lines,
// when asked to say so (ingest --strict): exit 3.
var errBadLines = errors.New("bad lines")

// marked is an error whose message is msg alone, marked as mark for
// errors.Is (errBadLines, errAmbiguous): "%w: %s" would print the mark
// before a message that says it again ("ambiguous: ... is ambiguous").
type marked struct {
	mark error
	msg  string
}

func (m marked) Error() string { return m.msg }
func (m marked) Unwrap() error { return m.mark }

// markf is a marked error of mark, its message formatted.
func markf(mark error, format string, a ...any) error {
	return marked{mark: mark, msg: fmt.Sprintf(format, a...)}
}

// usageError is a usage error with what was wrong; shown when the usage
// was printed already.
type usageError struct {
	msg   string
	shown bool
}

func (u usageError) Error() string { return u.msg }
func (u usageError) Is(target error) bool {
	return target == errUsage
}

// usagef returns a usage error saying what is wrong.
func usagef(format string, args ...any) error {
	return usageError{msg: fmt.Sprintf(format, args...)}
}

// progName is the name to show for a binary run as base: kubectl runs its
// plugin kubectl-cpid for "kubectl cpid" (and a kubectl-cpid-x for
// "kubectl cpid x"), so that is what its help must say.
func progName(base string) string {
	base = strings.TrimSuffix(base, ".exe")
	if p, ok := strings.CutPrefix(base, "kubectl-"); ok && p != "" {
		return "kubectl " + strings.ReplaceAll(p, "-", " ")
	}
	return "cpid-tui"
}

// run executes one command line and returns the process exit code:
// 0 success, 1 failure, 2 usage error, 3 bad input lines (ingest --strict).
func run(ctx context.Context, e *env, args []string) int {
	if e.prog == "" {
		e.prog = "cpid-tui"
	}
	root := newRoot(e)
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	if c == nil {
		c = root
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errUsage):
		var u usageError
		if errors.As(err, &u) && u.msg != "" {
			fmt.Fprintf(e.stderr, "%s: %s\n", c.CommandPath(), u.msg)
		}
		if !u.shown {
			fmt.Fprintf(e.stderr, "Usage: %s\nRun '%s --help' for the flags and examples.\n", c.UseLine(), c.CommandPath())
		}
		return exitUsage
	case errors.Is(err, errBadLines):
		fmt.Fprintf(e.stderr, "%s: %v\n", c.CommandPath(), err)
		return exitBadLines
	case cpid.ErrorCode(err) == cpid.ENOTFOUND:
		// The store says what it did not find; where to look is ours.
		fmt.Fprintf(e.stderr, "%s: %v (%s query changes lists the changes and their CPIDs)\n", c.CommandPath(), err, e.prog)
		return exitFailure
	}
	fmt.Fprintf(e.stderr, "%s: %v\n", c.CommandPath(), err)
	return exitFailure
}

const rootHelp = `cpid-tui traces cascading changes in a Kubernetes control plane, from the
kube-apiserver audit log and controller logs, into a SQLite (or PostgreSQL)
database: ingest the logs, reconstruct what caused what, then query,
browse, export or report the changes.

Global flags (--db, --cluster, -o, --no-headers, -q) go before or after the
command. The database is --db, else $CPID_DB, else cpid.db; commands that
only read never create or migrate it, and open a read-only file.

Output (-o): table (fitted to the terminal's width, uncut when stdout is
not a terminal, by cutting only free text such as details and causes in
the middle, never a name, id, trigger or reason; ids by their shortest
prefix unique in the database, 8 characters or more, as git), wide (every
column in full), json and yaml (times as *_ns nanoseconds and *_time RFC
3339), csv (RFC 4180 data: raw values, the same columns as json, stable
whatever the rows), name (ids, one a line). --no-headers drops the header
line (and a title or notes around the table), and changes no row.

Exit codes: 0 success; 1 failure (nothing or not everything done; an input
of which no line could be read is a failure, and so is a --cluster the
database does not hold); 2 usage error (a command, flag or argument
missing or unknown, or a value outside those a flag takes: -o, --sort,
--trigger, --format, a --window rule, a report file's extension; the error
lists what it takes); 3 the input had bad lines, which were reported and
skipped (only with ingest --strict: without it bad lines are reported and
the exit code is 0, so scripts that ingest a live log's truncated last
line go on).

Installed as kubectl-cpid on the PATH, it is the kubectl plugin
'kubectl cpid' (make install does both). Shell completion: see
'cpid-tui completion --help'. docs/CLI.md has every command.`

// newRoot builds the command tree for one run, its flags bound to e.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "cpid-tui",
		Short:         "trace cascading changes in a Kubernetes control plane from its logs",
		Long:          forProg(e, rootHelp),
		SilenceErrors: true,
		SilenceUsage:  true,
		// No command: the help, as a usage error.
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q", args[0])
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, ", "))
			}
			return usagef("%s", msg)
		},
		RunE: func(c *cobra.Command, args []string) error {
			c.SetOut(e.stderr)
			c.Help()
			return usageError{shown: true}
		},
		PersistentPreRunE: func(c *cobra.Command, args []string) error {
			return checkOutput(c, e)
		},
		CompletionOptions:          cobra.CompletionOptions{DisableDefaultCmd: true},
		SuggestionsMinimumDistance: 2,
	}
	if e.prog != "cpid-tui" {
		root.Use = "kubectl-" + strings.ReplaceAll(strings.TrimPrefix(e.prog, "kubectl "), " ", "-")
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: e.prog}
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// A choice flag's refusal says it all (oneOf); pflag's wrapping
		// would say the value twice.
		var u usageError
		if errors.As(err, &u) {
			return u
		}
		return usagef("%v", err)
	})
	pf := root.PersistentFlags()
	def := os.Getenv("CPID_DB")
	if def == "" {
		def = "cpid.db"
	}
	pf.StringVar(&e.db, "db", def, "the database: a SQLite file (commands that write create it with mode 0600; reading ones never create or migrate it) or a postgres://USER@HOST/DB URL (env CPID_DB)")
	pf.StringVar(&e.cluster, "cluster", "", `the cluster: ingest, tail and serve store records under it (default "default"); reading commands show only its changes (default: every cluster in the database; one it does not hold is an error naming those it does)`)
	pf.StringVarP(&e.output, "output", "o", "", "output format: table, wide, json, yaml, csv or name (each command says which it prints)")
	pf.BoolVar(&e.noHeaders, "no-headers", false, "table, wide and csv without their header line")
	pf.BoolVarP(&e.quiet, "quiet", "q", false, "print only errors and warnings: no progress, summaries or hints")
	root.RegisterFlagCompletionFunc("output", func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		return formatsOf(c), cobra.ShellCompDirectiveNoFileComp
	})
	root.RegisterFlagCompletionFunc("cluster", completeClusters(e))
	root.AddGroup(&cobra.Group{ID: "load", Title: "Load and derive:"}, &cobra.Group{ID: "read", Title: "Read:"},
		&cobra.Group{ID: "live", Title: "Live:"}, &cobra.Group{ID: "other", Title: "Other:"})
	root.SetHelpCommandGroupID("other")
	for _, cmd := range commands {
		root.AddCommand(build(cmd, e))
	}
	return root
}

// build makes the cobra command of c.
func build(c command, e *env) *cobra.Command {
	long, example := splitHelp(c.help)
	cc := &cobra.Command{
		Use:     strings.TrimSpace(c.name + " " + c.use),
		Short:   c.summary,
		Long:    forProg(e, long),
		Example: forProg(e, example),
		GroupID: c.group,
		Hidden:  c.hidden,
		// Commands check their arguments themselves, to say what is wrong.
		Args: cobra.ArbitraryArgs,
	}
	if len(c.formats) > 0 {
		cc.Annotations = map[string]string{"formats": strings.Join(c.formats, ",")}
	}
	if c.group == "" && !c.hidden {
		cc.GroupID = "other"
	}
	fn := c.setup(cc, e)
	completeChoices(cc)
	cc.RunE = func(cc *cobra.Command, args []string) error {
		return fn(cc.Context(), args)
	}
	return cc
}

// splitHelp cuts a help text into its description and its examples (from
// a line "Examples:" on, indented as cobra shows them).
func splitHelp(help string) (long, example string) {
	help = strings.TrimSpace(help)
	for _, head := range []string{"\nExamples:\n", "\nExample:\n"} {
		if i := strings.Index(help, head); i >= 0 {
			return strings.TrimSpace(help[:i]), strings.TrimRight(help[i+len(head):], "\n")
		}
	}
	return help, ""
}

// forProg writes the program's name into a help text as the user runs it
// (kubectl cpid as a kubectl plugin).
func forProg(e *env, s string) string {
	if e.prog == "cpid-tui" || e.prog == "" {
		return s
	}
	return strings.ReplaceAll(s, "cpid-tui ", e.prog+" ")
}

// formatsOf returns the -o values a command prints.
func formatsOf(c *cobra.Command) []string {
	if f := c.Annotations["formats"]; f != "" {
		return strings.Split(f, ",")
	}
	return nil
}

// checkOutput refuses an -o the command does not print, and spells the
// one it prints as the command does.
func checkOutput(c *cobra.Command, e *env) error {
	if e.output == "" {
		return nil
	}
	fs := formatsOf(c)
	if len(fs) == 0 {
		return usagef("%s prints no listing: it takes no -o/--output", c.Name())
	}
	var err error
	e.output, err = oneOf("-o", e.output, fs)
	return err
}

// format is the -o of the command: the one given, else its default.
func (e *env) format(c *cobra.Command) string {
	if e.output != "" {
		return e.output
	}
	if fs := formatsOf(c); len(fs) > 0 {
		return fs[0]
	}
	return "table"
}

// writeCluster is --cluster for a command that stores records: the
// default cluster when none is given.
func (e *env) writeCluster() string {
	if e.cluster == "" {
		return defaultCluster
	}
	return e.cluster
}
