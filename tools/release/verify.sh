#!/usr/bin/env bash
# tools/release/verify.sh (make verify-release): checks the release
# snapshot the way a user meets it (docs/RELEASE.md):
#   1. dist/ is built by snapshot.sh, or reused when its SOURCE is this tree's;
#   2. checksums.txt holds for every archive (sha256sum -c);
#   3. each archive holds cpid-tui and README.md, owned by 0/0; Go's build
#      information in each binary says its platform, cgo off and -trimpath;
#      file(1) says its format; the stamp is in it;
#   4. the linux/amd64 binary's version (table and JSON) says the version,
#      commit and date stamped;
#   5. dist/cpid.yaml has no placeholder left: each platform's uri is the
#      base and its archive, its sha256 the archive's;
#   6. a second snapshot of the same tree, into another directory, is the
#      same bytes (checksums.txt and cpid.yaml equal);
#   7. a krew built from its Go module (tools/release/krew, cached under
#      ~/.cache/cpid/krew) installs the plugin from dist/cpid.yaml and the
#      linux/amd64 archive into a KREW_ROOT of its own, with no network
#      (a proxy that refuses every connection) and no plugin index, and the
#      installed kubectl-cpid says the stamped version; so does kubectl cpid
#      where a kubectl binary is at hand.
# Any failure stops it with a message and a non-zero exit.
set -euo pipefail

cd "$(dirname "$0")/../.."
reused=
fail() {
	echo "verify-release: FAIL: $*" >&2
	[[ -z $reused ]] || echo "verify-release: (dist/ was reused: make release-snapshot builds it anew)" >&2
	exit 1
}
step() { echo "verify-release: $*"; }

. tools/release/settings.sh
started=$SECONDS
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. The snapshot.
if [[ -f $DIST/SOURCE ]] && [[ $(cat "$DIST/SOURCE") == "$(source_id)" ]]; then
	step "$DIST/ is the snapshot of this tree ($VERSION): reused"
	reused=1
else
	step "building the snapshot"
	tools/release/snapshot.sh || fail "tools/release/snapshot.sh failed"
fi
first_build=$((SECONDS - started))

# 2. Checksums.
(cd "$DIST" && sha256sum --quiet -c checksums.txt) || fail "$DIST/checksums.txt does not hold"
n=$(wc -l <"$DIST/checksums.txt")
want=$(wc -w <<<"$PLATFORMS")
[[ $n -eq $want ]] || fail "$DIST/checksums.txt has $n archives, the platforms are $want ($PLATFORMS)"
step "checksums.txt holds for its $n archives"

# 3. Each archive's contents and its binary's platform and stamp.
for p in $PLATFORMS; do
	os=${p%/*} arch=${p#*/}
	a=$DIST/cpid-tui_${os}_${arch}.tar.gz
	[[ -f $a ]] || fail "no archive $a"
	listing=$(tar -tvzf "$a") || fail "$a: not a gzipped tar"
	names=$(tar -tzf "$a" | sort | tr '\n' ' ')
	[[ $names == *"cpid-tui "* && $names == *"README.md "* ]] || fail "$a holds $names, not cpid-tui and README.md"
	grep -qv ' 0/0 ' <<<"$listing" && fail "$a: an entry is not owned by 0/0:"$'\n'"$listing"
	d=$tmp/$os-$arch
	mkdir -p "$d"
	tar -xzf "$a" -C "$d"
	info=$("$GO" version -m "$d/cpid-tui") || fail "$a: go version -m cannot read cpid-tui"
	for want in "GOOS=$os" "GOARCH=$arch" "CGO_ENABLED=0" "-trimpath=true"; do
		grep -q -- "build	$want\$" <<<"$info" || fail "$a: the build information of cpid-tui does not say $want:"$'\n'"$(grep -v dep <<<"$info")"
	done
	# With -trimpath, Go leaves -ldflags out of the build information: the
	# stamp's strings are looked for in the binary itself (Go recorded no
	# commit of its own: -buildvcs=false).
	for want in "$COMMIT" "$DATE" "$VERSION"; do
		grep -qaF -- "$want" "$d/cpid-tui" || fail "$a: cpid-tui has no stamp $want"
	done
	if command -v file >/dev/null; then
		kind=$(file -b "$d/cpid-tui")
		case $os/$arch in
		linux/amd64) re='ELF 64-bit.*x86-64.*statically linked' ;;
		linux/arm64) re='ELF 64-bit.*ARM aarch64.*statically linked' ;;
		darwin/amd64) re='Mach-O 64-bit.*x86_64' ;;
		darwin/arm64) re='Mach-O 64-bit.*arm64' ;;
		*) re=. ;;
		esac
		[[ $kind =~ $re ]] || fail "$a: file says $kind"
	else
		kind="(no file command)"
	fi
	step "$(basename "$a"): $(stat -c %s "$a") bytes, $p, cgo off, stamped; ${kind%%, Go BuildID*}"
done

# 4. The stamp, read back from the binary that runs here.
bin=$tmp/linux-amd64/cpid-tui
if [[ $(uname -s)/$(uname -m) == Linux/x86_64 ]]; then
	out=$("$bin" version) || fail "cpid-tui version failed"
	for want in "cpid-tui $VERSION" "commit:   $COMMIT" "date:     $DATE"; do
		grep -qF -- "$want" <<<"$out" || fail "cpid-tui version does not say \"$want\":"$'\n'"$out"
	done
	json=$("$bin" version -o json) || fail "cpid-tui version -o json failed"
	for want in "\"version\": \"$VERSION\"" "\"commit\": \"$COMMIT\"" "\"date\": \"$DATE\"" '"platform": "linux/amd64"'; do
		grep -qF -- "$want" <<<"$json" || fail "cpid-tui version -o json does not say $want:"$'\n'"$json"
	done
	step "cpid-tui version says $VERSION, $COMMIT, $DATE"
else
	step "not on linux/amd64: the binary's version is not run (its build information was read)"
fi

# 5. The manifest.
m=$DIST/cpid.yaml
grep -q '0\{64\}' "$m" && fail "$m has a placeholder sha256"
grep -q '/VERSION/' "$m" && fail "$m has a placeholder uri"
grep -qx "  version: $KREW_VERSION" "$m" || fail "$m: spec.version is not $KREW_VERSION"
platforms=0
while read -r sum archive; do
	grep -qx "    uri: $URL_BASE$archive" "$m" || fail "$m has no uri $URL_BASE$archive"
	# The sha256 is the line after the archive's uri.
	got=$(grep -A1 -x "    uri: $URL_BASE$archive" "$m" | sed -n 's/^    sha256: "\(.*\)"$/\1/p')
	[[ $got == "$sum" ]] || fail "$m: the sha256 of $archive is $got, checksums.txt says $sum"
	platforms=$((platforms + 1))
done <"$DIST/checksums.txt"
[[ $(grep -c '^    uri: ' "$m") -eq $platforms ]] || fail "$m has platforms without an archive"
step "cpid.yaml: $platforms platforms, each uri and sha256 its archive's, version $KREW_VERSION"

# 6. Reproducible: a second snapshot of the same tree is the same bytes.
start=$SECONDS
DIST=$tmp/dist2 tools/release/snapshot.sh >"$tmp/snapshot2.log" 2>&1 || { cat "$tmp/snapshot2.log" >&2; fail "the second snapshot failed"; }
cmp -s "$DIST/checksums.txt" "$tmp/dist2/checksums.txt" ||
	fail "a second snapshot differs:"$'\n'"$(diff "$DIST/checksums.txt" "$tmp/dist2/checksums.txt")"
cmp -s "$DIST/cpid.yaml" "$tmp/dist2/cpid.yaml" || fail "a second snapshot's cpid.yaml differs"
step "a second snapshot ($((SECONDS - start)) s) gives the same sha256 for every archive"

# 7. krew, built from its module and cached by its go.sum and Go version.
key=$({ cat tools/release/krew/go.mod tools/release/krew/go.sum; "$GO" version; } | sha256sum | cut -c1-16)
krew=$HOME/.cache/cpid/krew/$key/kubectl-krew
if [[ ! -x $krew ]]; then
	step "building krew from tools/release/krew (sigs.k8s.io/krew/cmd/krew) into $krew"
	mkdir -p "$(dirname "$krew")"
	(cd tools/release/krew && GOWORK=off GOFLAGS=-mod=readonly "$GO" build -trimpath -o "$krew.tmp" sigs.k8s.io/krew/cmd/krew) ||
		fail "building krew failed"
	mv "$krew.tmp" "$krew"
fi
export KREW_ROOT=$tmp/krew KREW_NO_UPGRADE_CHECK=1
# No network: every HTTP(S) request krew would make goes to a proxy on a
# port nothing listens on, so a download instead of the given archive
# fails the install.
export HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 NO_PROXY= https_proxy=http://127.0.0.1:9 http_proxy=http://127.0.0.1:9 no_proxy=
export PATH=$KREW_ROOT/bin:$PATH
"$krew" install --manifest="$DIST/cpid.yaml" --archive="$DIST/cpid-tui_linux_amd64.tar.gz" </dev/null >"$tmp/krew.log" 2>&1 ||
	{ cat "$tmp/krew.log" >&2; fail "krew install failed"; }
grep -q "Installed plugin: cpid" "$tmp/krew.log" || { cat "$tmp/krew.log" >&2; fail "krew did not say it installed cpid"; }
[[ -z $(ls -A "$KREW_ROOT/index") ]] || fail "krew fetched an index into $KREW_ROOT/index"
# krew list would want the index; the receipt is what it lists.
grep -qx "  version: $KREW_VERSION" "$KREW_ROOT/receipts/cpid.yaml" || fail "krew wrote no receipt of cpid $KREW_VERSION"
plugin=$KREW_ROOT/bin/kubectl-cpid
[[ -x $plugin ]] || fail "krew installed no $plugin"
out=$("$plugin" version) || fail "kubectl-cpid version failed"
grep -qF "kubectl cpid $VERSION" <<<"$out" && grep -qF "commit:   $COMMIT" <<<"$out" && grep -qF "date:     $DATE" <<<"$out" ||
	fail "the installed kubectl-cpid version says:"$'\n'"$out"
step "krew installed cpid $KREW_VERSION: $(readlink "$plugin" | sed "s#$KREW_ROOT/##") says $(head -1 <<<"$out")"
# krew holds the archive to the manifest's sha256, and without --archive
# it would download: both fail here.
KREW_ROOT=$tmp/krew-wrong "$krew" install --manifest="$DIST/cpid.yaml" --archive="$DIST/cpid-tui_linux_arm64.tar.gz" </dev/null >"$tmp/krew-wrong.log" 2>&1 &&
	fail "krew installed the linux/arm64 archive as the linux/amd64 one"
grep -q "checksum does not match" "$tmp/krew-wrong.log" || { cat "$tmp/krew-wrong.log" >&2; fail "krew refused the wrong archive, but not for its sha256"; }
KREW_ROOT=$tmp/krew-download "$krew" install --manifest="$DIST/cpid.yaml" </dev/null >"$tmp/krew-download.log" 2>&1 &&
	fail "krew installed without --archive: it reached the network"
step "krew refuses another platform's archive (sha256 mismatch) and cannot download (no network)"
kubectl=$HOME/.cache/cpid/realcp-bin/kubectl
[[ -x $kubectl ]] || kubectl=$(command -v kubectl || true)
if [[ -n $kubectl ]]; then
	out=$("$kubectl" cpid version) || fail "kubectl cpid version failed"
	grep -qF "kubectl cpid $VERSION" <<<"$out" || fail "kubectl cpid version says:"$'\n'"$out"
	step "kubectl ($kubectl) runs the plugin: $(head -1 <<<"$out")"
else
	step "no kubectl binary: kubectl cpid itself is not run"
fi

step "PASS in $((SECONDS - started)) s (first snapshot $first_build s)"
