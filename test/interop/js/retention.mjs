// LanceDB driver of the retention oracle (retention_oracle_test.go) and of
// Lance's cleanup tests ported to the client (lance_cleanup_test.go):
// writes seeded histories into many tables of one root at once and runs the
// client's own cleanup on them, so that the Go test can compare reaper's
// retention plan with the files Lance deleted.
//
// It is a server: one JSON request per line on stdin, one JSON answer per
// line on stdout, until stdin closes. Starting Node with LanceDB costs about
// a second, and the oracle needs a round trip per cleanup step.
//
// Requests (every table of a request is worked on concurrently; each
// table's own operations run one after another; a table spec may name its
// LanceDB namespace, "namespace": ["tenant_a", "sub"], made on create):
//   {"cmd": "build", "tables": [{"name", "kind", "ops": [<op>...]}]}
//     writes each history, each version at least GAP_MS after the previous
//     one, then calls optimize({cleanupOlderThan: new Date(0)}) until a call
//     makes no new version. Answer: {"tables": [{"name", "versions":
//     [{"version", "timestamp_ms", "rows"}], "optimize_calls"}]}.
//   {"cmd": "ops", "tables": [{"name", "kind", "ops": [<op>...]}]}
//     build's writes alone, on a new table (ops start with create) or on
//     the table as it is: a test then changes files by hand between them.
//     Answer: {"tables": [{"name", "versions": [{"version", "timestamp_ms"}]}]}.
//   {"cmd": "stabilize", "tables": [{"name"}]}
//     build's optimize calls alone. Answer: as build's.
//   {"cmd": "cleanup", "tables": [{"name", "cutoff_ms", "delete_unverified"}]}
//     optimize({cleanupOlderThan: new Date(cutoff_ms), deleteUnverified}).
//     Answer: {"tables": [{"name", "versions_before", "versions_after",
//     "bytes_removed", "versions_removed" (what the client reports),
//     "refused": "<error text>" | ""}]}.
//   {"cmd": "verify", "tables": [{"name"}]}
//     opens every version LanceDB lists and counts its rows, and the newest
//     version of every branch. Answer: {"tables": [{"name", "versions":
//     [{"version", "rows", "error"}], "branches": [{"name", "rows", "error"}]}]}.
//
// Operations of a history (op.op):
//   create {from, to}             createTable (kind "plain" or "vectors")
//   add {from, to}                append rows
//   delete {where}                deletion files
//   update {where, value}         category = value where ...
//   merge {from, to}              merge-insert on id: update matches, insert the rest
//   overwrite {from, to}          add with mode "overwrite"
//   add_column {column}           addColumns: <column> = id * 2
//   rename_column {column}        alterColumns: the first added column becomes <column>
//   drop_column {column}          dropColumns: the first added column
//                                 (both add <column> when the schema has none, e.g. after a restore)
//   index {column, type}          btree, bitmap, fts or ivf_flat (btree on id when no rows to train on)
//   optimize {}                   compaction and index optimization, no cleanup
//   cleanup {}                    optimize({cleanupOlderThan: now}): the client's own cleanup (of a branch)
//   tag {tag, back}               tags().create on the version <back> before the current one
//   tag_update {tag, back}        tags().update to the version <back> before the current one
//   untag {tag}                   tags().delete
//   restore {back}                checkout(the version <back> before the current one), restore()
//   branch {branch, from, to, ref, version}
//                                 branches().create from the latest version (of branch ref,
//                                 or version <version>), rows [from, to) added on it (none when to <= from)
//   on_branch {branch, ops}       ops applied to the branch's table
//   orphan {what}                 a file no manifest references, as a failed or
//                                 concurrent write leaves it (local roots only):
//                                 what is data, txn, deletion, index or tmp
import * as lancedb from "@lancedb/lancedb";
import { randomUUID } from "node:crypto";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { createIn, openIn } from "./ns.mjs";
import { command, serve } from "./serve.mjs";
import { indexConfig, rows, schemaFor } from "./tables.mjs";

// GAP_MS: versions are written at least this far apart, so that a cutoff
// placed mid-gap is never within the client's timing noise (it turns a
// cutoff Date into an age, now minus the date, before Lance compares).
const GAP_MS = 110;
const MAX_OPTIMIZE_CALLS = 6;
// CONCURRENCY caps the tables worked on at once: index builds share one
// DataFusion memory pool (150 MB), which about 300 concurrent builds exhaust.
const CONCURRENCY = 64;
// HEAVY caps the index builds and optimizations running at once: each
// bitmap or btree build reserves 40 MB of that pool for its sort, so four at
// once already fail with "Resources exhausted".
const HEAVY = 2;

// heavy runs fn when fewer than HEAVY heavy calls are running.
let heavyRunning = 0;
const heavyWaiting = [];
async function heavy(fn) {
  while (heavyRunning >= HEAVY) await new Promise((r) => heavyWaiting.push(r));
  heavyRunning++;
  try {
    return await fn();
  } finally {
    heavyRunning--;
    heavyWaiting.shift()?.();
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));




// data builds an Arrow table of rows in the table's current schema: the
// columns added by add_column are computed by Lance on existing rows only,
// so new rows carry them too (id * 2).
async function data(t, kind, from, to) {
  const schema = await t.schema();
  const extra = schema.fields.filter((f) => !["id", "category", "vector"].includes(f.name));
  const rs = rows(kind, from, to).map((r) => {
    for (const f of extra) r[f.name] = r.id * 2n;
    return r;
  });
  return lancedb.makeArrowTable(rs, { schema });
}

async function addedColumn(t) {
  const f = (await t.schema()).fields.find((f) => !["id", "category", "vector"].includes(f.name));
  return f ? f.name : null;
}

async function apply(db, spec, t, op) {
  switch (op.op) {
    case "create":
      return await createIn(db, spec.name, rows(spec.kind, op.from, op.to), spec.namespace, { schema: schemaFor(spec.kind), mode: "create" });
    case "add":
      await t.add(await data(t, spec.kind, op.from, op.to));
      return t;
    case "delete":
      await t.delete(op.where);
      return t;
    case "update":
      await t.update({ where: op.where, values: { category: op.value } });
      return t;
    case "merge":
      await t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(await data(t, spec.kind, op.from, op.to));
      return t;
    case "overwrite":
      await t.add(await data(t, spec.kind, op.from, op.to), { mode: "overwrite" });
      return t;
    case "add_column":
      await t.addColumns([{ name: op.column, valueSql: "id * 2" }]);
      return t;
    case "rename_column": {
      // The first added column of the current schema: a restore may have
      // taken the generator's columns away.
      const c = await addedColumn(t);
      if (c === null) await t.addColumns([{ name: op.column, valueSql: "id * 2" }]);
      else await t.alterColumns([{ path: c, rename: op.column }]);
      return t;
    }
    case "drop_column": {
      const c = await addedColumn(t);
      if (c === null) await t.addColumns([{ name: op.column, valueSql: "id * 2" }]);
      else await t.dropColumns([c]);
      return t;
    }
    case "index":
      // A vector index needs rows to train on: a table whose rows were all
      // deleted gets a scalar index instead.
      if (op.type === "ivf_flat" && (await t.countRows()) < 2) await heavy(() => t.createIndex("id", { config: indexConfig("btree"), replace: true }));
      else await heavy(() => t.createIndex(op.column, { config: indexConfig(op.type), replace: true }));
      return t;
    case "optimize":
      await heavy(() => t.optimize());
      return t;
    case "cleanup":
      await heavy(() => t.optimize({ cleanupOlderThan: new Date() }));
      return t;
    case "tag":
      await (await t.tags()).create(op.tag, Math.max(1, (await t.version()) - (op.back ?? 0)));
      return t;
    case "tag_update":
      await (await t.tags()).update(op.tag, Math.max(1, (await t.version()) - (op.back ?? 0)));
      return t;
    case "untag":
      await (await t.tags()).delete(op.tag);
      return t;
    case "restore":
      await t.checkout(Math.max(1, (await t.version()) - op.back));
      await t.restore();
      return t;
    case "branch": {
      const b = await (await t.branches()).create(op.branch, op.ref ?? undefined, op.version ?? undefined);
      if ((op.to ?? 0) > (op.from ?? 0)) await b.add(await data(b, spec.kind, op.from, op.to));
      return t;
    }
    case "on_branch": {
      const b = await (await t.branches()).checkout(op.branch);
      for (const sub of op.ops) await apply(db, spec, b, sub);
      return t;
    }
    case "orphan":
      await orphan(spec.dir, op.what);
      return t;
    default:
      throw new Error(`unknown op ${JSON.stringify(op.op)}`);
  }
}

// orphan writes a file no manifest references into the table directory
// dir (a local path), named as Lance names the files of its kind.
async function orphan(dir, what) {
  const id = randomUUID();
  const names = {
    data: `data/${id.replaceAll("-", "")}.lance`,
    txn: `_transactions/0-${id}.txn`,
    deletion: `_deletions/0-1-${Date.now()}.arrow`,
    index: `_indices/${id}/index.idx`,
    tmp: `_versions/.tmp_1.manifest_${id}`,
  };
  const file = path.join(dir, names[what] ?? "");
  if (!names[what]) throw new Error(`unknown orphan ${what}`);
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, `orphan ${what} ${id}\n`);
}

async function versionsOf(t) {
  return (await t.listVersions()).map((v) => ({ version: v.version, timestamp_ms: v.timestamp.getTime() }));
}

async function build(db, spec) {
  await ops(db, spec);
  return await stabilize(db, spec);
}

// ops applies spec.ops in order, GAP_MS apart, to a new table (the first
// op is create) or to the table spec.name.
async function ops(db, spec) {
  let t = spec.ops[0]?.op === "create" ? null : await openIn(db, spec.name, spec.namespace);
  for (const [i, op] of spec.ops.entries()) {
    try {
      t = await apply(db, spec, t, op);
    } catch (e) {
      throw new Error(`table ${spec.name} op ${i} ${JSON.stringify(op)}: ${e?.message ?? e}`);
    }
    await sleep(GAP_MS);
  }
  return { name: spec.name, versions: await versionsOf(t ?? (await openIn(db, spec.name, spec.namespace))) };
}

// stabilize calls optimize({cleanupOlderThan: new Date(0)}) until a call
// makes no new version: the client's cleanup compacts first, so a table is
// planned once compaction has nothing left to do.
async function stabilize(db, spec) {
  const t = await openIn(db, spec.name, spec.namespace);
  let calls = 0;
  for (;;) {
    const before = (await t.listVersions()).length;
    await heavy(() => t.optimize({ cleanupOlderThan: new Date(0) }));
    calls++;
    if ((await t.listVersions()).length === before) break;
    if (calls === MAX_OPTIMIZE_CALLS) throw new Error(`table ${spec.name}: optimize still makes versions after ${calls} calls`);
    await sleep(GAP_MS);
  }
  const versions = await versionsOf(t);
  for (const v of versions) {
    await t.checkout(v.version);
    v.rows = await t.countRows();
  }
  return { name: spec.name, versions, optimize_calls: calls };
}

async function cleanup(db, spec) {
  const t = await openIn(db, spec.name, spec.namespace);
  const before = (await t.listVersions()).length;
  let refused = "";
  let stats = null;
  try {
    stats = await heavy(() => t.optimize({ cleanupOlderThan: new Date(spec.cutoff_ms), deleteUnverified: spec.delete_unverified }));
  } catch (e) {
    refused = String(e?.message ?? e);
  }
  const after = (await (await openIn(db, spec.name, spec.namespace)).listVersions()).length;
  return {
    name: spec.name,
    versions_before: before,
    versions_after: after,
    bytes_removed: stats?.prune?.bytesRemoved ?? 0,
    versions_removed: stats?.prune?.oldVersionsRemoved ?? 0,
    refused,
  };
}

async function verify(db, spec) {
  const t = await openIn(db, spec.name, spec.namespace);
  const out = [];
  for (const v of await versionsOf(t)) {
    try {
      await t.checkout(v.version);
      out.push({ version: v.version, rows: await t.countRows(), error: "" });
    } catch (e) {
      out.push({ version: v.version, rows: -1, error: String(e?.message ?? e) });
    }
  }
  const branches = [];
  for (const name of Object.keys(await (await t.branches()).list()).sort()) {
    try {
      const b = await (await t.branches()).checkout(name);
      branches.push({ name, rows: await b.countRows(), error: "" });
    } catch (e) {
      branches.push({ name, rows: -1, error: String(e?.message ?? e) });
    }
  }
  return { name: spec.name, versions: out, branches };
}

const commands = { build, ops, stabilize, cleanup, verify };

// pool maps fn over items, CONCURRENCY at a time, keeping their order.
async function pool(items, fn) {
  const out = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, worker));
  return out;
}

serve("retention.mjs", command(commands, async (fn, db, req) => ({ tables: await pool(req.tables, (spec) => fn(db, spec)) })));
