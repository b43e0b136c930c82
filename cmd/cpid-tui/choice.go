package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cpid-dev/cpid/reconstruct"
)

// oneOf returns the word of accepted that s names, in any letter case;
// any other s is a usage error (exit 2) naming what was given and listing
// what is taken. It is the one check of every closed set of values the
// commands take: -o, --sort, --trigger, --format, a report's file
// extension, a --window's rule, a query, a shell.
func oneOf(what, s string, accepted []string) (string, error) {
	for _, a := range accepted {
		if strings.EqualFold(a, s) {
			return a, nil
		}
	}
	return "", usagef("%s %q: want one of %s", what, s, strings.Join(accepted, ", "))
}

// choice is the value of a flag that takes one word of a closed set: a
// word outside it is refused as the flags are parsed (oneOf), whatever
// the command goes on to do; the words are the flag's completions.
type choice struct {
	flag   string // --sort
	def    string // "" also stands for it
	values []string
	p      *string
}

func (c *choice) String() string { return *c.p }
func (c *choice) Type() string   { return "string" }

func (c *choice) Set(s string) error {
	if s == "" && c.def == "" {
		*c.p = ""
		return nil
	}
	v, err := oneOf(c.flag, s, c.values)
	if err != nil {
		return err
	}
	*c.p = v
	return nil
}

// choiceVar defines the flag name, stored in p, that takes one of values
// (def is its default: one of them, or "" for none).
func choiceVar(fs *pflag.FlagSet, p *string, name, def, usage string, values ...string) {
	*p = def
	fs.Var(&choice{flag: "--" + name, def: def, values: values, p: p}, name, usage)
}

// completeChoices makes the values of each choice flag of c its
// completions.
func completeChoices(c *cobra.Command) {
	c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		if ch, ok := f.Value.(*choice); ok {
			c.RegisterFlagCompletionFunc(f.Name, fixed(ch.values...))
		}
	})
}

// readWindow reads a --window value, [RULE/]WRITER=DURATION, whose RULE
// is one of those reconstruct finds causes by.
func readWindow(s string) (reconstruct.Window, error) {
	w, err := reconstruct.ParseWindow(s)
	if err != nil {
		return w, usagef("%v", err)
	}
	if w.Rule != "" {
		if w.Rule, err = oneOf(fmt.Sprintf("--window %q: rule", s), w.Rule, reconstruct.RuleNames()); err != nil {
			return w, err
		}
	}
	return w, nil
}
