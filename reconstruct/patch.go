package reconstruct

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ApplyPatch resolves a patch against the object before it, for writes whose
// audit event has no response body (a Request-level policy). The audit log
// does not record the patch's content type, so its shape decides: a JSON
// array is a JSON Patch (RFC 6902); an object is a JSON merge patch (RFC
// 7386). A strategic merge patch is applied as a merge patch, which is exact
// except for lists that strategic merge would merge by key (containers by
// name...): those are replaced, and "$patch"-style directives are dropped.
func ApplyPatch(prev, patch []byte) ([]byte, error) {
	var doc any
	if err := json.Unmarshal(prev, &doc); err != nil {
		return nil, fmt.Errorf("apply patch: previous object: %w", err)
	}
	var p any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, fmt.Errorf("apply patch: %w", err)
	}
	switch p := p.(type) {
	case []any:
		for i, op := range p {
			var err error
			if doc, err = jsonPatchOp(doc, op); err != nil {
				return nil, fmt.Errorf("apply patch: operation %d: %w", i, err)
			}
		}
	case map[string]any:
		doc = mergePatch(doc, p)
	default:
		return nil, errors.New("apply patch: neither a JSON Patch array nor a merge patch object")
	}
	return json.Marshal(doc)
}

// mergePatch applies RFC 7386: null deletes, objects merge, anything else
// replaces.
func mergePatch(doc any, patch map[string]any) any {
	d, ok := doc.(map[string]any)
	if !ok {
		d = map[string]any{}
	}
	for k, v := range patch {
		if strings.HasPrefix(k, "$") {
			continue // strategic merge directive
		}
		switch v := v.(type) {
		case nil:
			delete(d, k)
		case map[string]any:
			d[k] = mergePatch(d[k], v)
		default:
			d[k] = v
		}
	}
	return d
}

func jsonPatchOp(doc any, raw any) (any, error) {
	op, ok := raw.(map[string]any)
	if !ok {
		return doc, errors.New("not an object")
	}
	name, _ := op["op"].(string)
	path, _ := op["path"].(string)
	switch name {
	case "add", "replace":
		return setPath(doc, path, op["value"], name == "add")
	case "remove":
		return removePath(doc, path)
	case "test":
		v, err := getPath(doc, path)
		if err != nil {
			return doc, err
		}
		a, _ := json.Marshal(v)
		b, _ := json.Marshal(op["value"])
		if string(a) != string(b) {
			return doc, fmt.Errorf("test %s failed", path)
		}
		return doc, nil
	case "move", "copy":
		from, _ := op["from"].(string)
		v, err := getPath(doc, from)
		if err != nil {
			return doc, err
		}
		if name == "move" {
			if doc, err = removePath(doc, from); err != nil {
				return doc, err
			}
		}
		return setPath(doc, path, v, true)
	}
	return doc, fmt.Errorf("unknown op %q", name)
}

func splitPointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("bad JSON pointer %q", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

func getPath(doc any, p string) (any, error) {
	parts, err := splitPointer(p)
	if err != nil {
		return nil, err
	}
	cur := doc
	for _, k := range parts {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[k]
			if !ok {
				return nil, fmt.Errorf("no %s", p)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("no %s", p)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("no %s", p)
		}
	}
	return cur, nil
}

// setPath sets the value at p; add inserts into arrays, replace overwrites.
func setPath(doc any, p string, v any, add bool) (any, error) {
	parts, err := splitPointer(p)
	if err != nil {
		return doc, err
	}
	if len(parts) == 0 {
		return v, nil
	}
	parent, err := getPath(doc, "/"+strings.Join(escape(parts[:len(parts)-1]), "/"))
	if len(parts) == 1 {
		parent, err = doc, nil
	}
	if err != nil {
		return doc, err
	}
	k := parts[len(parts)-1]
	switch c := parent.(type) {
	case map[string]any:
		if _, ok := c[k]; !ok && !add {
			return doc, fmt.Errorf("replace of missing %s", p)
		}
		c[k] = v
		return doc, nil
	case []any:
		i := len(c)
		if k != "-" {
			if i, err = strconv.Atoi(k); err != nil || i < 0 || i > len(c) || (!add && i == len(c)) {
				return doc, fmt.Errorf("bad index in %s", p)
			}
		}
		var n []any
		if add {
			n = append(append(append([]any{}, c[:i]...), v), c[i:]...)
		} else {
			n = append([]any{}, c...)
			n[i] = v
		}
		return setPath(doc, "/"+strings.Join(escape(parts[:len(parts)-1]), "/"), n, false)
	}
	return doc, fmt.Errorf("no parent for %s", p)
}

func removePath(doc any, p string) (any, error) {
	parts, err := splitPointer(p)
	if err != nil || len(parts) == 0 {
		return doc, fmt.Errorf("bad remove path %q", p)
	}
	parentPath := "/" + strings.Join(escape(parts[:len(parts)-1]), "/")
	parent := doc
	if len(parts) > 1 {
		if parent, err = getPath(doc, parentPath); err != nil {
			return doc, err
		}
	}
	k := parts[len(parts)-1]
	switch c := parent.(type) {
	case map[string]any:
		if _, ok := c[k]; !ok {
			return doc, fmt.Errorf("remove of missing %s", p)
		}
		delete(c, k)
		return doc, nil
	case []any:
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= len(c) {
			return doc, fmt.Errorf("bad index in %s", p)
		}
		n := append(append([]any{}, c[:i]...), c[i+1:]...)
		if len(parts) == 1 {
			return n, nil
		}
		return setPath(doc, parentPath, n, false)
	}
	return doc, fmt.Errorf("no parent for %s", p)
}

func escape(parts []string) []string {
	out := make([]string, len(parts))
	for i, s := range parts {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
	}
	return out
}
