package ingest_test

import (
	"encoding/json"
	"strings"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/cpid-dev/cpid/ingest"
)

// benchLines returns named sets of real-shaped lines.
func benchLines(b *testing.B) map[string][][]byte {
	read := func(names ...string) [][]byte {
		var out [][]byte
		for _, n := range names {
			out = append(out, readLine(b, n))
		}
		return out
	}
	return map[string][][]byte{
		// RequestResponse events of 1 to 5 KB.
		"RequestResponse": read("audit/rs-create.json", "audit/pod-create-generatename.json",
			"audit/rs-status-conflict.json", "audit/pod-delete.json", "audit/deploy-scale-patch.json",
			"audit/pod-binding.json"),
		// Metadata-level events of about 1 KB.
		"Metadata": read("audit/rs-create-metadata.json", "audit/rs-watch-started.json"),
	}
}

func reportRate(b *testing.B, lines [][]byte, events int) {
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	b.SetBytes(int64(n / len(lines)))
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkDecodeAudit(b *testing.B) {
	for _, name := range []string{"RequestResponse", "Metadata"} {
		lines := benchLines(b)[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			events := 0
			for i := 0; b.Loop(); i++ {
				evs, err := ingest.DecodeAudit(lines[i%len(lines)])
				if err != nil {
					b.Fatal(err)
				}
				events += len(evs)
			}
			reportRate(b, lines, events)
		})
	}
}

// BenchmarkDecodeAuditParallel is DecodeAudit on every core.
func BenchmarkDecodeAuditParallel(b *testing.B) {
	lines := benchLines(b)["RequestResponse"]
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			if _, err := ingest.DecodeAudit(lines[i%len(lines)]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	reportRate(b, lines, b.N)
}

// BenchmarkReference decodes the same lines into the reference type with
// encoding/json, for comparison.
func BenchmarkReference(b *testing.B) {
	lines := benchLines(b)["RequestResponse"]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		var e auditv1.Event
		if err := json.Unmarshal(lines[i%len(lines)], &e); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, lines, b.N)
}

func BenchmarkDecodeLog(b *testing.B) {
	lines := [][]byte{}
	for _, f := range []string{"kube-controller-manager", "controller-runtime", "slog"} {
		for l := range strings.SplitSeq(string(readLine(b, "logs/"+f+".jsonl")), "\n") {
			lines = append(lines, []byte(l))
		}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := ingest.DecodeLog(lines[i%len(lines)]); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, lines, b.N)
}
