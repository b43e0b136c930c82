package ingest_test

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
)

// The oracle's redaction: the table of ingest/redact.go written again over
// values decoded by encoding/json, walking every body (the package skips
// the bodies its byte search rules out; the oracle never does, so a miss
// there shows as a difference).

type oracleRule struct {
	resource, subresource, kind string
	paths                       [][]string
}

var oracleRules = []oracleRule{
	{"secrets", "", "Secret", [][]string{{"data"}, {"stringData"}}},
	{"serviceaccounts", "token", "TokenRequest", [][]string{{"status", "token"}}},
	{"tokenreviews", "", "TokenReview", [][]string{{"spec", "token"}}},
}

const oracleLastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// own is what a rule removes from an object of its kind.
func (r oracleRule) own() [][]string {
	out := [][]string{{"metadata", "annotations", oracleLastApplied}}
	for _, p := range r.paths {
		out = append(out, p)
		mf := []string{"metadata", "managedFields", "fieldsV1"}
		for _, n := range p {
			mf = append(mf, "f:"+n)
		}
		out = append(out, mf)
	}
	return out
}

// redactAny redacts a body of a request on resource/subresource.
func redactAny(raw json.RawMessage, body any, resource, subresource, group string) (json.RawMessage, bool) {
	if body == nil {
		return raw, false
	}
	var top [][]string
	for _, r := range oracleRules {
		if strings.EqualFold(resource, r.resource) && (r.subresource == "" || strings.EqualFold(subresource, r.subresource)) {
			for _, p := range r.own() {
				top = append(top, p, append([]string{"items"}, p...), append([]string{"rows", "object"}, p...))
			}
		}
	}
	if a, ok := body.([]any); ok && top != nil {
		if len(a) > 0 {
			return nil, true
		}
		return raw, false
	}
	out, changed := oracleWalk(body, top)
	if !changed {
		return raw, false
	}
	b, err := json.Marshal(plainOf(out))
	if err != nil {
		panic(err)
	}
	return b, true
}

func oracleWalk(v any, pending [][]string) (any, bool) {
	switch v := v.(type) {
	case object:
		paths := pending
		for _, r := range oracleRules {
			for _, kv := range v {
				if s, ok := kv.v.(string); ok && kv.k == "kind" && s == r.kind {
					paths = append(paths[:len(paths):len(paths)], r.own()...)
					break
				}
			}
		}
		out, changed := object{}, false
	members:
		for _, kv := range v {
			var tails [][]string
			for _, p := range paths {
				if strings.EqualFold(p[0], kv.k) {
					if len(p) == 1 {
						changed = true
						continue members
					}
					tails = append(tails, p[1:])
				}
			}
			var c bool
			if s, ok := kv.v.(string); ok && strings.EqualFold(kv.k, oracleLastApplied) {
				kv.v, c = oracleEmbedded(s)
			} else {
				kv.v, c = oracleWalk(kv.v, tails)
			}
			changed = changed || c
			out = append(out, kv)
		}
		return out, changed
	case []any:
		out, changed := make([]any, len(v)), false
		for i := range v {
			var c bool
			out[i], c = oracleWalk(v[i], pending)
			changed = changed || c
		}
		return out, changed
	case string:
		return oracleString(v)
	}
	return v, false
}

func oracleEmbedded(s string) (any, bool) {
	if !json.Valid([]byte(s)) {
		return oracleString(s)
	}
	w, changed := oracleWalk(decodeOrdered([]byte(s)), nil)
	if !changed {
		return s, false
	}
	b, err := json.Marshal(plainOf(w))
	if err != nil {
		panic(err)
	}
	return string(b), true
}

var oraclePEM = regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`)

const oracleRedacted = "[private key redacted by cpid]"

func oracleString(s string) (any, bool) {
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "LS0tLS1CRUdJT") {
		clean := strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, t)
		clean = clean[:len(clean)/4*4]
		dec := make([]byte, base64.StdEncoding.DecodedLen(len(clean)))
		n, _ := base64.StdEncoding.Decode(dec, []byte(clean))
		if oraclePEM.Match(dec[:n]) {
			return oracleRedacted, true
		}
	}
	if !oraclePEM.MatchString(s) {
		return s, false
	}
	return oraclePEM.ReplaceAllString(s, oracleRedacted), true
}

// normalEmbedded replaces each last-applied-configuration string that
// holds JSON by its decoded value, so that bodies compare by meaning however
// the embedded object was encoded.
func normalEmbedded(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && strings.EqualFold(k, oracleLastApplied) && json.Valid([]byte(s)) {
				v[k] = normalEmbedded(anyOf([]byte(s)))
				continue
			}
			v[k] = normalEmbedded(x)
		}
	case []any:
		for i := range v {
			v[i] = normalEmbedded(v[i])
		}
	}
	return v
}
