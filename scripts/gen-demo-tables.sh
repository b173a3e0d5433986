#!/usr/bin/env bash
# Writes the tables `reaper demo` seeds (cmd/reaper/demodata/, embedded in
# the binary) with the LanceDB client the interop suite pins
# (test/interop/package-lock.json, `make interop-deps`), through its driver
# (test/interop/js/lancedb.mjs), so that LanceDB opens the demo's live tables.
# Run it again only to change them; commit the result.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/cmd/reaper/demodata"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

node "$root/test/interop/js/lancedb.mjs" >/dev/null <<JSON
{"uri": "$work", "ops": [
  {"op": "create", "name": "customers", "kind": "plain", "from": 0, "to": 20},
  {"op": "add", "name": "customers", "from": 20, "to": 40},
  {"op": "index", "name": "customers", "column": "category", "type": "bitmap"},
  {"op": "create", "name": "orders", "kind": "plain", "from": 0, "to": 30},
  {"op": "delete", "name": "orders", "where": "id < 5"},
  {"op": "create", "name": "events.2024", "kind": "plain", "from": 0, "to": 50},
  {"op": "add", "name": "events.2024", "from": 50, "to": 100},
  {"op": "delete", "name": "events.2024", "where": "id % 10 = 0"},
  {"op": "add", "name": "events.2024", "from": 100, "to": 120},
  {"op": "create", "name": "clickstream_raw", "kind": "plain", "from": 0, "to": 40},
  {"op": "index", "name": "clickstream_raw", "column": "id", "type": "btree"},
  {"op": "create", "name": "staging_import", "kind": "plain", "from": 0, "to": 10}
]}
JSON
rm -rf "$out"
mkdir -p "$out"
cp -R "$work"/*.lance "$out/"
echo "wrote $(find "$out" -type f | wc -l) files, $(du -sk "$out" | cut -f1) KiB, into $out"
