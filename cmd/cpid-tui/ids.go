package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cpid-dev/cpid"
)

// maxCandidates is how many changes an ambiguous prefix lists.
const maxCandidates = 10

// resolveChange returns the id of the change that id names: the change of
// that id, else the one change whose id starts with it. A prefix that
// starts several ids is an error (errAmbiguous) listing them.
func resolveChange(ctx context.Context, st cpid.ChangeReader, id string) (string, error) {
	if id == "" {
		return "", errors.New("no change id given")
	}
	full, cs, err := cpid.ChangeByPrefix(ctx, st, id, maxCandidates)
	switch {
	case err != nil:
		return "", err
	case full != "":
		return full, nil
	case len(cs) == 0:
		return "", fmt.Errorf("no change %q (cpid-tui query changes lists them)", id)
	}
	var b strings.Builder
	n := fmt.Sprint(len(cs))
	if len(cs) > maxCandidates {
		cs, n = cs[:maxCandidates], fmt.Sprintf("more than %d", maxCandidates)
	}
	fmt.Fprintf(&b, "change id %q is ambiguous: it starts the ids of %s changes, newest first:", id, n)
	for _, c := range cs {
		fmt.Fprintf(&b, "\n  %s  %s  %s %s", c.ID, clock(c.StartedNS), c.Verb, object(c.Kind, c.Namespace, c.Name)+sub(c.Subresource))
	}
	b.WriteString("\ngive more of the id")
	return "", markf(errAmbiguous, "%s", b.String())
}

// resolveCPID returns the CPID that id names: that CPID of the merge graph,
// else the one that starts with it; a prefix of several is an error
// (errAmbiguous) listing them.
func resolveCPID(ctx context.Context, st cpid.ChangeReader, id string) (string, error) {
	if id == "" {
		return "", errors.New("no CPID given")
	}
	cs, err := st.CPIDs(ctx, id, maxCandidates+1)
	if err != nil {
		return "", err
	}
	switch {
	case slices.Contains(cs, id):
		return id, nil
	case len(cs) == 0:
		return "", fmt.Errorf("no CPID %q in the merge graph (a change's id is its root CPID: cpid-tui query changes lists them)", id)
	case len(cs) == 1:
		return cs[0], nil
	}
	n := fmt.Sprint(len(cs))
	if len(cs) > maxCandidates {
		cs, n = cs[:maxCandidates], fmt.Sprintf("more than %d", maxCandidates)
	}
	return "", markf(errAmbiguous, "CPID %q is ambiguous: it starts %s CPIDs:\n  %s\ngive more of it", id, n, strings.Join(cs, "\n  "))
}

// idLength is how many characters of a change id or CPID a listing in
// format shows: for -o table the shortest prefix, minIDLength or more,
// unique among the ids of the database and those listed
// (cpid.IDLength); 0 (whole) for the others.
func idLength(ctx context.Context, st cpid.ChangeReader, format string, listed ...string) (int, error) {
	if format != "" && format != "table" {
		return 0, nil
	}
	return cpid.IDLength(ctx, st, minIDLength, listed...)
}
