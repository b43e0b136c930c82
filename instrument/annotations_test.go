package instrument_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/instrument"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParse(t *testing.T) {
	a, b := id("a").String(), id("b").String()
	tests := []struct {
		name      string
		cpid, anc string
		want      string
		errKey    string // key of the *AnnotationError, "" for none
	}{
		{name: "absent", want: ""},
		{name: "ancestors without CPID", anc: a, want: ""},
		{name: "CPID only", cpid: a, want: "a"},
		{name: "upper case", cpid: strings.ToUpper(a), want: "a"},
		{name: "with ancestors", cpid: a, anc: b, want: "a:b"},
		{name: "spaces around entries", cpid: " " + a + " ", anc: " " + b + " , " + id("c").String(), want: "a:b,c"},
		{name: "empty ancestors", cpid: a, anc: " ", want: "a"},
		{name: "CPID not a UUID", cpid: "hello", errKey: instrument.KeyCPID, want: ""},
		{name: "CPID in braces", cpid: "{" + a + "}", errKey: instrument.KeyCPID, want: ""},
		{name: "CPID without hyphens", cpid: strings.ReplaceAll(a, "-", ""), errKey: instrument.KeyCPID, want: ""},
		{name: "CPID with a bad digit", cpid: "g" + a[1:], errKey: instrument.KeyCPID, want: ""},
		{name: "nil UUID", cpid: "00000000-0000-0000-0000-000000000000", errKey: instrument.KeyCPID, want: ""},
		{name: "bad ancestor", cpid: a, anc: b + ",nope", errKey: instrument.KeyAncestors, want: "a"},
		{name: "empty ancestor entry", cpid: a, anc: b + ",,", errKey: instrument.KeyAncestors, want: "a"},
		{name: "ancestor is the CPID", cpid: a, anc: b + "," + a, errKey: instrument.KeyAncestors, want: "a"},
		{name: "too many ancestors", cpid: a, anc: strings.Repeat(b+",", instrument.MaxAncestorsLimit) + b,
			errKey: instrument.KeyAncestors, want: "a"},
		{name: "most ancestors", cpid: a, anc: strings.Repeat(b+",", instrument.MaxAncestorsLimit-1) + b,
			want: "a:" + strings.Repeat("b,", instrument.MaxAncestorsLimit-1) + "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := instrument.Parse(tt.cpid, tt.anc)
			if s := show(got); s != tt.want {
				t.Errorf("Parse = %q, want %q", s, tt.want)
			}
			var ae *instrument.AnnotationError
			switch {
			case tt.errKey == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.errKey != "" && (!errors.As(err, &ae) || ae.Key != tt.errKey):
				t.Errorf("error %v, want an *AnnotationError for %s", err, tt.errKey)
			}
		})
	}
}

// TestExtractTolerates reads the annotations a careless or hostile writer may
// leave: nothing, a CPID that is not a UUID, and a megabyte of ancestors.
// Each is tolerated, treated as absent, and counted.
func TestExtractTolerates(t *testing.T) {
	tr := instrument.New("test", nil)
	huge := strings.Repeat(id("b").String()+",", 1<<20/37)

	if c := tr.Extract(&corev1.Pod{}); !c.IsZero() {
		t.Errorf("nil annotations gave %v", c)
	}
	if c := tr.Extract(nil); !c.IsZero() {
		t.Errorf("nil object gave %v", c)
	}
	if c := tr.Extract(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		instrument.KeyCPID: "not-a-uuid-at-all",
	}}}); !c.IsZero() {
		t.Errorf("bad CPID gave %v", c)
	}
	c := tr.Extract(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		instrument.KeyCPID:      id("a").String(),
		instrument.KeyAncestors: huge,
	}}})
	if show(c) != "a" {
		t.Errorf("1 MB of ancestors gave %q, want the CPID alone", show(c))
	}
	_, err := instrument.Parse(id("a").String(), huge)
	if err == nil || len(err.Error()) > 200 {
		t.Errorf("error for 1 MB of ancestors: %.200v", err)
	}

	want := instrument.Stats{Extracts: 4, Absent: 3, BadCPID: 1, BadAncestors: 1}
	if got := tr.Stats(); got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
}

func TestInject(t *testing.T) {
	tests := []struct {
		name   string
		before map[string]string
		c      string
		want   map[string]string
	}{
		{name: "into nil", c: "a:b,c", want: map[string]string{
			instrument.KeyCPID: id("a").String(), instrument.KeyAncestors: id("b").String() + "," + id("c").String()}},
		{name: "keeps other annotations", before: map[string]string{"x": "y"}, c: "a",
			want: map[string]string{"x": "y", instrument.KeyCPID: id("a").String()}},
		{name: "no ancestors removes stale ones", before: map[string]string{
			instrument.KeyCPID: id("z").String(), instrument.KeyAncestors: id("y").String()}, c: "a",
			want: map[string]string{instrument.KeyCPID: id("a").String()}},
		{name: "zero context removes both", before: map[string]string{
			"x": "y", instrument.KeyCPID: id("z").String(), instrument.KeyAncestors: id("y").String()}, c: "",
			want: map[string]string{"x": "y"}},
		{name: "zero context into nil", c: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, obj := range []metav1.Object{
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: clone(tt.before)}},
				&unstructured.Unstructured{Object: map[string]any{}},
			} {
				if u, ok := obj.(*unstructured.Unstructured); ok && tt.before != nil {
					u.SetAnnotations(clone(tt.before))
				}
				instrument.Inject(obj, tc(tt.c))
				got := obj.GetAnnotations()
				if len(got) != len(tt.want) {
					t.Fatalf("%T: annotations %v, want %v", obj, got, tt.want)
				}
				for k, v := range tt.want {
					if got[k] != v {
						t.Errorf("%T: %s = %q, want %q", obj, k, got[k], v)
					}
				}
				if back, err := instrument.Extract(obj); err != nil || show(back) != tt.c {
					t.Errorf("%T: Extract after Inject = %q, %v; want %q", obj, show(back), err, tt.c)
				}
			}
		})
	}
}

func clone(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func FuzzParse(f *testing.F) {
	f.Add(id("a").String(), id("b").String())
	f.Add("x", ",,,")
	f.Add(id("a").String(), id("a").String())
	f.Fuzz(func(t *testing.T, cpid, anc string) {
		c, err := instrument.Parse(cpid, anc)
		if c.IsZero() && len(c.Ancestors) > 0 {
			t.Fatal("ancestors without a CPID")
		}
		if err != nil || c.IsZero() {
			return
		}
		// What Parse accepts, Format writes back identically (up to case and
		// spaces) and Parse reads again.
		again, err := instrument.Parse(c.Format())
		if err != nil || again.String() != c.String() {
			t.Fatalf("round trip of %v gave %v, %v", c, again, err)
		}
	})
}
