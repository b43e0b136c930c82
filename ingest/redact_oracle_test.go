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
	out, changed := oracleWalk(body, top, outside)
	if !changed {
		return raw, false
	}
	b, err := json.Marshal(plainOf(out))
	if err != nil {
		panic(err)
	}
	return b, true
}

// Where a value is, for the env var rule.
const (
	outside  = iota
	envList  // the value of a member env
	envEntry // an object in an envList
)

var oracleEnvName = regexp.MustCompile(`(?i)token|secret|passw(or)?d|api_?key|credential`)

func oracleWalk(v any, pending [][]string, where int) (any, bool) {
	switch v := v.(type) {
	case object:
		paths := pending
		for _, r := range oracleRules {
			for _, kv := range v {
				if s, ok := kv.v.(string); ok && kv.k == "kind" && strings.EqualFold(s, r.kind) {
					paths = append(paths[:len(paths):len(paths)], r.own()...)
					break
				}
			}
		}
		secret := false
		for _, kv := range v {
			if s, ok := kv.v.(string); ok && where == envEntry && strings.EqualFold(kv.k, "name") && oracleEnvName.MatchString(s) {
				secret = true
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
			key := kv.k
			if k, c := oracleString(kv.k); c {
				kv.k, changed = k.(string), true
			}
			var c bool
			s, isString := kv.v.(string)
			_, isList := kv.v.([]any)
			switch {
			case secret && strings.EqualFold(key, "value") && isString && s != "" && s != oracleCredential:
				kv.v, c = oracleCredential, true
			case isString && strings.EqualFold(key, oracleLastApplied):
				kv.v, c = oracleEmbedded(s)
			case isList && strings.EqualFold(key, "env"):
				kv.v, c = oracleWalk(kv.v, tails, envList)
			default:
				kv.v, c = oracleWalk(kv.v, tails, outside)
			}
			changed = changed || c
			out = append(out, kv)
		}
		return out, changed
	case []any:
		out, changed := make([]any, len(v)), false
		for i := range v {
			var c bool
			if _, ok := v[i].(object); ok && where == envList {
				out[i], c = oracleWalk(v[i], pending, envEntry)
			} else {
				out[i], c = oracleWalk(v[i], pending, outside)
			}
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
	w, changed := oracleWalk(decodeOrdered([]byte(s)), nil, outside)
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

const (
	oracleRedacted   = "[private key redacted by cpid]"
	oracleToken      = "[token redacted by cpid]"
	oracleCredential = "[credential redacted by cpid]"
)

var (
	oracleBearer = regexp.MustCompile(`\b([Bb]earer +)([A-Za-z0-9._~+/-]{16,}=*)`)
	oracleJWT    = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`)
	oracleKube   = regexp.MustCompile(`(?m)^( *(token|id-token|access-token|refresh-token|client-secret|client-key-data|password): +)\S[^\n]*`)
)

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
	out := oraclePEM.ReplaceAllString(s, oracleRedacted)
	if strings.Contains(out, "users:") || strings.Contains(out, "kind: Config") {
		out = oracleKube.ReplaceAllString(out, "${1}"+oracleCredential)
	}
	out = oracleBearer.ReplaceAllStringFunc(out, func(m string) string {
		sub := oracleBearer.FindStringSubmatch(m)
		if strings.ContainsAny(sub[2], "0123456789") {
			return sub[1] + oracleToken
		}
		return m
	})
	out = oracleJWT.ReplaceAllString(out, oracleToken)
	if out == s {
		return s, false
	}
	return out, true
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
