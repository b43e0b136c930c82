package reconstruct

import "strings"

// The writers the rules, the windows and the triggers name, as
// ClassifyWriter names them: the service account of a controller of
// kube-controller-manager (its --use-service-account-credentials
// identity), or the system: identity without its prefix.
const (
	NodeController           = "node-controller"           // the node lifecycle controller
	TaintEvictionController  = "taint-eviction-controller" // evicts Pods of tainted Nodes
	PodGarbageCollector      = "pod-garbage-collector"     // deletes Pods of Nodes that are gone
	NamespaceController      = "namespace-controller"      // empties a namespace being deleted
	DaemonSetController      = "daemon-set-controller"
	CronJobController        = "cronjob-controller"
	DisruptionController     = "disruption-controller" // PodDisruptionBudgets' status
	RootCAPublisher          = "root-ca-cert-publisher"
	ServiceAccountController = "service-account-controller"
	GarbageCollector         = "generic-garbage-collector"
	// APIServer is the apiserver writing for itself: a PodDisruptionBudget's
	// status within an eviction.
	APIServer = "apiserver"
	// KWOK plays the kubelet of its fake Nodes.
	KWOK = "kwok"
	// KubeletPrefix begins a kubelet's name: "kubelet NODE".
	KubeletPrefix = "kubelet "
)

// Kubelet is the writer name of the kubelet of node.
func Kubelet(node string) string { return KubeletPrefix + node }

// nodeAgent reports a writer that runs on nodes: a kubelet, or KWOK in its
// place.
func nodeAgent(writer string) bool { return strings.HasPrefix(writer, KubeletPrefix) || writer == KWOK }
