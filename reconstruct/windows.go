package reconstruct

import (
	"fmt"
	"strings"
	"time"

	"github.com/cpid-dev/cpid"
)

// Window is a band of reaction time: a hop of a writer, through a rule,
// that takes at most Max is explained by Explain. A writer's own entries
// replace the generic ones (Writer ""); among them the smallest Max that
// holds the hop explains it, so that a node lifecycle controller's
// ordinary reaction is "informer" and one that waited out the grace period
// "node-grace". A hop longer than every band of its writer needs evidence
// of why it waited (a retry after a failed write, the apiserver's own
// latency) or is "unexplained".
type Window struct {
	// Rule is the inference rule ("" for any), Writer the writer's name:
	// exact, a prefix ending in "*", or "" for any; Resource the written
	// object's resource ("" for any).
	Rule, Writer, Resource string
	Max                    time.Duration
	Explain                cpid.Explain
	// Why is the upstream behaviour the default follows, for people.
	Why string
	// Given marks a window from the command line (ParseWindow): the given
	// windows of a writer replace its defaults, so they narrow as well as
	// widen.
	Given bool
}

// informer is the band of an ordinary reaction.
const informer = 5 * time.Second

const informerWhy = "informer delivery is sub-second; a controller's work queue adds its processing and, under load, " +
	"the default rate limiter (10 qps, 100 burst)"

// DefaultWindows is the table of reaction windows, after the upstream
// defaults; `cpid-tui reconstruct --window` puts entries before it.
var DefaultWindows = []Window{
	{Writer: KubeletPrefix + "*", Max: 5 * time.Minute, Explain: cpid.ExplainKubelet,
		Why: "the node side: image pulls, container starts and readiness probes (initialDelaySeconds, periodSeconds)"},
	{Writer: KWOK, Max: 5 * time.Minute, Explain: cpid.ExplainKubelet,
		Why: "KWOK plays the kubelet, with the delays of its stages"},
	{Writer: TaintEvictionController, Max: informer, Explain: cpid.ExplainInformer, Why: informerWhy},
	{Writer: TaintEvictionController, Max: 300*time.Second + informer, Explain: cpid.ExplainToleration,
		Why: "evictions wait for the pod's tolerationSeconds of the node's NoExecute taint (300 s by DefaultTolerationSeconds)"},
	{Writer: NodeController, Max: informer, Explain: cpid.ExplainInformer, Why: informerWhy},
	{Writer: NodeController, Resource: "pods", Max: 300*time.Second + informer, Explain: cpid.ExplainToleration,
		Why: "the node lifecycle controller evicts a pod when its tolerationSeconds of the node's NoExecute taint run out (300 s by DefaultTolerationSeconds)"},
	{Writer: NodeController, Resource: "nodes", Max: 50*time.Second + informer, Explain: cpid.ExplainNodeGrace,
		Why: "the node lifecycle controller marks a node Unknown after --node-monitor-grace-period (50 s) without a heartbeat"},
	{Writer: PodGarbageCollector, Max: informer, Explain: cpid.ExplainInformer, Why: informerWhy},
	{Writer: PodGarbageCollector, Resource: "pods", Max: 60*time.Second + informer, Explain: cpid.ExplainPodGC,
		Why: "the pod garbage collector deletes a Pod bound to a Node that is gone after a 40 s quarantine, and looks every 20 s (gcCheckPeriod)"},
	{Writer: NamespaceController, Max: informer, Explain: cpid.ExplainInformer, Why: informerWhy},
	{Writer: NamespaceController, Max: 5*time.Second + informer, Explain: cpid.ExplainDeletionGrace,
		Why: "the namespace controller acts 5 s after a namespace's event (namespaceDeletionGracePeriod, so that every apiserver saw the deletion), and requeues until the namespace is empty"},
	{Max: informer, Explain: cpid.ExplainInformer, Why: informerWhy},
}

// Bands returns the windows of ws that apply to a hop of writer through
// rule to an object of resource: the writer's own, else the generic ones.
func Bands(ws []Window, rule, writer, resource string) []Window {
	var given, own, generic []Window
	for _, w := range ws {
		if w.Rule != "" && w.Rule != rule || w.Resource != "" && w.Resource != resource {
			continue
		}
		match := false
		switch {
		case w.Writer == "":
			match = true
			if !w.Given {
				generic = append(generic, w)
			}
		case strings.HasSuffix(w.Writer, "*"):
			if match = strings.HasPrefix(writer, strings.TrimSuffix(w.Writer, "*")); match && !w.Given {
				own = append(own, w)
			}
		case w.Writer == writer:
			if match = true; !w.Given {
				own = append(own, w)
			}
		}
		if match && w.Given {
			given = append(given, w)
		}
	}
	if len(given) > 0 {
		return given
	}
	if len(own) > 0 {
		return own
	}
	if len(generic) > 0 {
		return generic
	}
	return []Window{{Max: informer, Explain: cpid.ExplainInformer, Why: informerWhy}}
}

// within returns the band that explains a hop of d, and whether there is
// one; without one, the widest band.
func within(bs []Window, d time.Duration) (Window, bool) {
	var fit, widest *Window
	for i := range bs {
		b := &bs[i]
		if d <= b.Max && (fit == nil || b.Max < fit.Max) {
			fit = b
		}
		if widest == nil || b.Max > widest.Max {
			widest = b
		}
	}
	if fit != nil {
		return *fit, true
	}
	return *widest, false
}

// RuleRestart is the rule of a write that took up interrupted work after
// its writer started again: its cause is the start, not an object of
// Rules.
const RuleRestart = "restart"

// RuleNames are the rules a cause may be found by, which a window's Rule
// may name: those of Rules, then RuleRestart.
func RuleNames() []string {
	names := make([]string, 0, len(Rules)+1)
	for _, r := range Rules {
		names = append(names, r.Name)
	}
	return append(names, RuleRestart)
}

// ParseWindow reads a window given as [RULE/]WRITER=DURATION ("kwok=10m",
// "owner/replicaset-controller=2s", "*=3s" for every writer).
func ParseWindow(s string) (Window, error) {
	k, v, ok := strings.Cut(s, "=")
	d, err := time.ParseDuration(v)
	if !ok || err != nil || d <= 0 || k == "" {
		return Window{}, fmt.Errorf("window %q: want [RULE/]WRITER=DURATION, e.g. kwok=10m or owner/replicaset-controller=2s", s)
	}
	w := Window{Max: d, Explain: cpid.ExplainInformer, Why: "given with --window", Given: true}
	if r, wr, ok := strings.Cut(k, "/"); ok {
		w.Rule, k = r, wr
	}
	if k != "*" {
		w.Writer = k
	}
	if nodeAgent(w.Writer) {
		w.Explain = cpid.ExplainKubelet
	}
	return w, nil
}

// bandDetail says, for the bands that stand for a wait of the control
// plane's own (not an ordinary reaction), what waited and for how long.
func bandDetail(w Window, d time.Duration) string {
	switch w.Explain {
	case cpid.ExplainToleration:
		return fmt.Sprintf("evicted %s after its Node's change: the Pod tolerates the Node's NoExecute taint "+
			"(node.kubernetes.io/unreachable or not-ready) for its tolerationSeconds, 300 s unless its spec says less", d.Round(time.Millisecond))
	case cpid.ExplainNodeGrace:
		return fmt.Sprintf("%s without a heartbeat: the node lifecycle controller marks a Node Unknown after "+
			"--node-monitor-grace-period (50 s by default)", d.Round(time.Millisecond))
	case cpid.ExplainPodGC:
		return fmt.Sprintf("%s after its Node went: the pod garbage collector deletes a Pod of a Node that is gone "+
			"after a 40 s quarantine, looking every 20 s", d.Round(time.Millisecond))
	}
	return ""
}

// bands is Bands of the engine's windows, kept per rule, writer and
// resource: the table does not change within a run.
func (en *Engine) bands(rule, writer, resource string) []Window {
	k := [3]string{rule, writer, resource}
	if bs, ok := en.bandCache[k]; ok {
		return bs
	}
	if en.bandCache == nil {
		en.bandCache = map[[3]string][]Window{}
	}
	bs := Bands(en.windows(), rule, writer, resource)
	en.bandCache[k] = bs
	return bs
}

func (en *Engine) windows() []Window {
	if en.Windows != nil {
		return en.Windows
	}
	return DefaultWindows
}
