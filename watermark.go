package cpid

import (
	"fmt"
	"strconv"
)

// The keys under which an engine stores a Watermark, one row each
// (reconstruct_state).
const (
	WatermarkEventID  = "event_id"
	WatermarkCutoffNS = "cutoff_ns"
	WatermarkLogID    = "log_id"
	WatermarkEngine   = "engine"
)

// Fields are the watermark's values by their keys: the ids and the cutoff
// as int64, the engine's state as []byte. An engine stores each as its
// column wants it.
func (w Watermark) Fields() map[string]any {
	return map[string]any{WatermarkEventID: w.EventID, WatermarkCutoffNS: w.CutoffNS, WatermarkLogID: w.LogID,
		WatermarkEngine: w.EngineData}
}

// Set sets the field of key from its stored value: an integer, or its
// decimal text (string or []byte), for the ids and the cutoff; the bytes
// of the engine's state. A key it does not know is left alone; a value
// that is no integer where one is meant is an error, not a zero.
func (w *Watermark) Set(key string, v any) error {
	if key == WatermarkEngine {
		switch b := v.(type) {
		case []byte:
			w.EngineData = b
		case string:
			w.EngineData = []byte(b)
		case nil:
			w.EngineData = nil
		default:
			return fmt.Errorf("watermark %s: a %T, not bytes", key, v)
		}
		w.HasState = len(w.EngineData) > 0
		return nil
	}
	var dst *int64
	switch key {
	case WatermarkEventID:
		dst = &w.EventID
	case WatermarkCutoffNS:
		dst = &w.CutoffNS
	case WatermarkLogID:
		dst = &w.LogID
	default:
		return nil
	}
	var err error
	switch x := v.(type) {
	case int64:
		*dst = x
	case []byte:
		*dst, err = strconv.ParseInt(string(x), 10, 64)
	case string:
		*dst, err = strconv.ParseInt(x, 10, 64)
	default:
		err = fmt.Errorf("a %T", v)
	}
	if err != nil {
		return fmt.Errorf("watermark %s is no integer: %w", key, err)
	}
	return nil
}
