package instrument_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/cpid-dev/cpid/instrument"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// full returns a context named cpid with n ancestors named cpid0, cpid1...
func full(cpid string, n int) instrument.Context {
	c := instrument.Context{CPID: id(cpid)}
	for i := range n {
		c.Ancestors = append(c.Ancestors, id(fmt.Sprint(cpid, i)))
	}
	return c
}

func BenchmarkExtract(b *testing.B) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"app": "web"}}}
	instrument.Inject(pod, full("a", 10))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := instrument.Extract(pod); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInject(b *testing.B) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"app": "web"}}}
	c := full("a", 10)
	instrument.Inject(pod, c) // the keys exist, as on an update
	b.ReportAllocs()
	for b.Loop() {
		instrument.Inject(pod, c)
	}
}

// benchMerge merges k contexts at N=10, each with 10 ancestors. With reuse,
// the last one descends from all the others (the paper's Figure 8); without,
// they are disjoint and a CPID is minted and its mergelog emitted.
func benchMerge(b *testing.B, k int, reuse bool) {
	// The emitter is flushed with the timer stopped: what is measured is the
	// reconcile's side of emission (a non-blocking send to the buffer), not
	// the JSON encoding that Run does on its own goroutine.
	e := instrument.NewEmitter(io.Discard, 1024)
	tr := instrument.New("bench", e, instrument.WithMaxAncestors(10))
	in := make([]instrument.Context, k)
	for i := range in {
		in[i] = full(fmt.Sprint("c", i), 10)
	}
	if reuse {
		last := &in[k-1]
		last.Ancestors = last.Ancestors[:0]
		for i := range k - 1 {
			last.Ancestors = append(last.Ancestors, in[i].CPID)
		}
		for i := 0; len(last.Ancestors) < 10; i++ {
			last.Ancestors = append(last.Ancestors, id(fmt.Sprint("x", i)))
		}
	}
	obj := instrument.ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "default", Name: "web"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c := tr.Merge(obj, in...)
		if c.IsZero() {
			b.Fatal("no context")
		}
		if i++; i%512 == 0 {
			b.StopTimer()
			if err := e.Flush(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	if s := e.Stats(); s.Dropped > 0 {
		b.Fatalf("%d records dropped", s.Dropped)
	}
}

func BenchmarkMerge2Reuse(b *testing.B) { benchMerge(b, 2, true) }
func BenchmarkMerge2Mint(b *testing.B)  { benchMerge(b, 2, false) }
func BenchmarkMerge4Reuse(b *testing.B) { benchMerge(b, 4, true) }
func BenchmarkMerge4Mint(b *testing.B)  { benchMerge(b, 4, false) }
