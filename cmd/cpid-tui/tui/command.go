package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/cpid-dev/cpid"
)

// command is one of what the command line (:, as in k9s) takes.
type command struct {
	name    string
	aliases []string
	usage   string
	run     func(m *Model, args []string) tea.Cmd
}

// commands are the command line's, in the order the help lists them.
var commands = []command{
	{"changes", []string{"c", "ch"}, "changes", func(m *Model, _ []string) tea.Cmd {
		return func() tea.Msg { return rootMsg{} }
	}},
	{"history", []string{"h", "hist"}, "history TYPE/NAME [-n NAMESPACE]", (*Model).historyCommand},
	{"anomalies", []string{"a", "an"}, "anomalies", func(m *Model, _ []string) tea.Cmd { return push(newAnomalies(m.a)) }},
	{"diff", []string{"d"}, "diff ID1 ID2", (*Model).diffCommand},
	{"change", []string{"open", "o"}, "change ID", (*Model).changeCommand},
	{"help", []string{"?"}, "help", func(m *Model, _ []string) tea.Cmd { m.help = true; return nil }},
	{"quit", []string{"q", "q!", "exit"}, "quit", func(*Model, []string) tea.Cmd { return tea.Quit }},
}

// usages lists the commands for people.
func usages() string {
	var us []string
	for _, c := range commands {
		us = append(us, c.usage)
	}
	return strings.Join(us, " · ")
}

// lookup finds a command by its name, an alias, or a prefix of one name.
func lookup(name string) (command, bool) {
	name = strings.ToLower(name)
	var found []command
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
		for _, a := range c.aliases {
			if a == name {
				return c, true
			}
		}
		if strings.HasPrefix(c.name, name) {
			found = append(found, c)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return command{}, false
}

// complete completes the command name of a line being typed.
func complete(line string) string {
	if strings.Contains(strings.TrimLeft(line, " "), " ") {
		return line
	}
	if c, ok := lookup(strings.TrimSpace(line)); ok && strings.TrimSpace(line) != "" {
		return c.name + " "
	}
	return line
}

// command runs a command line.
func (m *Model) command(line string) tea.Cmd {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return nil
	}
	c, ok := lookup(fields[0])
	if !ok {
		if cmd, ok := m.resourceCommand(fields); ok {
			return cmd
		}
		return notice(fmt.Sprintf("unknown command %q: %s", fields[0], usages()))
	}
	return c.run(m, fields[1:])
}

// resourceCommand takes a command line that starts with a resource, as in
// k9s: :pods NAME, :deploy/web, :no kwok-node-0 -n ns open the history of
// the object (as :history does), and a resource alone (:pods, :deploy -n
// ns) lists its objects with writes, to open the history of one; false
// when the line does not start with a resource (a built-in one by any of
// kubectl's names, or any resource followed by a name).
func (m *Model) resourceCommand(fields []string) (tea.Cmd, bool) {
	typ, name, slash := strings.Cut(fields[0], "/")
	t, err := cpid.ParseType(typ)
	ns, rest, bad := namespaceFlag(fields)
	if err != nil || (t.Scope == cpid.ScopeUnknown && !slash && len(rest) == 1) {
		return nil, false
	}
	switch {
	case bad != "":
		return notice(bad), true
	case !slash && len(rest) == 1 || slash && name == "" && len(rest) == 1:
		return m.objectsCommand(typ, t, ns), true
	}
	return m.historyCommand(fields), true
}

// objectsCommand lists the objects of resource t with writes, in
// namespace ns or ("") in every namespace.
func (m *Model) objectsCommand(typed string, t cpid.TypeRef, ns string) tea.Cmd {
	a := m.a
	return func() tea.Msg {
		q := cpid.ObjectQuery{ResourceMatch: t.ResourceMatch, Namespace: ns, AllNamespaces: ns == "" || t.Scope == cpid.ScopeCluster}
		ms, err := a.st.Objects(a.ctx, q)
		in := ""
		if ns != "" && t.Scope != cpid.ScopeCluster {
			in = " in namespace " + ns
		}
		switch {
		case err != nil:
			return noticeMsg(typed + ": " + err.Error())
		case len(ms) == 0:
			return noticeMsg(fmt.Sprintf("%s: no object of %s has writes%s", typed, t.Kind, in))
		}
		return pushMsg{newObjects(a, typed, fmt.Sprintf("%s: %s with writes%s", t.Kind, plural(len(ms), "object"), in), ms)}
	}
}

// namespaceFlag takes -n NAMESPACE (--namespace, -n=NAMESPACE) out of
// args; bad says what is wrong with it.
func namespaceFlag(args []string) (ns string, rest []string, bad string) {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-n" || a == "--namespace":
			if i+1 == len(args) {
				return "", nil, a + " wants a namespace"
			}
			ns, i = args[i+1], i+1
		case strings.HasPrefix(a, "-n="), strings.HasPrefix(a, "--namespace="):
			_, ns, _ = strings.Cut(a, "=")
		default:
			rest = append(rest, a)
		}
	}
	return ns, rest, ""
}

// historyCommand opens the history of the object a kubectl-style
// reference names (deploy/web, deployments.apps/web, pod web-x -n ns),
// found as cpid-tui history finds it; several objects of that name are
// listed to choose from.
func (m *Model) historyCommand(args []string) tea.Cmd {
	ns, ref, bad := namespaceFlag(args)
	if bad != "" {
		return notice(bad)
	}
	r, err := cpid.ParseRef(ref)
	if err != nil {
		return notice("history: " + err.Error())
	}
	a := m.a
	return func() tea.Msg {
		q := cpid.ObjectQuery{ResourceMatch: r.ResourceMatch, Name: r.Name, Namespace: ns, AllNamespaces: ns == "" || r.Scope == cpid.ScopeCluster}
		ms, err := a.st.Objects(a.ctx, q)
		switch {
		case err != nil:
			return noticeMsg("history: " + err.Error())
		case len(ms) == 0 && ns != "":
			return noticeMsg(fmt.Sprintf("history: no writes of %s in namespace %s", r, ns))
		case len(ms) == 0:
			return noticeMsg(fmt.Sprintf("history: no writes of %s", r))
		case len(ms) == 1:
			return pushMsg{newHistory(a, ms[0].ObjectKey, cpid.KindOf("", ms[0].Resource), "", 0)}
		}
		return pushMsg{newObjects(a, "objects named "+r.String(), fmt.Sprintf("%s names %s", r, plural(len(ms), "object")), ms)}
	}
}

// diffCommand compares two changes, by ids or unique prefixes.
func (m *Model) diffCommand(args []string) tea.Cmd {
	if len(args) != 2 {
		return notice("diff wants two change ids: diff ID1 ID2 (or space marks one in the list, d compares)")
	}
	a := m.a
	return func() tea.Msg {
		var ids [2]string
		for i, id := range args {
			full, err := resolve(a.ctx, a.st, id)
			if err != nil {
				return noticeMsg("diff: " + err.Error())
			}
			ids[i] = full
		}
		return pushMsg{newCompare(a, ids[0], ids[1])}
	}
}

// changeCommand opens a change by its id or a unique prefix.
func (m *Model) changeCommand(args []string) tea.Cmd {
	if len(args) != 1 {
		return notice("change wants one change id")
	}
	a := m.a
	return func() tea.Msg {
		id, err := resolve(a.ctx, a.st, args[0])
		if err != nil {
			return noticeMsg("change: " + err.Error())
		}
		return pushMsg{newChange(a, id)}
	}
}

// resolve returns the id of the change that id is, or the one change
// whose id starts with it.
func resolve(ctx context.Context, st cpid.ChangeReader, id string) (string, error) {
	full, cs, err := cpid.ChangeByPrefix(ctx, st, id, 2)
	switch {
	case err != nil:
		return "", err
	case full != "":
		return full, nil
	case len(cs) == 0:
		return "", fmt.Errorf("no change %q", id)
	}
	return "", errors.New("change id " + id + " starts several changes' ids: give more of it")
}
