# tools/release/settings.sh: the settings snapshot.sh and verify.sh share,
# sourced by both from the top of the tree (see snapshot.sh for each).
GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty)}
COMMIT=$(git rev-parse HEAD)
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD)}
export SOURCE_DATE_EPOCH
DATE=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
URL_BASE=${URL_BASE:-https://github.com/cpid-dev/cpid/releases/download/$VERSION/}
[[ $URL_BASE == */ ]] || URL_BASE+=/
DIST=${DIST:-dist}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
# krew wants a semantic version with a leading v; a snapshot of a tree
# with no tag (git describe gives the bare commit) is v0.0.0-g<commit>.
if [[ $VERSION =~ ^v[0-9]+\.[0-9]+\.[0-9]+([-+].*)?$ ]]; then
	KREW_VERSION=$VERSION
else
	KREW_VERSION=v0.0.0-g$VERSION
fi

# source_id says what a snapshot is built from: the settings, the Go
# toolchain, the commit and the tree's changes to it (tracked files'
# diff and untracked files' contents). snapshot.sh writes it to
# $DIST/SOURCE; verify.sh rebuilds when the tree's differs.
source_id() {
	echo "version $VERSION"
	echo "commit $COMMIT"
	echo "date $DATE"
	echo "url $URL_BASE"
	echo "platforms $PLATFORMS"
	"$GO" version
	echo "changes $({ git diff HEAD --binary; git ls-files -z --others --exclude-standard | xargs -0r sha256sum; } | sha256sum | cut -c1-64)"
}
