#!/usr/bin/env node
// azurite-blob with its --blobKeepAliveTimeout honoured. Azurite 3.37's
// blob-only entry point declares the flag but reads it under another name
// (BlobEnvironment.blobKeepAliveTimeout returns flags.keepAliveTimeout), so
// the server always closed idle connections after 5 s; a PUT sent on a
// connection it was closing at that instant failed with a broken pipe (Go
// retries only idempotent requests on a dead reused connection). Real Azure
// keeps idle connections for minutes; the tests ask for 600 s.
// scripts/install-azurite.sh copies this file next to the installed package.
"use strict";
const path = require("path");
const src = path.join(__dirname, "node_modules", "azurite", "dist", "src", "blob");
const BlobEnvironment = require(path.join(src, "BlobEnvironment.js")).default;
BlobEnvironment.prototype.blobKeepAliveTimeout = function () {
  return this.flags.blobKeepAliveTimeout;
};
require(path.join(src, "main.js"));
