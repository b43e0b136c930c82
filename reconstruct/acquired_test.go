package reconstruct

import (
	"testing"

	"github.com/cpid-dev/cpid"
)

// TestAcquiredLeases: leader election log lines make handovers when the
// audit log holds no Lease holders: an acquisition by another log is one,
// the same process (or container) acquiring again is not, and the old
// message form names its lease in the message.
func TestAcquiredLeases(t *testing.T) {
	for file, want := range map[string]string{
		"bundle/logs/kube-controller-manager-2.log":                                                "kube-controller-manager-2.log",
		"/var/log/pods/kube-system_kube-controller-manager-cp1_0c1e/kube-controller-manager/3.log": "kube-system_kube-controller-manager-cp1_0c1e/kube-controller-manager",
		"/var/log/containers/kcm.log":                                                              "kcm.log",
	} {
		if got := logHolder(file); got != want {
			t.Errorf("logHolder(%q) = %q, want %q", file, got, want)
		}
	}
	x := newEvidence()
	lock := "kube-system/kube-controller-manager"
	for _, ev := range []cpid.Evidence{
		{Kind: "acquired", AtNS: 10, Lease: lock, Holder: AcquiredMsg, File: "a/kcm-1.log"},
		{Kind: "acquired", AtNS: 20, Lease: lock, Holder: AcquiredMsg, File: "b/kcm-1.log"},              // the same log name: a restart
		{Kind: "acquired", AtNS: 30, Holder: "successfully acquired lease " + lock, File: "x/kcm-2.log"}, // old form
		{Kind: "acquired", AtNS: 40, Lease: "kube-system/my-operator", Holder: AcquiredMsg, File: "x/kcm-1.log"},
		{Kind: "acquired", AtNS: 50, Lease: "default/kube-controller-manager", Holder: AcquiredMsg, File: "x/kcm-1.log"},
	} {
		x.add(ev)
	}
	hs := x.logged["kube-controller-manager"]
	if len(hs) != 2 || hs[0].From != "" || hs[0].To != "kcm-1.log" || hs[1].From != "kcm-1.log" || hs[1].To != "kcm-2.log" || hs[1].FromNS != 20 {
		t.Fatalf("handovers %+v", hs)
	}
	if h, ok := x.handoverIn("kube-controller-manager", 25, 35); !ok || h.AtNS != 30 || !h.Logged {
		t.Errorf("handoverIn(25, 35) = %+v, %v", h, ok)
	}
	if _, ok := x.handoverIn("kube-controller-manager", 31, 60); ok {
		t.Error("a handover after 31")
	}
}
