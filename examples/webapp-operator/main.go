// Command webapp-operator is an example controller-runtime operator: a
// WebApp (demo.cpid.dev/v1, config/crd.yaml) runs an image as a Deployment
// behind a Service. It adopts cpid in one line (cpidctrl.NewManager in
// place of ctrl.NewManager); --cpid=false runs it uninstrumented. It logs
// JSON through zap, as kubebuilder's operators do in production.
package main

import (
	"flag"
	"fmt"
	"os"

	demov1 "github.com/cpid-dev/cpid/examples/webapp-operator/api/v1"
	"github.com/cpid-dev/cpid/instrument"
	cpidctrl "github.com/cpid-dev/cpid/instrument/controllerruntime"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func main() {
	var (
		instrumented = flag.Bool("cpid", true, "stamp the operator's writes with CPIDs (false: the operator as it was)")
		n            = flag.Int("max-ancestors", instrument.DefaultMaxAncestors, "N, the most ancestor CPIDs an object carries")
	)
	// JSON, {"level":"info","ts":"2006-01-02T15:04:05.999999999Z","logger":...,"msg":...}:
	// zap's production encoder, with times to the nanosecond (its default
	// here is to the second).
	zopts := zap.Options{Development: false, TimeEncoder: zapcore.RFC3339NanoTimeEncoder}
	zopts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	log := ctrl.Log.WithName("setup")
	if err := run(*instrumented, *n); err != nil {
		log.Error(err, "operator failed")
		os.Exit(1)
	}
}

func run(instrumented bool, n int) error {
	cfg, err := ctrl.GetConfig() // --kubeconfig, else $KUBECONFIG, else in-cluster
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := demov1.AddToScheme(scheme); err != nil {
		return err
	}
	opts := ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}}
	var mgr manager.Manager
	if instrumented {
		mgr, err = cpidctrl.NewManager("webapp-operator", cfg, opts, instrument.WithMaxAncestors(n))
	} else {
		mgr, err = ctrl.NewManager(cfg, opts)
	}
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	if err := (&reconciler{Client: mgr.GetClient(), scheme: scheme}).setup(mgr); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	ctrl.Log.WithName("setup").Info("starting", "cpid", instrumented, "maxAncestors", n)
	return mgr.Start(ctrl.SetupSignalHandler())
}

func resourceQuantity(s string) resource.Quantity { return resource.MustParse(s) }
