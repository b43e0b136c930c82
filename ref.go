package cpid

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// TypeRef is the TYPE of a kubectl-style reference TYPE/NAME, resolved as
// far as it can be without the database.
type TypeRef struct {
	ResourceMatch
	Kind  string // for people: Deployment, or the type as typed
	Scope Scope
}

// ObjectRef is a reference TYPE/NAME, as cpid-tui history and the TUI's
// :history take it.
type ObjectRef struct {
	TypeRef
	Name string
}

// ParseType reads a resource type the way kubectl does, case-insensitive:
// a plural, singular or short name (deployments, deployment, deploy), a
// kind (Deployment), each optionally followed by its API group
// (deployments.apps), or its version and group (deployments.v1.apps). A
// type that is not a built-in resource is matched by its spellings: as
// typed, with s, es or y->ies added, in its group if given, else in any.
func ParseType(s string) (TypeRef, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return TypeRef{}, errors.New("no resource type")
	}
	name, group, grouped := strings.Cut(s, ".")
	if grouped {
		// A version between the resource and its group: deployments.v1.apps.
		if v, rest, ok := strings.Cut(group, "."); ok && isVersion(v) {
			group = rest
		}
		if group == "" || name == "" {
			return TypeRef{}, fmt.Errorf("resource type %q: want RESOURCE or RESOURCE.GROUP (deployments.apps)", s)
		}
		if group == "core" {
			group = ""
		}
	}
	for _, r := range Resources {
		if r.Singular == "" || name != r.Plural && name != r.Singular && name != strings.ToLower(r.Kind) && !slices.Contains(r.Short, name) {
			continue
		}
		if grouped && group != r.Group {
			// The same name in another group (an older group, or a
			// custom resource): the plural there, scope unknown.
			return TypeRef{ResourceMatch: ResourceMatch{Resources: []string{r.Plural}, Group: group}, Kind: r.Kind}, nil
		}
		return TypeRef{ResourceMatch: ResourceMatch{Resources: []string{r.Plural}, Group: r.Group}, Kind: r.Kind, Scope: r.Scope}, nil
	}
	if strings.ContainsAny(name, "/ ") {
		return TypeRef{}, fmt.Errorf("resource type %q: not a resource name", s)
	}
	cands := []string{name}
	if !strings.HasSuffix(name, "s") {
		cands = append(cands, name+"s", name+"es")
		if stem, ok := strings.CutSuffix(name, "y"); ok {
			cands = append(cands, stem+"ies")
		}
	}
	return TypeRef{ResourceMatch: ResourceMatch{Resources: cands, Group: group, AnyGroup: !grouped}, Kind: name, Scope: ScopeUnknown}, nil
}

// isVersion reports whether s looks like an API version: v1, v2beta1.
func isVersion(s string) bool {
	if len(s) < 2 || s[0] != 'v' || s[1] < '1' || s[1] > '9' {
		return false
	}
	for _, c := range s[1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// ParseRef reads an object reference: TYPE/NAME, or TYPE and NAME as two
// arguments (kubectl get deploy web).
func ParseRef(args []string) (ObjectRef, error) {
	var typ, name string
	switch len(args) {
	case 1:
		var ok bool
		if typ, name, ok = strings.Cut(args[0], "/"); !ok {
			return ObjectRef{}, fmt.Errorf("%q: want TYPE/NAME, e.g. deploy/web or node/n1", args[0])
		}
	case 2:
		typ, name = args[0], args[1]
	default:
		return ObjectRef{}, errors.New("want one object: TYPE/NAME")
	}
	if name == "" || strings.Contains(name, "/") {
		return ObjectRef{}, fmt.Errorf("%q: want TYPE/NAME with a name without '/', e.g. deploy/web", strings.Join(args, " "))
	}
	t, err := ParseType(typ)
	if err != nil {
		return ObjectRef{}, err
	}
	return ObjectRef{TypeRef: t, Name: name}, nil
}

// String is the reference as Kind.group/NAME, or Kind/NAME for the core
// group and for a type whose group is not known (AnyGroup).
func (r ObjectRef) String() string {
	if r.AnyGroup || r.Group == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "." + r.Group + "/" + r.Name
}
