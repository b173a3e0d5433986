// LanceDB writer of the retention chaos test (test/chaos/retention_chaos_test.go):
// the real client writes tables while `reaper retain` deletes their old
// versions, and records, for every version it makes, the rows that version
// reads, so that the Go test can check after every round that each version
// LanceDB still lists reads exactly those rows.
//
// It is a server: one JSON request per line on stdin, one JSON answer per
// line on stdout, until stdin closes. Every table of a request is worked on
// concurrently; each table's own operations run one after another.
//
// Requests ({"cmd", "uri", "storageOptions", "tables": [...]}):
//   create  [{name, kind, rows}]      createTable with ids [0, rows)
//   write   [{name, kind, ops}]       applies ops (below) in order
//     Answer of both: {"tables": [{"name", "versions": [<record>...],
//     "ops": [{"op", "error", "skipped"}]}]}: a record for every version
//     the table's writes made, {"version", "rows", "digest", "start_ms",
//     "end_ms"} (the version was committed between start_ms and end_ms, by
//     this host's clock). An operation that throws does not stop the
//     others: its message is in "error" (the Go test decides what it may
//     be).
//   verify  [{name}]                  every version LanceDB lists: checkout,
//     then the rows it reads. Answer: {"tables": [{"name", "versions":
//     [{"version", "timestamp_ms", "rows", "digest", "error"}]}]}.
//   cleanup [{name, cutoff_ms}]       optimize({cleanupOlderThan: new
//     Date(cutoff_ms), deleteUnverified: false}): Lance's own cleanup.
//     Answer: {"tables": [{"name", "versions_before", "versions_after",
//     "error"}]}.
//   drop    [{name}]                  LanceDB's own dropTable (it deletes the
//     table's directory, and on s3+ddb its commit rows), and forgets what this
//     writer recorded of it: a create of the same name makes a new table.
//     Answer: {"tables": [{"name", "versions": [], "ops": []}]}.
//
// Operations of a write (op.op):
//   add {from, to}            append rows with ids [from, to)
//   delete {where}            deletion files
//   update {where, value}     category = value where ...
//   merge {from, to}          merge-insert on id
//   compact {}                compaction and index optimization:
//                             optimize({cleanupOlderThan: new Date(0)}). The
//                             node client has no compaction without its
//                             cleanup step; a cutoff at 1970 makes that step
//                             remove no version, and deletes no unverified
//                             file (none is 7 days old in the test). It still
//                             lists and reads every manifest, so it can race
//                             reaper's deletes (its error is reported).
//   index {column, type}      btree or bitmap, replace: true
//   restore {back, max_age_ms} checkout a version this writer made whose
//                             commit started at most max_age_ms ago (the
//                             <back>-th newest such one, never the current
//                             one), then restore(); skipped when none is
//                             young enough. Only versions younger than
//                             reaper's cutoff may be restored: restoring an
//                             older one races any cleanup by design.
import { createHash } from "node:crypto";
import { command, serve } from "./serve.mjs";
import { indexConfig, rows, schemaFor } from "./tables.mjs";





// digest identifies the rows a version reads: every (id, category) pair,
// sorted.
async function digest(t) {
  const rs = (await t.query().select(["id", "category"]).toArray()).map((r) => `${r.id}:${r.category}`);
  rs.sort();
  return { rows: rs.length, digest: createHash("sha256").update(rs.join(",")).digest("hex").slice(0, 16) };
}

// state is what the writer knows of one table: its handle and the records
// of the versions it made.
class TableState {
  constructor(name, kind) {
    this.name = name;
    this.kind = kind;
    this.t = null;
    this.records = [];
  }

  // record reads the rows of every version in (from, latest] and records
  // them with the op's start and end.
  async record(from, start, end, out) {
    const latest = await this.t.version();
    for (let v = from + 1; v <= latest; v++) {
      try {
        if (v < latest) await this.t.checkout(v);
        else await this.t.checkoutLatest();
      } catch (e) {
        // An op slower than reaper's cutoff (a compaction on a loaded
        // machine) made versions that are old by the time they are read:
        // a pass may have removed one that is not the newest. Gone, it
        // is not listed, so there is nothing of it to check later.
        if (v < latest && /not found/i.test(String(e?.message ?? e))) continue;
        throw e;
      }
      const r = { version: v, ...(await digest(this.t)), start_ms: start, end_ms: end };
      this.records.push(r);
      out.push(r);
    }
    await this.t.checkoutLatest();
  }
}

const states = new Map();

async function apply(st, op) {
  const t = st.t;
  switch (op.op) {
    case "add":
      return t.add(rows(st.kind, op.from, op.to));
    case "delete":
      return t.delete(op.where);
    case "update":
      return t.update({ where: op.where, values: { category: op.value } });
    case "merge":
      return t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(rows(st.kind, op.from, op.to));
    case "compact":
      return t.optimize({ cleanupOlderThan: new Date(0) });
    case "index":
      return t.createIndex(op.column, { config: indexConfig(op.type), replace: true });
    case "restore": {
      const current = await t.version();
      const young = st.records.filter((r) => r.version < current && r.start_ms >= Date.now() - op.max_age_ms);
      if (young.length === 0) return "skipped";
      const pick = young[Math.max(0, young.length - op.back)];
      await t.checkout(pick.version);
      if (Date.now() - pick.start_ms > op.max_age_ms) {
        // The checkout was slow (a loaded machine): the source is no
        // longer young enough to restore safely beside retention.
        await t.checkoutLatest();
        return "skipped";
      }
      await t.restore();
      return undefined;
    }
    default:
      throw new Error(`unknown op ${JSON.stringify(op.op)}`);
  }
}

async function create(db, spec) {
  const st = new TableState(spec.name, spec.kind);
  states.set(spec.name, st);
  const start = Date.now();
  st.t = await db.createTable(spec.name, rows(spec.kind, 0, spec.rows), { schema: schemaFor(spec.kind), mode: "create" });
  const versions = [];
  await st.record(0, start, Date.now(), versions);
  return { name: spec.name, versions, ops: [] };
}

async function write(db, spec) {
  const st = states.get(spec.name);
  if (!st) throw new Error(`table ${spec.name} was not created by this writer`);
  const versions = [];
  const ops = [];
  for (const op of spec.ops) {
    const before = await st.t.version();
    const start = Date.now();
    let error = "";
    let skipped = false;
    try {
      skipped = (await apply(st, op)) === "skipped";
    } catch (e) {
      error = String(e?.message ?? e);
      await st.t.checkoutLatest().catch(() => {});
    }
    ops.push({ op: op.op, error, skipped });
    await st.record(before, start, Date.now(), versions);
  }
  return { name: spec.name, versions, ops };
}

async function verify(db, spec) {
  const t = await db.openTable(spec.name);
  const out = [];
  for (const v of await t.listVersions()) {
    const r = { version: v.version, timestamp_ms: v.timestamp.getTime(), rows: -1, digest: "", error: "" };
    try {
      await t.checkout(v.version);
      Object.assign(r, await digest(t));
    } catch (e) {
      r.error = String(e?.message ?? e);
    }
    out.push(r);
  }
  return { name: spec.name, versions: out };
}

async function cleanup(db, spec) {
  const t = await db.openTable(spec.name);
  const before = (await t.listVersions()).length;
  let error = "";
  try {
    await t.optimize({ cleanupOlderThan: new Date(spec.cutoff_ms), deleteUnverified: false });
  } catch (e) {
    error = String(e?.message ?? e);
  }
  const after = (await (await db.openTable(spec.name)).listVersions()).length;
  return { name: spec.name, versions_before: before, versions_after: after, error };
}

async function drop(db, spec) {
  await db.dropTable(spec.name);
  states.delete(spec.name);
  return { name: spec.name, versions: [], ops: [] };
}

const commands = { create, write, verify, cleanup, drop };
serve("retention_writer.mjs", command(commands, async (fn, db, req) => ({ tables: await Promise.all(req.tables.map((spec) => fn(db, spec))) })));
