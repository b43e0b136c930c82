#!/usr/bin/env bash
# Builds the container image of cpid-tui without a Docker daemon (make image;
# docs/DEPLOY.md): a static cpid-tui (CGO_ENABLED=0: the pure-Go SQLite) for
# linux/amd64 and linux/arm64, then the image assembled by the Go program
# beside this script (its own module, go-containerregistry) on scratch.
#
# Writes into OUT (default dist/image):
#   cpid-tui-oci.tar          OCI image layout, an index of both platforms
#                             tagged VERSION (skopeo copy oci-archive:; crane push
#                             of the directory it holds)
#   cpid-tui-linux-ARCH.tar   docker-archive of one platform (docker load,
#                             kind load image-archive)
#   linux-ARCH/cpid-tui       the binaries
# Env: VERSION (default git describe --tags --always --dirty), PLATFORMS
# (default "linux/amd64 linux/arm64"), CA_CERTS (default
# /etc/ssl/certs/ca-certificates.crt, the Debian package ca-certificates).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-dist/image}
case $OUT in /*) ;; *) OUT=$ROOT/$OUT ;; esac
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64}
CA_CERTS=${CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}
[ -s "$CA_CERTS" ] || { echo "no CA bundle at $CA_CERTS: apt-get install ca-certificates, or set CA_CERTS"; exit 1; }
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
REVISION=$(git rev-parse HEAD)
# The commit's time: the same commit gives the same image.
CREATED=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
DATE=$(date -u -d "@$CREATED" +%Y-%m-%dT%H:%M:%SZ)
mkdir -p "$OUT"
bins=()
for p in $PLATFORMS; do
  arch=${p#linux/}
  echo "building cpid-tui for $p"
  mkdir -p "$OUT/linux-$arch"
  # -buildvcs=true: cpid-tui version says the commit even where GOFLAGS
  # turns it off; the -X stamp is the release's (tools/release, issue 29).
  CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -buildvcs=true \
    -ldflags="-s -w -X main.stampVersion=$VERSION -X main.stampCommit=$REVISION -X main.stampDate=$DATE" \
    -o "$OUT/linux-$arch/cpid-tui" ./cmd/cpid-tui
  bins+=(-bin "$p=$OUT/linux-$arch/cpid-tui")
done
(cd deploy/image && go run . "${bins[@]}" -ca-certs "$CA_CERTS" -version "$VERSION" -revision "$REVISION" \
  -created "$CREATED" -out "$OUT")
ls -l "$OUT"/*.tar
