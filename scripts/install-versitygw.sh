#!/usr/bin/env bash
# Installs the versitygw S3 test server (pinned version) into <repo>/.tools/bin.
# Idempotent: does nothing when the binary there was built from the pinned
# module version. `versitygw --version` prints "Version: git" for a
# `go install` build, so the module version is read from the binary's build
# info (`go version -m`) instead.
set -euo pipefail

VERSION=v1.8.0
MODULE=github.com/versity/versitygw
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/.tools/bin"

installed_version() {
	go version -m "$bin/versitygw" 2>/dev/null | awk -v m="$MODULE" '$1 == "mod" && $2 == m { print $3 }'
}

if [[ -x "$bin/versitygw" && "$(installed_version)" == "$VERSION" ]]; then
	echo "versitygw $VERSION already installed in $bin"
	exit 0
fi

mkdir -p "$bin"
echo "installing versitygw $VERSION into $bin (about 2 minutes cold)"
GOBIN="$bin" go install "$MODULE/cmd/versitygw@$VERSION"

got="$(installed_version)"
if [[ "$got" != "$VERSION" ]]; then
	echo "install-versitygw: $bin/versitygw reports module version '${got}', want $VERSION" >&2
	exit 1
fi
echo "versitygw $VERSION installed in $bin"
