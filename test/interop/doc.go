// Package interop holds the interop suite: reaper against databases written
// by the real LanceDB client (@lancedb/lancedb from npm, driven through
// js/lancedb.mjs with Node), on a local directory and on S3 (versitygw).
// The retention oracle (retention_oracle_test.go, js/retention.mjs) checks
// reaper's retention plan against the client's own cleanup, file for file;
// lance_cleanup_test.go does so on Lance's own cleanup tests, ported to the
// client, and checks that `reaper retain` deletes what its dry run lists.
//
// Run it with `make interop`, which installs the npm packages (npm install
// with the committed package-lock.json), builds reaper and the S3 test
// server. `go test ./test/interop` skips it with a message when node or the
// npm packages are missing, and fails instead under CI=true or
// REAPER_REQUIRE_S3=1.
package interop
