#!/usr/bin/env bash
# make verify-deploy (docs/DEPLOY.md, "What make verify-deploy checks"):
#  1. builds the image (deploy/image/build.sh) and reads it back
#     (deploy/image TestImage: user, entrypoint, labels, the static binary
#     of each platform, the binary of this machine run);
#  2. under flock /tmp/cpid-realcp.lock (one control plane at a time on
#     this machine), starts etcd and kube-apiserver from the recorder's
#     binaries (REALCP_BIN, built by fixtures/recorder/build.sh when
#     missing) and
#     - creates the Namespace cpid for real (namespaced objects need it even
#       in a dry run), then applies deploy/, deploy/overlays/postgres and
#       deploy/tls-secret.yaml with --dry-run=server: any object refused,
#       and any warning (the namespace enforces the pod security standard
#       "restricted"), fails;
#     - runs the image's binary with the Deployment's args as the server
#       returned them (paths moved to a temporary directory, the port to
#       19443, listening on every address as in the pod), with certificates
#       made here, and a second kube-apiserver started with
#       deploy/webhook-kubeconfig.yaml (server and paths filled in) as
#       --audit-webhook-config-file: the probes answer without a client
#       certificate, /metrics refuses one without, and the apiserver's
#       audit events reach the database over mTLS.
# Everything started is stopped on exit.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BIN=${REALCP_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/cpid/realcp-bin}
OUT=$ROOT/dist/image
LOCK=/tmp/cpid-realcp.lock
PORT=19443

if [ "${1:-}" != --locked ]; then
  for b in etcd kube-apiserver kubectl; do
    [ -x "$BIN/$b" ] || { echo "missing $BIN/$b: building (about 10 minutes the first time)"; REALCP_BIN=$BIN fixtures/recorder/build.sh; break; }
  done
  command -v jq >/dev/null || { echo "verify.sh needs jq (apt-get install -y jq)"; exit 1; }
  export VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
  OUT=$OUT deploy/image/build.sh
  echo "== the image read back (deploy/image TestImage)"
  (cd deploy/image && CPID_VERIFY_DEPLOY=1 CPID_IMAGE_DIR=$OUT CPID_IMAGE_VERSION=$VERSION \
    CPID_IMAGE_REVISION=$(git rev-parse HEAD) go test -count=1 -v -run '^TestImage$' . | grep -E '^(=== RUN|--- |\s+image_test|ok|FAIL|PASS)')
  echo "== waiting for $LOCK (one control plane at a time)"
  exec flock "$LOCK" "$0" --locked
fi

# From here on, under the lock.
for port in 2379 6443 $PORT; do
  if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
    echo "port $port is in use: another control plane (or serve) is running"; exit 1
  fi
done
RUN=$(mktemp -d /tmp/cpid-verify-deploy.XXXXXX)
PIDS=()
# stop ends what was started, the last first (kube-apiserver before etcd).
stop() {
  local pid i
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    pid=${PIDS[i]}
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
  done
  PIDS=()
}
cleanup() {
  local rc=$?
  stop
  if [ $rc != 0 ]; then
    for f in "$RUN"/*.log; do [ -f "$f" ] && { echo "--- $(basename "$f") (last lines)"; tail -15 "$f"; }; done
  fi
  rm -rf "$RUN"
  exit $rc
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

PKI=$RUN/pki
fixtures/recorder/pki/gen.sh "$PKI" >/dev/null
export KUBECONFIG=$PKI/admin.kubeconfig
KUBECTL=$BIN/kubectl

start_etcd() {
  "$BIN/etcd" --name cpid --data-dir "$RUN/etcd-data" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster cpid=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381 \
    --log-level warn > "$RUN/etcd.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 60); do curl -sf http://127.0.0.1:2381/health >/dev/null 2>&1 && return; sleep 0.5; done
  fail "etcd did not start"
}
# start_apiserver [FLAGS...]: kube-apiserver as the recorder runs it
# (fixtures/recorder/record.sh), with the default admission plugins
# (NamespaceLifecycle, PodSecurity, ...) and any flags given.
start_apiserver() {
  local advertise
  advertise=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9]+\.' | grep -v '^127\.' | head -1 || true)
  "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
    --bind-address=127.0.0.1 --advertise-address="${advertise:-192.0.2.10}" --secure-port=6443 \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" --client-ca-file="$PKI/ca.crt" \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local --service-cluster-ip-range=10.0.0.0/24 \
    --authorization-mode=Node,RBAC "$@" > "$RUN/kube-apiserver.log" 2>&1 &
  PIDS+=($!)
  local pid=$!
  for _ in $(seq 120); do
    "$KUBECTL" get --raw /readyz >/dev/null 2>&1 && return
    kill -0 $pid 2>/dev/null || fail "kube-apiserver died"
    sleep 1
  done
  fail "kube-apiserver not ready"
}

# apply_dry NAME N ARGS...: kubectl apply --dry-run=server; fails on an
# error, a warning, or other than N objects.
apply_dry() {
  local what=$1 want=$2; shift 2
  echo "== kubectl apply --dry-run=server $*"
  if ! "$KUBECTL" apply --dry-run=server "$@" > "$RUN/out" 2> "$RUN/err"; then
    cat "$RUN/out" "$RUN/err"; fail "$what: the apiserver refused it"
  fi
  cat "$RUN/out"
  if [ -s "$RUN/err" ]; then cat "$RUN/err"; fail "$what: warnings"; fi
  local n; n=$(grep -c '(server dry run)$' "$RUN/out" || true)
  [ "$n" = "$want" ] || fail "$what: $n objects, want $want"
  echo "$what: $n objects accepted"
}

# serve's certificate (for the Service's names and 127.0.0.1, from a CA of
# its own), and the apiserver's client certificate, CN kube-apiserver
# (--allow-cn), from the cluster CA, which ConfigMap cpid-client-ca holds.
S=$RUN/serve
mkdir -p "$S/etc/cpid/tls" "$S/etc/cpid/client-ca" "$S/var/lib/cpid" "$S/tmp" "$S/pki"
(
  cd "$S/pki"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout serve-ca.key -subj /CN=cpid-serve-ca -days 2 -out serve-ca.crt 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout tls.key -subj /CN=cpid.cpid.svc -out tls.csr 2>/dev/null
  printf 'subjectAltName=DNS:cpid.cpid.svc,DNS:cpid.cpid.svc.cluster.local,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > tls.ext
  openssl x509 -req -in tls.csr -CA serve-ca.crt -CAkey serve-ca.key -CAcreateserial -days 2 -extfile tls.ext -out tls.crt 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout client.key -subj /CN=kube-apiserver -out client.csr 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\n' > client.ext
  openssl x509 -req -in client.csr -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 2 -extfile client.ext -out client.crt 2>/dev/null
  # An admin's certificate: signed by the same CA, another CN.
  openssl req -newkey rsa:2048 -nodes -keyout other.key -subj /CN=someone-else -out other.csr 2>/dev/null
  openssl x509 -req -in other.csr -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial -days 2 -extfile client.ext -out other.crt 2>/dev/null
)
echo "== etcd and kube-apiserver ($("$BIN/kube-apiserver" --version))"
start_etcd
start_apiserver
# Namespaced objects need their namespace, even in a dry run.
"$KUBECTL" apply -f deploy/base/namespace.yaml
apply_dry "deploy/" 6 -k deploy/
apply_dry "deploy/overlays/postgres (no PVC)" 5 -k deploy/overlays/postgres
# The Secret's placeholders filled in (empty, the apiserver warns that
# the certificate holds no PEM data).
b64() { base64 -w0 < "$1"; }
sed -e "s|^  tls.crt: \"\"|  tls.crt: $(b64 "$S/pki/tls.crt")|" -e "s|^  tls.key: \"\"|  tls.key: $(b64 "$S/pki/tls.key")|" \
    deploy/tls-secret.yaml > "$RUN/tls-secret.yaml"
grep -q 'tls\.[a-z]*: ""' "$RUN/tls-secret.yaml" && fail "deploy/tls-secret.yaml: the Secret's placeholders not filled in"
apply_dry "deploy/tls-secret.yaml (filled in)" 2 -f "$RUN/tls-secret.yaml"

# The Deployment as the server returned it: its args and $CPID_DB.
"$KUBECTL" apply --dry-run=server -k deploy/ -o json > "$RUN/deploy.json"
dep='.items[] | select(.kind == "Deployment") | .spec.template.spec'
mapfile -t ARGS < <(jq -r "$dep.containers[0].args[]" "$RUN/deploy.json")
DB=$(jq -r "$dep.containers[0].env[] | select(.name == \"CPID_DB\") | .value" "$RUN/deploy.json")
[ "$(jq -r "$dep.securityContext.runAsUser" "$RUN/deploy.json")" = 65532 ] || fail "runAsUser is not the image's user 65532"
echo "== the Deployment's serve: ${ARGS[*]} (CPID_DB=$DB)"
stop

cp "$S/pki/tls.crt" "$S/pki/tls.key" "$S/etc/cpid/tls/"
cp "$PKI/ca.crt" "$S/etc/cpid/client-ca/ca.crt"
moved=()
for a in "${ARGS[@]}"; do
  a=${a//\/etc\/cpid\//$S/etc/cpid/}
  [ "$a" = --listen=:9443 ] && a=--listen=:$PORT
  moved+=("$a")
done
ARCH=$(go env GOARCH)
# As in the pod where this machine allows it: user and group 65532, the
# volumes group-owned by the fsGroup 65532 (the certificates 0440, as the
# Secret's defaultMode), nothing else writable to it.
AS=()
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  chmod 0711 "$RUN"
  chown -R 65532:65532 "$S/var/lib/cpid" "$S/tmp"
  chgrp -R 65532 "$S/etc/cpid" && chmod 0440 "$S"/etc/cpid/tls/* "$S/etc/cpid/client-ca/ca.crt"
  AS=(setpriv --reuid=65532 --regid=65532 --clear-groups)
  echo "== as user and group 65532 (setpriv)"
else
  echo "== as $(id -un) (the pod runs it as 65532; this needs root and setpriv)"
fi
echo "== $OUT/linux-$ARCH/cpid-tui (the image's binary) ${moved[*]}"
TMPDIR=$S/tmp CPID_DB=${DB/\/var\/lib\/cpid/$S/var/lib/cpid} "${AS[@]}" "$OUT/linux-$ARCH/cpid-tui" "${moved[@]}" > "$RUN/serve.log" 2>&1 &
PIDS+=($!)
SERVE=$!
for _ in $(seq 60); do grep -qs 'listening' "$RUN/serve.log" && break; kill -0 $SERVE 2>/dev/null || fail "serve exited"; sleep 0.5; done
CURL=(curl -s --cacert "$S/pki/serve-ca.crt" -o /dev/null -w '%{http_code}')
code() { # want what curl-args...
  local want=$1 what=$2; shift 2
  local got; got=$("${CURL[@]}" "$@" || true)
  [ "$got" = "$want" ] || fail "$what: HTTP $got, want $want"
  echo "$what: $got"
}
code 200 "GET /healthz without a client certificate (the kubelet's probe)" https://127.0.0.1:$PORT/healthz
code 200 "GET /readyz without a client certificate (the kubelet's probe)" https://127.0.0.1:$PORT/readyz
code 401 "GET /metrics without a client certificate" https://127.0.0.1:$PORT/metrics
code 401 "GET /metrics with a certificate of another CN" --cert "$S/pki/other.crt" --key "$S/pki/other.key" https://127.0.0.1:$PORT/metrics
code 200 "GET /metrics with the apiserver's client certificate" --cert "$S/pki/client.crt" --key "$S/pki/client.key" https://127.0.0.1:$PORT/metrics

# deploy/webhook-kubeconfig.yaml, its server and paths filled in for here.
sed -e "s|https://cpid.cpid.svc:443/audit|https://127.0.0.1:$PORT/audit|" \
    -e "s|/etc/kubernetes/pki/cpid-ca.crt|$S/pki/serve-ca.crt|" \
    -e "s|/etc/kubernetes/pki/cpid-webhook-client.crt|$S/pki/client.crt|" \
    -e "s|/etc/kubernetes/pki/cpid-webhook-client.key|$S/pki/client.key|" \
    deploy/webhook-kubeconfig.yaml > "$RUN/webhook.kubeconfig"
! grep -v '^ *#' "$RUN/webhook.kubeconfig" | grep -q '/etc/kubernetes\|cpid.cpid.svc:443' || fail "deploy/webhook-kubeconfig.yaml: not every path was filled in"
echo "== kube-apiserver with --audit-webhook-config-file (deploy/webhook-kubeconfig.yaml)"
start_etcd
printf 'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n' > "$RUN/audit-policy.yaml"
start_apiserver --audit-policy-file="$RUN/audit-policy.yaml" \
  --audit-webhook-config-file="$RUN/webhook.kubeconfig" --audit-webhook-mode=batch \
  --audit-webhook-batch-max-wait=1s --audit-webhook-initial-backoff=1s --audit-webhook-version=audit.k8s.io/v1
"$KUBECTL" create namespace cpid-webhook-check >/dev/null
"$KUBECTL" -n cpid-webhook-check create configmap seen-by-cpid --from-literal=k=v >/dev/null
q="select count(*) from audit_events where resource = 'configmaps' and name = 'seen-by-cpid' and verb = 'create'"
n=0
for _ in $(seq 60); do
  n=$("$OUT/linux-$ARCH/cpid-tui" sql --db "$S/var/lib/cpid/cpid.db" -o csv --no-headers "$q" 2>/dev/null || echo 0)
  [ "$n" -ge 1 ] && break
  sleep 1
done
[ "$n" -ge 1 ] || fail "the apiserver's audit event of the ConfigMap did not reach serve"
total=$("$OUT/linux-$ARCH/cpid-tui" sql --db "$S/var/lib/cpid/cpid.db" -o csv --no-headers "select count(*) from audit_events")
echo "the apiserver's audit events reached serve over mTLS: $total stored, the ConfigMap's create among them"
grep -q 'serve: http: TLS handshake error' "$RUN/serve.log" && { grep 'TLS handshake' "$RUN/serve.log" | head -3; fail "TLS handshake errors"; }
echo "verify-deploy: OK"
