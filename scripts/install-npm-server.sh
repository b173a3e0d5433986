#!/usr/bin/env bash
# install-npm-server.sh NAME VERSION LAUNCHER BIN [NPM-ARGS...]
#
# Installs the test server NAME@VERSION from the npm registry (pinned in
# scripts/NAME/package.json) into <repo>/.tools/NAME-VERSION, copies
# scripts/NAME/LAUNCHER next to it (the launcher says why it is not the
# package's own entry point) and links <repo>/.tools/bin/BIN to it.
# Idempotent: does nothing but check the link when the pinned version is
# already there. Needs node and npm (Node 20 works). install-azurite.sh and
# install-dynalite.sh call it.
set -euo pipefail

name="$1" version="$2" launcher_src="$3" bin_name="$4"
shift 4
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/.tools/$name-$version"
bin="$root/.tools/bin"

# link points $2 at $1 with a relative path, so the link stays right when
# the checkout moves or is reached through another path (a symlinked
# .tools), and leaves a link that already does alone: go test's result
# cache keys on the test servers' paths (mtime included), so a link made
# anew on every make test re-ran every suite that starts the server.
link() {
	local target
	target="$(realpath -s --relative-to="$(dirname "$2")" "$1")"
	[[ -L "$2" && "$(readlink "$2")" == "$target" ]] || ln -sfn "$target" "$2"
}

installed_version() {
	node -p "require('$dir/node_modules/$name/package.json').version" 2>/dev/null || true
}

launcher() {
	mkdir -p "$bin"
	cmp -s "$root/scripts/$name/$launcher_src" "$dir/$launcher_src" || install -m 0755 "$root/scripts/$name/$launcher_src" "$dir/$launcher_src"
	link "$dir/$launcher_src" "$bin/$bin_name"
}

if [[ -f "$dir/node_modules/$name/package.json" && "$(installed_version)" == "$version" ]]; then
	launcher
	echo "$name $version already installed in $dir"
	exit 0
fi

command -v npm >/dev/null || { echo "install-$name: npm not found (Node 20 or later is needed)" >&2; exit 1; }
mkdir -p "$dir" "$bin"
cp "$root/scripts/$name/package.json" "$dir/package.json"
echo "installing $name $version into $dir"
(cd "$dir" && npm install --no-audit --no-fund --loglevel=error "$@")

got="$(installed_version)"
if [[ "$got" != "$version" ]]; then
	echo "install-$name: $dir holds $name '${got}', want $version" >&2
	exit 1
fi
launcher
echo "$name $version installed in $dir"
