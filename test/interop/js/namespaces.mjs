// LanceDB driver of the namespace tests (namespace_test.go): a root with
// nested namespaces and tables in them, as a multi-tenant application keeps
// it, what LanceDB lists of it, and a writer committing to the catalog
// (creating and dropping tables) while reaper runs.
//
// A server of JSON lines (serve.mjs): {"cmd", "uri", "storageOptions", ...}.
//   setup    {"tables": [{"namespace", "name", "versions"}], "drops": [{"namespace", "name"}]}
//            creates each table (its namespaces first) with rows [0, 10)
//            and writes it "versions" versions in all, GAP_MS apart
//            (appends, a delete, an update), then drops the tables of
//            "drops" (dropTable with their namespace). Answer: {}.
//   list     every namespace (listNamespaces, recursively from the root)
//            and the object id of every table LanceDB lists in each
//            (tableNames(path)). Answer: {"namespaces": ["tenant_a",
//            "tenant_a$sub"...], "tables": ["top", "tenant_a$inner"...]}.
//   verify   {"tables": [{"namespace", "name"}]} opens every version
//            LanceDB lists and reads its rows. Answer: {"tables":
//            [{"id", "versions": [{"version", "rows", "error"}]}]}.
//   churn    {"namespace", "count"} creates and drops tables churn_<i> in
//            the namespace, one after another, and keeps the last one.
//            Answer: {"created", "kept"}.
import { createIn, namespacesOf, openIn } from "./ns.mjs";
import { command, serve } from "./serve.mjs";
import { rows } from "./tables.mjs";

const GAP_MS = 50;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const id = (path, name) => [...(path ?? []), name].join("$");

async function setup(db, req) {
  for (const spec of req.tables) {
    const t = await createIn(db, spec.name, rows("plain", 0, 10), spec.namespace);
    for (let v = 2; v <= spec.versions; v++) {
      await sleep(GAP_MS);
      switch (v % 3) {
        case 0:
          await t.delete(`id = ${v}`);
          break;
        case 1:
          await t.update({ where: `id = ${v + 1}`, values: { category: `v${v}` } });
          break;
        default:
          await t.add(rows("plain", v * 10, v * 10 + 10));
      }
    }
  }
  for (const spec of req.drops ?? []) await db.dropTable(spec.name, spec.namespace);
  return {};
}

async function list(db) {
  const namespaces = [];
  const tables = [...(await db.tableNames())];
  const walk = async (path) => {
    for (const child of namespacesOf(await db.listNamespaces(path)).sort()) {
      const p = [...path, child];
      namespaces.push(p.join("$"));
      for (const name of await db.tableNames(p)) tables.push(id(p, name));
      await walk(p);
    }
  };
  await walk([]);
  return { namespaces, tables: tables.sort() };
}

async function verify(db, req) {
  const out = [];
  for (const spec of req.tables) {
    const t = await openIn(db, spec.name, spec.namespace);
    const versions = [];
    for (const v of await t.listVersions()) {
      try {
        await t.checkout(v.version);
        // Read the rows, not countRows: that one answers from the manifest.
        versions.push({ version: v.version, rows: (await t.query().toArray()).length, error: "" });
      } catch (e) {
        versions.push({ version: v.version, rows: -1, error: String(e?.message ?? e) });
      }
    }
    out.push({ id: id(spec.namespace, spec.name), versions });
  }
  return { tables: out };
}

async function churn(db, req) {
  let created = 0;
  for (let i = 0; i < req.count; i++) {
    const t = await createIn(db, `churn_${i}`, rows("plain", 0, 10), req.namespace);
    await t.add(rows("plain", 10, 20));
    created++;
    if (i < req.count - 1) await db.dropTable(`churn_${i}`, req.namespace);
  }
  return { created, kept: id(req.namespace, `churn_${req.count - 1}`) };
}

serve("namespaces.mjs", command({ setup, list, verify, churn }, (fn, db, req) => fn(db, req)));
