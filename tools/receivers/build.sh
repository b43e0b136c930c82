#!/usr/bin/env bash
# Builds the receivers of `make verify-export` from Go modules (the module
# proxy only) into $RECEIVERS_BIN (default ~/.cache/cpid/receivers-bin):
# cpid-otelcol, an OpenTelemetry Collector with the OTLP receiver and the
# file exporter (collector/main.go), and jaeger, Jaeger v2 (its upstream
# main package, a `tool` of go.mod). A build is kept until go.sum changes;
# the first takes about 10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")"
BIN=${RECEIVERS_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/cpid/receivers-bin}
mkdir -p "$BIN"
stamp=$(cat go.mod go.sum collector/main.go | sha256sum | cut -c1-16)
if [ -x "$BIN/cpid-otelcol" ] && [ -x "$BIN/jaeger" ] && [ "$(cat "$BIN/.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "receivers: cached in $BIN"
  exit 0
fi
echo "receivers: building into $BIN (about 10 minutes the first time)"
# go.sum pins every module the builds read, so no checksum database is
# asked. (Resolving other versions with go get may need GOSUMDB=off where
# the checksum database cannot be reached, as when this go.sum was made:
# go.sum then holds the hashes of what the module proxy served.)
time nice go build -trimpath -ldflags "-s -w" -o "$BIN/cpid-otelcol" ./collector
time nice go build -trimpath -ldflags "-s -w" -o "$BIN/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger
echo "$stamp" > "$BIN/.stamp"
ls -la "$BIN"
