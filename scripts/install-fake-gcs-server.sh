#!/usr/bin/env bash
# Installs the fake-gcs-server GCS JSON API emulator (the version tools/go.mod
# pins) into <repo>/.tools/bin, built in tools/ so that it reuses what
# ./bin/reaper's build compiled (tools/go.mod says why). Idempotent: does
# nothing when the binary there was built from the pinned module version (read
# from its build info, `go version -m`).
set -euo pipefail

MODULE=github.com/fsouza/fake-gcs-server
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="$(cd "$root/tools" && go list -m -f '{{.Version}}' "$MODULE")"
bin="$root/.tools/bin"

installed_version() {
	go version -m "$bin/fake-gcs-server" 2>/dev/null | awk -v m="$MODULE" '$1 == "mod" && $2 == m { print $3 }'
}

if [[ -x "$bin/fake-gcs-server" && "$(installed_version)" == "$VERSION" ]]; then
	echo "fake-gcs-server $VERSION already installed in $bin"
	exit 0
fi

mkdir -p "$bin"
echo "installing fake-gcs-server $VERSION into $bin (about a minute cold)"
# CGO_ENABLED=0 and -trimpath are ./bin/reaper's flags (the Makefile's GOBUILD): with the same
# flags and tools/go.mod's versions, make test's Go builds share their compiled packages.
(cd "$root/tools" && CGO_ENABLED=0 go build -trimpath -o "$bin/fake-gcs-server" "$MODULE")

got="$(installed_version)"
if [[ "$got" != "$VERSION" ]]; then
	echo "install-fake-gcs-server: $bin/fake-gcs-server reports module version '${got}', want $VERSION" >&2
	exit 1
fi
echo "fake-gcs-server $VERSION installed in $bin"
