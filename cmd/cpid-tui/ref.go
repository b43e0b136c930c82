package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/present"
)

// errAmbiguous marks a reference or an id that names more than one thing;
// the message lists the candidates.
var errAmbiguous = errors.New("ambiguous")

// findObject resolves a reference to the one object it names in the
// store: in namespace ns when given (ignored, with a note to w, for a
// cluster-scoped resource), else in whatever namespace holds an object of
// that name, and an error listing them when several do. The namespace
// "default" is never assumed: reading recorded logs, nothing says which
// namespace the reader's kubeconfig would have chosen.
func findObject(ctx context.Context, st cpid.ChangeReader, w io.Writer, ref cpid.ObjectRef, ns string) (cpid.ObjectMatch, error) {
	// Which objects the reference names, without their writes counted;
	// counted when several are listed.
	q := cpid.ObjectQuery{ResourceMatch: ref.ResourceMatch, Name: ref.Name, KeysOnly: true}
	switch {
	case ref.Scope == cpid.ScopeCluster:
		if ns != "" {
			fmt.Fprintf(w, "cpid-tui: %s are cluster-scoped: --namespace %s ignored\n", ref.Resources[0], ns)
		}
	case ns != "":
		q.Namespace = ns
	default:
		q.AllNamespaces = true
	}
	ms, err := st.Objects(ctx, q)
	if err != nil {
		return cpid.ObjectMatch{}, err
	}
	switch {
	case len(ms) == 1:
		return ms[0], nil
	case len(ms) > 1:
		counted := q
		counted.KeysOnly = false
		if ms, err = st.Objects(ctx, counted); err != nil {
			return cpid.ObjectMatch{}, err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s names %d objects:", ref, len(ms))
		fleet := ms[0].Cluster != ms[len(ms)-1].Cluster
		for _, m := range ms {
			fmt.Fprintf(&b, "\n  %s  (%s, %s to %s)", describeMatch(m, fleet), present.Plural(m.Writes, "write"), clock(m.FirstNS), clock(m.LastNS))
		}
		b.WriteString("\ngive one with --namespace (-n), a group (TYPE.GROUP/NAME) or --cluster")
		return cpid.ObjectMatch{}, markf(errAmbiguous, "%s", b.String())
	}
	for _, r := range ref.Resources {
		if res, ok := cpid.LookupResource(r); ok && res.Ignored() {
			return cpid.ObjectMatch{}, fmt.Errorf("%s: cpid leaves the writes of %s out of revisions (heartbeats and records, not propagation)", ref, r)
		}
	}
	if !q.AllNamespaces && q.Namespace != "" {
		q.AllNamespaces = true
		if elsewhere, err := st.Objects(ctx, q); err == nil && len(elsewhere) > 0 {
			var at []string
			for _, m := range elsewhere {
				at = append(at, describeMatch(m, false))
			}
			return cpid.ObjectMatch{}, fmt.Errorf("no writes of %s in namespace %s; there are of %s", ref, ns, strings.Join(at, ", "))
		}
	}
	where := ""
	if q.Namespace != "" {
		where = " in namespace " + q.Namespace
	}
	return cpid.ObjectMatch{}, fmt.Errorf("no writes of %s%s (cpid-tui query changes lists what was reconstructed)", ref, where)
}

// describeMatch names an object found: Deployment.apps default/web, with
// its cluster when the matches span several.
func describeMatch(m cpid.ObjectMatch, cluster bool) string {
	kind := cpid.KindOf("", m.Resource)
	if m.Group != "" {
		kind += "." + m.Group
	}
	s := object(kind, m.Namespace, m.Name)
	if cluster {
		s += " in cluster " + m.Cluster
	}
	return s
}
