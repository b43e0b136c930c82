package reconstruct

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// TestOptionsEngine: a run's engine takes the tables Options give, the
// package's where they give none.
func TestOptionsEngine(t *testing.T) {
	t.Parallel()
	if en := (Options{}).engine(); en.Rules != nil || en.Windows != nil || en.Ignored != nil || en.IgnoreCPIDs ||
		!slices.Equal(en.ignoredList(), slices.Sorted(maps.Keys(Ignored))) {
		t.Errorf("no options: %+v", en)
	}
	w := Window{Writer: "kwok", Max: 10 * time.Minute, Given: true}
	rules := []Rule{{Name: "mine"}}
	en := Options{Windows: []Window{w}, Rules: rules, Ignored: map[string]bool{"pods": true, "events": true}, IgnoreCPIDs: true}.engine()
	if len(en.Windows) != 1+len(DefaultWindows) || en.Windows[0] != w || len(en.Rules) != 1 || en.Rules[0].Name != "mine" ||
		!en.IgnoreCPIDs || !slices.Equal(en.ignoredList(), []string{"events", "pods"}) {
		t.Errorf("options given: windows %d, rules %d, ignored %v, ignore CPIDs %t", len(en.Windows), len(en.Rules),
			en.ignoredList(), en.IgnoreCPIDs)
	}
}
