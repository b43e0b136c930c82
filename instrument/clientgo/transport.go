package clientgo

import (
	"bytes"
	"context"
	"io"
	"mime"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Wrap returns a RoundTripper that stamps the writes going through rt. Its
// signature fits rest.Config.Wrap: cfg.Wrap(stamper.Wrap).
func (s *Stamper) Wrap(rt http.RoundTripper) http.RoundTripper {
	return &transport{s: s, next: rt}
}

type transport struct {
	s    *Stamper
	next http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost && req.Method != http.MethodPut && req.Method != http.MethodPatch ||
		req.Body == nil || req.Body == http.NoBody {
		return t.next.RoundTrip(req)
	}
	tgt, ok := parsePath(req.URL.Path)
	if ok && tgt.subresource == "status" && req.Method == http.MethodPut && tgt.name != "" {
		return t.keepStatus(req, tgt)
	}
	if !ok || tgt.subresource != "" || req.Method != http.MethodPost && tgt.name == "" {
		return t.next.RoundTrip(req)
	}
	kind, ok := kindOf(req)
	if !ok || unstored(tgt.resource) || req.URL.Query().Has("dryRun") {
		t.s.skipped.Add(1)
		return t.next.RoundTrip(req)
	}

	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	ctx := req.Context()
	out, m, commit := t.s.stampBody(ctx, body, kind, tgt, t.current(ctx, tgt))
	resp, err := t.send(req, out)
	if err == nil && commit && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		t.s.t.Commit(m)
	}
	return resp, err
}

// current returns a function that looks tgt up in the caller's cache.
func (t *transport) current(ctx context.Context, tgt target) func() (metav1.Object, bool) {
	return func() (metav1.Object, bool) {
		return t.s.find(ctx, Key{Group: tgt.gv.Group, Version: tgt.gv.Version, Resource: tgt.resource,
			Namespace: tgt.namespace, Name: tgt.name})
	}
}

// send sends req with body in place of its own.
func (t *transport) send(req *http.Request, body []byte) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.next.RoundTrip(r)
}

// kindOf tells how the body of req is edited, from its method and media
// type, or false when it cannot be.
func kindOf(req *http.Request) (bodyKind, bool) {
	mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err != nil {
		return 0, false
	}
	switch {
	case req.Method != http.MethodPatch && (mt == "application/json" || mt == "application/vnd.kubernetes.protobuf"):
		return bodyObject, true
	case req.Method != http.MethodPatch:
		return 0, false
	case mt == string(types.MergePatchType) || mt == string(types.StrategicMergePatchType):
		return bodyMergePatch, true
	case mt == string(types.ApplyYAMLPatchType):
		// client-go sends apply configurations as JSON, which is YAML too;
		// a body in YAML proper fails to parse and passes through.
		return bodyApply, true
	}
	return 0, false
}

// unstored reports whether resource is one whose creates are not stored
// objects: reviews answer a question, bindings are applied to a pod.
func unstored(resource string) bool {
	return resource == "bindings" || strings.HasSuffix(resource, "reviews")
}

// parsePath parses the path of a Kubernetes API request, possibly behind a
// proxy prefix, the way the apiserver's RequestInfoFactory does for writes.
func parsePath(p string) (target, bool) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	i := 0
	for i < len(parts) && parts[i] != "api" && parts[i] != "apis" {
		i++
	}
	if i == len(parts) {
		return target{}, false
	}
	var t target
	rest := parts[i+1:]
	if parts[i] == "api" {
		if len(rest) < 1 {
			return target{}, false
		}
		t.gv, rest = schema.GroupVersion{Version: rest[0]}, rest[1:]
	} else {
		if len(rest) < 2 {
			return target{}, false
		}
		t.gv, rest = schema.GroupVersion{Group: rest[0], Version: rest[1]}, rest[2:]
	}
	// A namespace's own subresources are not namespaced resources.
	if len(rest) >= 3 && rest[0] == "namespaces" && rest[2] != "status" && rest[2] != "finalize" {
		t.namespace, rest = rest[1], rest[2:]
	}
	if len(rest) == 0 || rest[0] == "" {
		return target{}, false
	}
	t.resource = rest[0]
	if len(rest) > 1 {
		t.name = rest[1]
	}
	if len(rest) > 2 {
		t.subresource = strings.Join(rest[2:], "/")
	}
	return t, true
}

// keepStatus sends a status update with the object's context kept (see
// Stamper.keepBody).
func (t *transport) keepStatus(req *http.Request, tgt target) (*http.Response, error) {
	kind, ok := kindOf(req)
	if !ok || kind != bodyObject {
		return t.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	return t.send(req, t.s.keepBody(req.Context(), body, kind, t.current(req.Context(), tgt)))
}
