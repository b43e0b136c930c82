// Package candidates measures the JSON readers cpid could use on the real
// fixtures and checks how they treat hostile input; see
// docs/BENCHMARKS.notes.md. It is a module of its own so that the
// libraries it compares stay out of cpid's go.mod.
package candidates

import (
	"bufio"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpid-dev/cpid/ingest"
)

// fixtures returns the real audit lines of every fixture, and the response
// bodies reconstruct decodes (Pods, Nodes, EndpointSlices, Endpoints; not
// the Status of a failed write), read as reconstruct's BenchmarkDecodeBody
// reads them.
func fixtures(tb testing.TB) (lines, bodies [][]byte) {
	tb.Helper()
	dirs, _ := filepath.Glob("../../../fixtures/*/bundle/audit")
	w := &ingest.Walker{}
	files, err := w.Files(dirs)
	if err != nil {
		tb.Fatal(err)
	}
	reads := map[string]bool{"pods": true, "nodes": true, "endpointslices": true, "endpoints": true}
	for _, f := range files {
		err := w.Read(context.Background(), f, func(s ingest.Stream) error {
			sc := bufio.NewScanner(s.R)
			sc.Buffer(nil, 16<<20)
			for sc.Scan() {
				lines = append(lines, []byte(string(sc.Bytes())))
				evs, err := ingest.DecodeAudit(sc.Bytes())
				if err != nil {
					return err
				}
				for _, ev := range evs {
					if len(ev.ResponseObject) > 0 && reads[ev.Resource] &&
						!strings.HasPrefix(string(ev.ResponseObject), `{"kind":"Status"`) {
						bodies = append(bodies, ev.ResponseObject)
					}
				}
			}
			return sc.Err()
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return lines, bodies
}

// body is reconstruct's body: the few fields its rules read.
type body struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
	Status struct {
		Conditions []condition `json:"conditions"`
	} `json:"status"`
	Endpoints []endpoint `json:"endpoints"`
	Subsets   []subset   `json:"subsets"`
}

type condition struct {
	Type               string `json:"type"`
	LastTransitionTime string `json:"lastTransitionTime"`
}

type endpoint struct {
	TargetRef *targetRef `json:"targetRef"`
}

type subset struct {
	Addresses         []address `json:"addresses"`
	NotReadyAddresses []address `json:"notReadyAddresses"`
}

type address struct{ TargetRef *targetRef }

type targetRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func size(xs [][]byte) int64 {
	n := 0
	for _, x := range xs {
		n += len(x)
	}
	return int64(n)
}
