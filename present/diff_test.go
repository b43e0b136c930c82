package present

import (
	"slices"
	"strings"
	"testing"
)

func TestDiffLines(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b string
		want string // ops, one per line: " x", "-x", "+x"
	}{
		{"same", "a b c", "a b c", " a  b  c"},
		{"changed middle", "a b c", "a x c", " a -b +x  c"},
		{"added end", "a b", "a b c", " a  b +c"},
		{"removed start", "a b c", "b c", "-a  b  c"},
		{"from nothing", "", "a b", "+a +b"},
		{"to nothing", "a b", "", "-a -b"},
		{"moved", "a b c d", "b c a d", "-a  b  c +a  d"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, o := range DiffLines(strings.Fields(c.a), strings.Fields(c.b)) {
				got = append(got, string(o.Op)+o.Text)
			}
			if s := strings.Join(got, " "); s != c.want {
				t.Errorf("diff %q → %q = %q, want %q", c.a, c.b, s, c.want)
			}
		})
	}
}

func TestHunks(t *testing.T) {
	a := strings.Fields("1 2 3 4 5 6 7 8 9 10 11 12")
	b := slices.Clone(a)
	b[1], b[10] = "two", "eleven"
	var got []string
	for _, o := range Hunks(DiffLines(a, b), 1) {
		if o.Op == 0 {
			got = append(got, "⋯")
			continue
		}
		got = append(got, string(o.Op)+o.Text)
	}
	want := " 1 -2 +two  3 ⋯  10 -11 +eleven  12"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("Hunks = %q, want %q", s, want)
	}
}

func TestObjectLines(t *testing.T) {
	body := `{"kind":"Pod","metadata":{"name":"p","managedFields":[{"manager":"kubectl"}]},"spec":{"x":1.50}}`
	hidden := strings.Join(ObjectLines(body, false), "\n")
	shown := strings.Join(ObjectLines(body, true), "\n")
	if strings.Contains(hidden, "managedFields") || !strings.Contains(shown, `"manager": "kubectl"`) {
		t.Errorf("managedFields: hidden\n%s\nshown\n%s", hidden, shown)
	}
	if !strings.Contains(hidden, `"x": 1.50`) {
		t.Errorf("numbers are not kept as written:\n%s", hidden)
	}
	if got := ObjectLines("not json", false); !slices.Equal(got, []string{"not json"}) {
		t.Errorf("a body that is not JSON: %q", got)
	}
}
