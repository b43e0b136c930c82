package cpid_test

import (
	"slices"
	"testing"

	"github.com/cpid-dev/cpid"
)

func TestWriterPatterns(t *testing.T) {
	for _, c := range []struct {
		writer string
		want   []string
	}{
		{"deployment-controller", []string{"%deployment-controller%", "%controller-manager%"}},
		{"generic-garbage-collector", []string{"%generic-garbage-collector%", "%controller-manager%"}},
		{"kube-scheduler", []string{"%kube-scheduler%", "%scheduler%"}},
		{"kwok", []string{"%kwok%"}},
		{"kubelet node-1", []string{"%kubelet%node-1%", "%kubelet%"}},
		{"my%operator", []string{"%my_operator%"}},
	} {
		t.Run(c.writer, func(t *testing.T) {
			if got := cpid.WriterPatterns(c.writer); !slices.Equal(got, c.want) {
				t.Errorf("WriterPatterns(%q) = %q, want %q", c.writer, got, c.want)
			}
		})
	}
}
