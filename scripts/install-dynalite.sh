#!/usr/bin/env bash
# Installs the dynalite DynamoDB emulator (pinned in scripts/dynalite/package.json)
# into <repo>/.tools/dynalite-<version>, and links <repo>/.tools/bin/dynalite-server
# to scripts/dynalite/server.js (the file says why it is not dynalite's own
# cli.js). dynalite is pure JavaScript (its in-memory store): nothing is
# compiled, and its optional native dependencies are left out. Seconds cold.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/install-npm-server.sh" dynalite 3.2.2 server.js dynalite-server --omit=optional
