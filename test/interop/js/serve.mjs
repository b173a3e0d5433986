// serve runs a driver script of the Go tests as a server of JSON lines
// (internal/nodetest): one request per line on stdin, one answer per line
// on stdout, until stdin closes; the first error ends the process (exit 1,
// the stack on stderr, which the Go side shows). Each request names the
// database ({"uri", "storageOptions"}); a connection is opened once per
// uri. handle(db, req) returns the answer, bigints written as strings.
import * as lancedb from "@lancedb/lancedb";
import * as readline from "node:readline";

export function serve(script, handle) {
  const dbs = new Map();
  const connect = async (uri, storageOptions) => {
    if (!dbs.has(uri)) dbs.set(uri, await lancedb.connect(uri, storageOptions ? { storageOptions } : {}));
    return dbs.get(uri);
  };
  const main = async () => {
    const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
    for await (const line of lines) {
      if (line.trim() === "") continue;
      const req = JSON.parse(line);
      const answer = await handle(await connect(req.uri, req.storageOptions), req);
      process.stdout.write(JSON.stringify(answer, (_, v) => (typeof v === "bigint" ? v.toString() : v)) + "\n");
    }
  };
  main().then(
    () => process.exit(0),
    (e) => {
      process.stderr.write(`${script}: ${e?.stack ?? e}\n`);
      process.exit(1);
    },
  );
}

// command is the handler of a script whose requests name a command of
// commands: an unknown one is an error.
export function command(commands, run) {
  return (db, req) => {
    const fn = commands[req.cmd];
    if (!fn) throw new Error(`unknown command ${JSON.stringify(req.cmd)}`);
    return run(fn, db, req);
  };
}
