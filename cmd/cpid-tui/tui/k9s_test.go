package tui

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid"
	"github.com/cpid-dev/cpid/sqlite"
)

// TestResourceCommands: as in k9s, a command may start with a resource,
// by any of kubectl's names: :deploy web, :deployments/web, :no NAME open
// the object's history.
func TestResourceCommands(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	for _, c := range []struct {
		line, resource, name string
	}{
		{"deploy web", "deployments", "web"},
		{"deployments/web -n default", "deployments", "web"},
		{"Deployment.apps web", "deployments", "web"},
		{"no kwok-node-0", "nodes", "kwok-node-0"},
		{"nodes/kwok-node-0", "nodes", "kwok-node-0"},
		{"svc web", "services", "web"},
		{"po " + strings.TrimPrefix(podOf(t, m), "pod/"), "pods", strings.TrimPrefix(podOf(t, m), "pod/")},
	} {
		runCommand(t, m, c.line)
		h, ok := m.top().(*historyScreen)
		if !ok || !h.loaded || h.err != nil || h.ref.Resource != c.resource || h.ref.Name != c.name || len(h.rows) == 0 {
			t.Errorf(":%s opened %q, want the history of %s/%s:\n%s", c.line, m.top().crumb(), c.resource, c.name, plain(m))
		}
		runCommand(t, m, "changes")
	}
	for line, want := range map[string]string{
		"pods -n":     "-n wants a namespace",
		"pods -n x":   "no object of Pod has writes in namespace x",
		"widgets web": "no writes of widgets/web",
		"widgets":     `unknown command "widgets"`,
		"frobnicate":  `unknown command "frobnicate"`,
	} {
		runCommand(t, m, line)
		if s := plain(m); !strings.Contains(s, want) || len(m.stack) != 1 {
			t.Errorf(":%s: want %q in the status line, the list unchanged:\n%s", line, want, s)
		}
	}
}

// TestComingFromK9s: the help says which keys differ from k9s's.
func TestComingFromK9s(t *testing.T) {
	m := newTest(t, 200, 50, Options{})
	press(t, m, "?")
	help := plain(m)
	for _, want := range []string{"Coming from k9s", "d is diff here (describe in k9s)", "l expands", "(logs in k9s", ":pods, :deploy, :no", "list its objects", ":pods NAME"} {
		if !strings.Contains(help, want) {
			t.Errorf("the help does not say %q:\n%s", want, help)
		}
	}
}

// TestResourceLists: a resource alone (:pods, :deploy -n default, :no,
// :deploy/) lists its objects with writes in the database, every one the
// changes' timelines wrote; enter opens the history of the one under the
// cursor.
func TestResourceLists(t *testing.T) {
	m := newTest(t, 100, 30, Options{})
	path, _ := fixtureDB()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	cs, err := st.Changes(ctx, cpid.ChangeQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	written := map[string][]string{} // resource: "namespace/name" written
	for _, c := range cs {
		tl, err := st.Timeline(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range tl {
			if o := e.Namespace + "/" + e.Name; !slices.Contains(written[e.Resource], o) {
				written[e.Resource] = append(written[e.Resource], o)
			}
		}
	}
	for _, c := range []struct{ line, resource, ns, crumb string }{
		{"pods", "pods", "", "pods"},
		{"po -n default", "pods", "default", "po"},
		{"deploy", "deployments", "", "deploy"},
		{"deployments/", "deployments", "", "deployments"},
		{"no", "nodes", "", "no"},
		{"rs", "replicasets", "", "rs"},
	} {
		runCommand(t, m, c.line)
		o, ok := m.top().(*objectsScreen)
		if !ok {
			t.Fatalf(":%s opened %q, want a list of %s:\n%s", c.line, m.top().crumb(), c.resource, plain(m))
		}
		var got []string
		for _, r := range o.rows {
			if r.Resource != c.resource || c.ns != "" && r.Namespace != c.ns {
				t.Errorf(":%s lists %s", c.line, r.ObjectKey)
			}
			got = append(got, r.Namespace+"/"+r.Name)
		}
		want := slices.Clone(written[c.resource])
		slices.Sort(want)
		slices.Sort(got)
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf(":%s lists %v, want the objects the changes wrote, %v", c.line, got, want)
		}
		if !strings.Contains(m.title(100), c.crumb) {
			t.Errorf(":%s: the breadcrumb %q does not name it", c.line, m.title(100))
		}
		press(t, m, "G", "enter")
		h, ok := m.top().(*historyScreen)
		last := o.rows[len(o.rows)-1]
		if !ok || !h.loaded || h.err != nil || h.ref != last.ObjectKey || len(h.rows) != last.Writes {
			t.Errorf(":%s, G, enter opened %q, want the history of %s (%d writes):\n%s", c.line, m.top().crumb(), last.ObjectKey, last.Writes, plain(m))
		}
		runCommand(t, m, "changes")
	}
	small := newTest(t, 80, 24, Options{})
	runCommand(t, small, "pods")
	golden(t, small, "pods-80x24")
}
