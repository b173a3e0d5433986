#!/usr/bin/env bash
# Installs the Azurite Azure Blob Storage test server (pinned in
# scripts/azurite/package.json) into <repo>/.tools/azurite-<version>, and links
# <repo>/.tools/bin/azurite-blob to its blob server through scripts/azurite/blob.js
# (Azurite's own entry point ignores the keep-alive flag the tests need; the
# file says why). Tens of seconds cold.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/install-npm-server.sh" azurite 3.37.0 blob.js azurite-blob
