#!/usr/bin/env bash
# Installs the versitygw S3 test server (the version tools/go.mod pins) and
# links it as <repo>/.tools/bin/versitygw. It is built in tools/, whose go.mod
# holds every module versitygw shares with reaper at reaper's version, so the
# build reuses what ./bin/reaper's build compiled. The build is cached under
# .tools/versitygw/<version>/, keyed by version: switching branches or
# clones that share .tools never rebuilds a version already built, and a
# version bump builds beside the old one. `versitygw --version` prints
# "Version: git" for a module build, so the module version is read from
# the binary's build info (`go version -m`) instead.
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

MODULE=github.com/versity/versitygw
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="$(cd "$root/tools" && go list -m -f '{{.Version}}' "$MODULE")"
tools="${REAPER_TOOLS_DIR:-$root/.tools}"
bin="$tools/bin"
cache="$tools/versitygw/$VERSION"

module_version() {
	go version -m "$1" 2>/dev/null | awk -v m="$MODULE" '$1 == "mod" && $2 == m { print $3 }'
}

# An install from before the versioned cache: keep it when it is the version.
if [[ -x "$bin/versitygw" && ! -L "$bin/versitygw" && "$(module_version "$bin/versitygw")" == "$VERSION" ]]; then
	echo "versitygw $VERSION already installed in $bin"
	exit 0
fi

if [[ ! -x "$cache/versitygw" || "$(module_version "$cache/versitygw")" != "$VERSION" ]]; then
	mkdir -p "$cache"
	echo "building versitygw $VERSION into $cache: once per version, about 1 min after ./bin/reaper's build on 2 cores"
	start=$SECONDS
	# CGO_ENABLED=0 and -trimpath are ./bin/reaper's flags (the Makefile's GOBUILD): with the same
	# flags and tools/go.mod's versions, make test's Go builds share their compiled packages.
	(cd "$root/tools" && CGO_ENABLED=0 go build -trimpath -o "$cache/versitygw" "$MODULE/cmd/versitygw")
	got="$(module_version "$cache/versitygw")"
	if [[ "$got" != "$VERSION" ]]; then
		echo "install-versitygw: $cache/versitygw reports module version '${got}', want $VERSION" >&2
		exit 1
	fi
	echo "versitygw $VERSION built in $((SECONDS - start)) s"
fi
mkdir -p "$bin"
link "$cache/versitygw" "$bin/versitygw"
echo "versitygw $VERSION ready: $bin/versitygw -> $cache/versitygw"
