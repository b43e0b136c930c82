package cpid

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWatermarkSet: the stored values of either engine (SQLite's integers,
// PostgreSQL's decimal text) give the watermark back, and a value that is
// no integer is an error, not a zero that would redo every write.
func TestWatermarkSet(t *testing.T) {
	t.Parallel()
	want := Watermark{EventID: 7, CutoffNS: 1_700_000_000_000, LogID: 3, HasState: true, EngineData: []byte("state")}
	for name, enc := range map[string]func(any) any{
		"integers": func(v any) any { return v },
		"text": func(v any) any {
			if n, ok := v.(int64); ok {
				return []byte(strconv.FormatInt(n, 10))
			}
			return v
		},
	} {
		var got Watermark
		for k, v := range want.Fields() {
			if err := got.Set(k, enc(v)); err != nil {
				t.Fatalf("%s: %s: %v", name, k, err)
			}
		}
		if err := got.Set("unknown", "x"); err != nil {
			t.Errorf("%s: an unknown key: %v", name, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	var w Watermark
	for _, v := range []any{[]byte("12x"), "", 1.5, nil} {
		if err := w.Set(WatermarkCutoffNS, v); err == nil {
			t.Errorf("cutoff %#v: no error", v)
		}
	}
	if err := w.Set(WatermarkEngine, 12); err == nil {
		t.Error("engine state 12: no error")
	}
}
