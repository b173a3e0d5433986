#!/usr/bin/env bash
# Installs the Azurite Azure Blob Storage test server (pinned in
# scripts/azurite/package.json) into <repo>/.tools/azurite-<version>, and links
# <repo>/.tools/bin/azurite-blob to its blob server (through
# scripts/azurite/blob.js). Idempotent: does nothing when the
# pinned version is already there. Needs node and npm (Node 20 works).
set -euo pipefail

# link points $2 at $1, leaving a link that already does alone: go test's
# result cache keys on the test servers' paths (mtime included), so a link
# made anew on every make test re-ran every suite that starts the server.
# link points $2 at $1 with a relative path, so the link stays right when
# the checkout moves or is reached through another path (a symlinked .tools).
link() {
	local target
	target="$(realpath -s --relative-to="$(dirname "$2")" "$1")"
	[[ -L "$2" && "$(readlink "$2")" == "$target" ]] || ln -sfn "$target" "$2"
}

VERSION=3.37.0
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/.tools/azurite-$VERSION"
bin="$root/.tools/bin"

installed_version() {
	node -p "require('$dir/node_modules/azurite/package.json').version" 2>/dev/null || true
}

# launcher puts scripts/azurite/blob.js (azurite-blob with its keep-alive flag
# honoured; the file says why) next to the package and links bin/azurite-blob
# to it, leaving both alone when they are already right.
launcher() {
	mkdir -p "$bin"
	cmp -s "$root/scripts/azurite/blob.js" "$dir/blob.js" || install -m 0755 "$root/scripts/azurite/blob.js" "$dir/blob.js"
	link "$dir/blob.js" "$bin/azurite-blob"
}

if [[ -x "$dir/node_modules/.bin/azurite-blob" && "$(installed_version)" == "$VERSION" ]]; then
	launcher
	echo "azurite $VERSION already installed in $dir"
	exit 0
fi

command -v npm >/dev/null || { echo "install-azurite: npm not found (Node 20 or later is needed)" >&2; exit 1; }
mkdir -p "$dir" "$bin"
cp "$root/scripts/azurite/package.json" "$dir/package.json"
echo "installing azurite $VERSION into $dir (tens of seconds cold)"
(cd "$dir" && npm install --no-audit --no-fund --loglevel=error)

got="$(installed_version)"
if [[ "$got" != "$VERSION" ]]; then
	echo "install-azurite: $dir holds azurite '${got}', want $VERSION" >&2
	exit 1
fi
launcher
echo "azurite $VERSION installed in $dir"
