#!/usr/bin/env bash
# Checks node before `npm install` of the interop suite's LanceDB client, so
# a missing or too old node is one clear line instead of npm's EBADENGINE
# warning or a failure deep in the suite. @lancedb/lancedb 0.39.0 (pinned in
# test/interop/package.json) declares node >= 22; its native binary declares
# >= 18, and the suite passes on Node 20, which is therefore the floor here:
# below 20 is an error, 20 and 21 a one-line note about npm's warning.
set -euo pipefail

if ! command -v node >/dev/null 2>&1; then
	echo "check-node: node not found: the interop suite (make test, make interop) needs Node 22 or newer (20 works, with an npm EBADENGINE warning); install it, or run 'make unit' to skip the LanceDB tests" >&2
	exit 1
fi
v="$(node --version)"
major="${v#v}"
major="${major%%.*}"
if ! [[ "$major" =~ ^[0-9]+$ ]]; then
	echo "check-node: cannot read the version of node ('$v'); the interop suite needs Node 22 or newer" >&2
	exit 1
fi
if ((major < 20)); then
	echo "check-node: node $v is too old: the interop suite needs Node 22 or newer (20 works); upgrade node, or run 'make unit' to skip the LanceDB tests" >&2
	exit 1
fi
if ((major < 22)); then
	echo "check-node: node $v: @lancedb/lancedb 0.39.0 declares node >= 22, so npm prints an EBADENGINE warning; it is harmless (the suite passes on Node 20), Node 22 silences it"
fi
