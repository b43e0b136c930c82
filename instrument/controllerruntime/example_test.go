package controllerruntime_test

import (
	"os"

	cpidctrl "github.com/cpid-dev/cpid/instrument/controllerruntime"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
)

// A kubebuilder project's cmd/main.go adopts cpid by making its manager
// with cpidctrl.NewManager instead of ctrl.NewManager: the one line.
func ExampleNewManager() {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	mgr, err := cpidctrl.NewManager("my-operator", ctrl.GetConfigOrDie(), ctrl.Options{Scheme: scheme})
	if err != nil {
		os.Exit(1)
	}
	// ... set up the reconcilers with mgr, as before ...
	_ = mgr.Start(ctrl.SetupSignalHandler())
}
