// LanceDB side of `make bench`'s version-retention scenarios (bench/retention.go):
// builds the fixture tables with the real client, and runs the client's own
// cleanup on a copy of them, timed.
//
//   node retention_bench.mjs build <dir> <spec JSON>
//     spec: {"tables": N, "versions": V, "delete_frags": K, "update_frags": U,
//            "compact_every": C, "keep_fraction": F}
//     Writes tables t0..t{N-1} into the local root <dir>, concurrently. Each
//     table cycles through: append 40 rows (one data file), delete one row
//     in each of the K newest appends (K deletion files), update one row in
//     each of the U newest appends (a data file and U deletion files), with
//     a compaction every C versions, until it has V versions less the
//     newest F of them. Then every table waits for the others, the builder
//     pauses a second (the cutoff goes mid-pause), and each table writes
//     the rest and compacts until a compaction makes no version, so that
//     the client's optimize then only cleans. Prints {"cutoff_ms",
//     "tables": [{"name", "versions"}]}.
//
//   node retention_bench.mjs build-idle <dir> <spec JSON>
//     spec: {"tables": N}
//     Writes N small tables t0..t{N-1} into the local root <dir>,
//     CONCURRENCY at a time: each is created with 40 rows, appended 40 more, has one row
//     deleted (a deletion file) and is compacted until a compaction makes
//     no version, so that optimize then finds nothing to compact. Prints
//     {"cutoff_ms" (2 s before the first write: older than every version,
//     whatever second the store rounds a LastModified to), "tables":
//     [{"name", "versions"}]}: a cleanup at that cutoff has nothing to
//     remove, the idle tables of a fleet.
//
//   node retention_bench.mjs cleanup <uri> <spec JSON>
//     spec: {"storage_options": {...}, "cutoff_ms", "tables": [names]}, or
//     "table_count": N in place of "tables" for t0..t{N-1}
//     One table after another: openTable, then
//     optimize({cleanupOlderThan: new Date(cutoff_ms)}): what a user loops
//     over a database's tables today. Prints {"ms" (the loop, without Node's
//     start), "tables": [{"name", "ms", "old_versions_removed",
//     "bytes_removed"}]}.
//
//   node retention_bench.mjs versions <uri> <spec JSON>
//     spec: {"storage_options": {...}, "table": name}
//     openTable, then listVersions(): the client reading every version of
//     one table, nothing deleted. Prints {"ms" (openTable and
//     listVersions, without Node's start and connect), "versions"}.
import * as lancedb from "@lancedb/lancedb";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// ROWS per append: a delete or an update takes one row of each of the
// newest appends, so an append's fragment outlives ROWS of them.
const ROWS = 40;
const CONCURRENCY = 16;

function rows(from, to, tag) {
  const out = [];
  for (let i = from; i < to; i++) out.push({ id: BigInt(i), category: `${tag}${i % 5}` });
  return out;
}

// Barrier releases every waiter once n have arrived.
class Barrier {
  constructor(n) {
    this.n = n;
    this.waiting = [];
    this.all = new Promise((r) => (this.release = r));
  }
  async wait() {
    if (--this.n === 0) this.release();
    await this.all;
  }
}

async function compactToFixpoint(t) {
  for (let calls = 0; calls < 6; calls++) {
    const before = await t.version();
    await t.optimize({ cleanupOlderThan: new Date(0) });
    if ((await t.version()) === before) return;
  }
  throw new Error("optimize still makes versions after 6 calls");
}

async function buildTable(db, name, spec, barrier) {
  const t = await db.createTable(name, rows(0, ROWS, "c"));
  const starts = [0]; // first id of each append
  let next = ROWS;
  let cycle = 0;
  const head = spec.versions - Math.round(spec.versions * spec.keep_fraction);
  let sinceCompact = 0;
  const step = async (limit) => {
    while ((await t.version()) < limit) {
      if (spec.compact_every > 0 && ++sinceCompact >= spec.compact_every) {
        sinceCompact = 0;
        await t.optimize({ cleanupOlderThan: new Date(0) });
        continue;
      }
      switch (cycle++ % 3) {
        case 0:
          starts.push(next);
          await t.add(rows(next, next + ROWS, "c"));
          next += ROWS;
          break;
        case 1: {
          const from = starts[Math.max(0, starts.length - spec.delete_frags)];
          await t.delete(`id >= ${from} AND id % ${ROWS} = ${cycle % ROWS}`);
          break;
        }
        default: {
          const from = starts[Math.max(0, starts.length - spec.update_frags)];
          await t.update({ where: `id >= ${from} AND id % ${ROWS} = ${(cycle + ROWS / 2) % ROWS}`, values: { category: `'u${cycle}'` } });
        }
      }
    }
  };
  await step(head);
  await barrier.wait();
  await barrier.paused;
  await step(spec.versions);
  await compactToFixpoint(t);
  return { name, versions: await t.version() };
}

async function build(dir, spec) {
  const db = await lancedb.connect(dir);
  const barrier = new Barrier(spec.tables);
  let cutoff = 0;
  barrier.paused = barrier.all.then(async () => {
    const start = Date.now();
    await sleep(1000);
    cutoff = Math.round((start + Date.now()) / 2);
  });
  const names = Array.from({ length: spec.tables }, (_, i) => `t${i}`);
  const out = new Array(names.length);
  let i = 0;
  // Every table must reach the barrier, so all run at once; the heavy work
  // is serialized by LanceDB's own runtime.
  const worker = async () => {
    while (i < names.length) {
      const k = i++;
      out[k] = await buildTable(db, names[k], spec, barrier);
    }
  };
  await Promise.all(Array.from({ length: spec.tables }, worker));
  return { cutoff_ms: cutoff, tables: out };
}

// buildIdle writes the idle tables (see build-idle above).
async function buildIdle(dir, spec) {
  const db = await lancedb.connect(dir);
  const cutoff = Date.now() - 2000;
  const out = new Array(spec.tables);
  let i = 0;
  const worker = async () => {
    while (i < spec.tables) {
      const k = i++;
      const t = await db.createTable(`t${k}`, rows(0, ROWS, "c"));
      await t.add(rows(ROWS, 2 * ROWS, "c"));
      await t.delete(`id = ${ROWS / 2}`);
      await compactToFixpoint(t);
      out[k] = { name: `t${k}`, versions: await t.version() };
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { cutoff_ms: cutoff, tables: out };
}

async function cleanup(uri, spec) {
  const start = performance.now();
  const db = await lancedb.connect(uri, spec.storage_options ? { storageOptions: spec.storage_options } : {});
  const tables = [];
  const names = spec.tables ?? Array.from({ length: spec.table_count }, (_, i) => `t${i}`);
  for (const name of names) {
    const t0 = performance.now();
    const t = await db.openTable(name);
    const stats = await t.optimize({ cleanupOlderThan: new Date(spec.cutoff_ms) });
    tables.push({
      name,
      ms: performance.now() - t0,
      old_versions_removed: Number(stats?.prune?.oldVersionsRemoved ?? -1),
      bytes_removed: Number(stats?.prune?.bytesRemoved ?? -1),
    });
  }
  return { ms: performance.now() - start, tables };
}

async function versions(uri, spec) {
  const db = await lancedb.connect(uri, spec.storage_options ? { storageOptions: spec.storage_options } : {});
  const start = performance.now();
  const t = await db.openTable(spec.table);
  const vs = await t.listVersions();
  return { ms: performance.now() - start, versions: vs.length };
}

async function main() {
  const [cmd, where, specJSON] = process.argv.slice(2);
  const spec = JSON.parse(specJSON);
  let out;
  if (cmd === "build") out = await build(where, spec);
  else if (cmd === "build-idle") out = await buildIdle(where, spec);
  else if (cmd === "cleanup") out = await cleanup(where, spec);
  else if (cmd === "versions") out = await versions(where, spec);
  else throw new Error(`unknown command ${cmd}`);
  // Written before the exit below: to a pipe, a write is asynchronous,
  // and process.exit would cut off what did not fit in its buffer (the
  // report of 1,000 tables does not).
  const line = JSON.stringify(out, (_, v) => (typeof v === "bigint" ? v.toString() : v)) + "\n";
  await new Promise((resolve, reject) => process.stdout.write(line, (e) => (e ? reject(e) : resolve())));
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`retention_bench.mjs: ${e?.stack ?? e}\n`);
    process.exit(1);
  },
);
