#!/usr/bin/env node
// dynalite on a loopback address, for reaper's tests of s3+ddb:// roots.
// dynalite's own cli.js listens on every interface (it takes a port, not a
// host) and leaves tables CREATING for 500 ms; this launcher binds the
// address it is given, creates tables ACTIVE at once, and keeps idle
// connections open for 600 s: Node's default of 5 s closed a connection
// the Go client was about to reuse, and DynamoDB's requests are POSTs,
// which Go never resends on a dead reused connection.
// scripts/install-dynalite.sh copies this file next to the installed package.
//
// Usage: dynalite-server --host 127.0.0.1 --port <port>
"use strict";
const path = require("path");
const argv = require(path.join(__dirname, "node_modules", "minimist"))(process.argv.slice(2));
const dynalite = require(path.join(__dirname, "node_modules", "dynalite"));

if (!argv.host || !argv.port) {
  console.error("usage: dynalite-server --host <address> --port <port>");
  process.exit(2);
}
const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
server.keepAliveTimeout = 600 * 1000;
server.headersTimeout = 601 * 1000;
server.listen(Number(argv.port), String(argv.host), () => {
  const a = server.address();
  console.log(`dynalite listening at http://${a.address}:${a.port}`);
});
