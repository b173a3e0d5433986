// LanceDB driver of the shallow-clone test (clone_test.go): a source table,
// a shallow clone of an old version of it (cloneTable's default), then more
// versions and a compaction of the source, so that the files the clone
// reads are referenced by no version of the source that a cleanup keeps.
//
// A server of JSON lines, as retention.mjs: {"cmd", "uri", "storageOptions",
// "source"}; source is the source table's URI (<uri>/src.lance).
//   setup   writes "src" (versions 1-3), clones its version 2 as "copy",
//           then writes versions 4-6 of "src" and compacts it (no cleanup).
//           Answer: {"src_versions", "copy_versions"}.
//   verify  opens every version of "src" and "copy" and counts its rows.
//           Answer: {"tables": {"src": [{"version", "rows", "error"}], "copy": [...]}}.
import { command, serve } from "./serve.mjs";

const rows = (from, to) => Array.from({ length: to - from }, (_, i) => ({ id: from + i, name: `row ${from + i}` }));

const commands = {
  async setup(db, req) {
    const src = await db.createTable("src", rows(0, 100));
    await src.add(rows(100, 200));
    await src.add(rows(200, 300));
    const copy = await db.cloneTable("copy", req.source, { sourceVersion: 2 });
    await src.delete("id < 50");
    await src.add(rows(300, 400));
    await src.optimize({ cleanupOlderThan: new Date(0) });
    return { src_versions: (await src.listVersions()).length, copy_versions: (await copy.listVersions()).length };
  },
  async verify(db) {
    const out = {};
    for (const name of ["src", "copy"]) {
      const t = await db.openTable(name);
      out[name] = [];
      for (const v of await t.listVersions()) {
        try {
          await t.checkout(v.version);
          // Read the rows, not countRows: that one answers from the manifest.
          out[name].push({ version: v.version, rows: (await t.query().toArray()).length, error: "" });
        } catch (e) {
          out[name].push({ version: v.version, rows: -1, error: String(e?.message ?? e) });
        }
      }
    }
    return { tables: out };
  },
};

serve("clone.mjs", command(commands, (fn, db, req) => fn(db, req)));
