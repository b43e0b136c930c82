package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/cpid-dev/cpid/ingest"
)

// readyTimeout bounds the query of /readyz: a database that does not
// answer within it is not ready (the Deployment's probe waits a little
// longer, deploy/deployment.yaml).
const readyTimeout = 5 * time.Second

// handleProbes adds the kubelet's probes to mux. They carry no client
// certificate or token, so both answer without authentication, and say
// nothing but "ok" or "not ready" (docs/SECURITY.md): /healthz that the
// process serves HTTP, /readyz that the database answers a query (why
// not goes to stderr, once each time the answer changes). Only GET and
// HEAD: any other method goes to the webhook, which asks for
// authentication.
func handleProbes(mux *http.ServeMux, ping func(context.Context) error, notice func(ingest.Notice)) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	var mu sync.Mutex
	failing := false // as last said
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		err := ping(ctx)
		mu.Lock()
		if changed := (err != nil) != failing; changed {
			failing = err != nil
			if failing {
				notice(ingest.Notice{Name: "readyz", Reason: "not ready: the database does not answer: " + err.Error()})
			} else {
				notice(ingest.Notice{Name: "readyz", Reason: "ready: the database answers again"})
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err != nil {
			// The reason stays in the log: the answer is unauthenticated, and
			// a database error may name hosts or paths.
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready: the database does not answer")
			return
		}
		fmt.Fprintln(w, "ok")
	})
}
