// LanceDB driver for the interop tests: runs a list of operations against one
// database root with the real @lancedb/lancedb client and prints one JSON
// document with a result per operation.
//
// Input (JSON on stdin):
//   {"uri": "/abs/root" | "s3://bucket/prefix",
//    "storageOptions": {"aws_endpoint": ..., ...},   // optional
//    "ops": [{"op": "create", "name": "t", "kind": "plain", "from": 0, "to": 100}, ...]}
//
// Operations:
//   create   {name, kind: "plain"|"vectors", from, to}  mode "create": fails if the table exists
//   add      {name, from, to}
//   delete   {name, where}
//   index    {name, column, type: "btree"|"bitmap"|"ivf_flat"}
//   tag      {name, tag, version}             tag a version (_refs/tags/)
//   branch   {name, branch, from, to}         branch from the latest version and add rows on it (tree/<branch>/)
//   overwrite {name, kind, from, to}          createTable mode "overwrite": a revive by overwrite
//   drop     {name}                           LanceDB's own dropTable (0.39: deletes the directory)
//   names    {}      every table name LanceDB lists
//   snapshot {name}  rows, versions, indices, tags, branches, a digest of every id:
//                    what must survive a purge
//   open     {name}  {"ok": bool, "error": string}: open and count, never throws
//
// Output (stdout): {"results": [<one value per op>]}. Any other failure is
// printed on stderr and exits 1. The process exits explicitly: LanceDB's
// runtime otherwise keeps Node alive for seconds after the work is done.
import { createHash } from "node:crypto";
import * as lancedb from "@lancedb/lancedb";
import * as arrow from "apache-arrow";
import { indexConfig } from "./tables.mjs";

const DIM = 8;

function schemaFor(kind) {
  const fields = [
    new arrow.Field("id", new arrow.Int64(), false),
    new arrow.Field("category", new arrow.Utf8(), false),
    new arrow.Field("msg", new arrow.Utf8(), true),
  ];
  if (kind === "vectors") {
    fields.push(
      new arrow.Field(
        "vector",
        new arrow.FixedSizeList(DIM, new arrow.Field("item", new arrow.Float32(), true)),
        false,
      ),
    );
  } else if (kind !== "plain") {
    throw new Error(`unknown table kind ${kind}`);
  }
  return new arrow.Schema(fields);
}

// rows makes ids [from, to): deterministic content, so a test can tell the
// same rows from other rows.
function rows(kind, from, to) {
  if (!Number.isInteger(from) || !Number.isInteger(to) || from >= to) {
    throw new Error(`bad row range [${from}, ${to})`);
  }
  const out = [];
  for (let i = from; i < to; i++) {
    const r = { id: BigInt(i), category: `c${i % 5}`, msg: `row ${i} of ${kind}` };
    if (kind === "vectors") {
      r.vector = Array.from({ length: DIM }, (_, d) => Math.sin(i * (d + 1)));
    }
    out.push(r);
  }
  return out;
}

async function kindOf(table) {
  const schema = await table.schema();
  return schema.fields.some((f) => f.name === "vector") ? "vectors" : "plain";
}


async function idsDigest(t) {
  const ids = (await t.query().select(["id"]).toArray()).map((r) => BigInt(r.id));
  ids.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash("sha256").update(ids.join(",")).digest("hex");
}

async function snapshot(db, name) {
  const t = await db.openTable(name);
  const tags = {};
  for (const [tag, c] of Object.entries(await (await t.tags()).list())) {
    tags[tag] = c.version;
  }
  const branches = {};
  const br = await t.branches();
  for (const b of Object.keys(await br.list()).sort()) {
    const bt = await br.checkout(b);
    branches[b] = { rows: await bt.countRows(), version: await bt.version(), ids_sha256: await idsDigest(bt) };
  }
  const versions = (await t.listVersions()).map((v) => ({
    version: v.version,
    timestamp_ms: v.timestamp.getTime(),
  }));
  const indices = (await t.listIndices())
    .map((i) => ({ name: i.name, type: i.indexType, columns: i.columns }))
    .sort((a, b) => a.name.localeCompare(b.name));
  return {
    rows: await t.countRows(),
    version: await t.version(),
    versions,
    indices,
    tags,
    branches,
    ids_sha256: await idsDigest(t),
  };
}

async function run(db, op) {
  switch (op.op) {
    case "create": {
      const t = await db.createTable(op.name, rows(op.kind, op.from, op.to), {
        schema: schemaFor(op.kind),
        mode: "create",
      });
      return { version: await t.version() };
    }
    case "add": {
      const t = await db.openTable(op.name);
      await t.add(rows(await kindOf(t), op.from, op.to));
      return { version: await t.version() };
    }
    case "delete": {
      const t = await db.openTable(op.name);
      await t.delete(op.where);
      return { version: await t.version() };
    }
    case "index": {
      const t = await db.openTable(op.name);
      await t.createIndex(op.column, { config: indexConfig(op.type) });
      return { version: await t.version() };
    }
    case "tag": {
      const t = await db.openTable(op.name);
      await (await t.tags()).create(op.tag, op.version);
      return {};
    }
    case "branch": {
      const t = await db.openTable(op.name);
      const bt = await (await t.branches()).create(op.branch);
      await bt.add(rows(await kindOf(bt), op.from, op.to));
      return { version: await bt.version() };
    }
    case "overwrite": {
      const t = await db.createTable(op.name, rows(op.kind, op.from, op.to), {
        schema: schemaFor(op.kind),
        mode: "overwrite",
      });
      return { version: await t.version() };
    }
    case "drop":
      await db.dropTable(op.name);
      return {};
    case "names":
      return await db.tableNames({ limit: 100000 });
    case "snapshot":
      return await snapshot(db, op.name);
    case "open":
      try {
        const t = await db.openTable(op.name);
        await t.countRows();
        return { ok: true, error: "" };
      } catch (e) {
        return { ok: false, error: String(e?.message ?? e) };
      }
    default:
      throw new Error(`unknown op ${JSON.stringify(op.op)}`);
  }
}

async function main() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  const req = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  const opts = req.storageOptions ? { storageOptions: req.storageOptions } : {};
  const db = await lancedb.connect(req.uri, opts);
  const results = [];
  for (const [i, op] of req.ops.entries()) {
    try {
      results.push(await run(db, op));
    } catch (e) {
      throw new Error(`op ${i} ${JSON.stringify(op)}: ${e?.stack ?? e}`);
    }
  }
  process.stdout.write(JSON.stringify({ results }, (_, v) => (typeof v === "bigint" ? v.toString() : v)) + "\n");
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`lancedb.mjs: ${e?.stack ?? e}\n`);
    process.exit(1);
  },
);
