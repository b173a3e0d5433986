#!/usr/bin/env bash
# Installs the dynalite DynamoDB emulator (pinned in scripts/dynalite/package.json)
# into <repo>/.tools/dynalite-<version>, and links <repo>/.tools/bin/dynalite-server
# to scripts/dynalite/server.js copied next to it (the file says why it is not
# dynalite's own cli.js). Idempotent: does nothing when the pinned version is
# already there. Needs node and npm (Node 20 works); dynalite is pure JavaScript
# (its in-memory store), so nothing is compiled.
set -euo pipefail

# link points $2 at $1 with a relative path, leaving a link that already does
# alone: go test's result cache keys on the test servers' paths (mtime included).
link() {
	local target
	target="$(realpath -s --relative-to="$(dirname "$2")" "$1")"
	[[ -L "$2" && "$(readlink "$2")" == "$target" ]] || ln -sfn "$target" "$2"
}

VERSION=3.2.2
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/.tools/dynalite-$VERSION"
bin="$root/.tools/bin"

installed_version() {
	node -p "require('$dir/node_modules/dynalite/package.json').version" 2>/dev/null || true
}

launcher() {
	mkdir -p "$bin"
	cmp -s "$root/scripts/dynalite/server.js" "$dir/server.js" || install -m 0755 "$root/scripts/dynalite/server.js" "$dir/server.js"
	link "$dir/server.js" "$bin/dynalite-server"
}

if [[ -f "$dir/node_modules/dynalite/package.json" && "$(installed_version)" == "$VERSION" ]]; then
	launcher
	echo "dynalite $VERSION already installed in $dir"
	exit 0
fi

command -v npm >/dev/null || { echo "install-dynalite: npm not found (Node 20 or later is needed)" >&2; exit 1; }
mkdir -p "$dir" "$bin"
cp "$root/scripts/dynalite/package.json" "$dir/package.json"
echo "installing dynalite $VERSION into $dir (seconds cold)"
(cd "$dir" && npm install --no-audit --no-fund --loglevel=error --omit=optional)

got="$(installed_version)"
if [[ "$got" != "$VERSION" ]]; then
	echo "install-dynalite: $dir holds dynalite '${got}', want $VERSION" >&2
	exit 1
fi
launcher
echo "dynalite $VERSION installed in $dir"
