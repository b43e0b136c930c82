package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeShutdownStalledBody: when its context ends (SIGTERM), serve
// does not wait for a body that stopped coming (--read-timeout is an hour
// here, longer than any shutdown grace): it answers it 503, keeps the batch
// it acknowledged, and exits 0. Before, Shutdown timed out after 30 s and
// serve exited 1.
func TestServeShutdownStalledBody(t *testing.T) {
	db := filepath.Join(t.TempDir(), "cpid.db")
	addr := freeAddr(t)
	stderr := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr},
			[]string{"serve", "--db", db, "--listen", addr, "--reconstruct-every", "0", "--read-timeout", "1h"})
	}()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	waitUntil(t, "serve to listen on "+addr, func() bool {
		resp, err := client.Get("http://" + addr + "/metrics")
		if err == nil {
			resp.Body.Close()
			return true
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d before listening: %s", code, stderr.String())
		default:
		}
		return false
	}, nil)

	url := "http://" + addr + "/"
	if code, _, msg := post(t, client, url, "application/json", bytes.NewReader(eventList(goodEvents(t, 0, 5)...))); code != 200 {
		t.Fatalf("a batch: %d %q, want 200", code, msg)
	}
	stalled := rawPost(t, addr, 1000, "", "Expect: 100-continue\r\n")
	stalled.SetReadDeadline(nearTimeout(t)) // a failure, not the test's timeout
	r := bufio.NewReader(stalled)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("want 100 Continue, got %q, %v", line, err)
	}
	r.ReadString('\n')

	cancel()
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("the stalled body: %v %v; want 503 with Retry-After", resp, err)
	}
	if code := <-done; code != 0 {
		t.Errorf("serve exited with %d, want 0: %s", code, tail(stderr.String(), 4096))
	}
	ids, rows, _, _, _ := storedIDs(t, db)
	for i := range 5 {
		if ids[tortureID(i)] != 1 {
			t.Errorf("acknowledged event %d stored %d times, want 1", i, ids[tortureID(i)])
		}
	}
	if rows != 5 {
		t.Errorf("%d rows, want 5", rows)
	}
}
