// The tables the retention scripts write (retention.mjs for the oracle,
// retention_writer.mjs for the chaos suite): one schema, one row generator
// and the index types they build, so both write the same kinds of table.
import * as lancedb from "@lancedb/lancedb";
import * as arrow from "apache-arrow";

// DIM is the vector width of a "vectors" table.
export const DIM = 8;

// schemaFor is the schema of a table of kind "plain" or "vectors".
export function schemaFor(kind) {
  const fields = [
    new arrow.Field("id", new arrow.Int64(), false),
    new arrow.Field("category", new arrow.Utf8(), false),
  ];
  if (kind === "vectors") {
    fields.push(
      new arrow.Field("vector", new arrow.FixedSizeList(DIM, new arrow.Field("item", new arrow.Float32(), true)), false),
    );
  }
  return new arrow.Schema(fields);
}

// rows are the rows with ids in [from, to): deterministic, so a reader can
// check what it reads. from defaults to 0: a request's JSON leaves a zero
// out (Go's omitempty), and rows from undefined would be none.
export function rows(kind, from = 0, to) {
  const out = [];
  for (let i = from; i < to; i++) {
    const r = { id: BigInt(i), category: `c${i % 5}` };
    if (kind === "vectors") r.vector = Array.from({ length: DIM }, (_, d) => Math.sin(i * (d + 1)));
    out.push(r);
  }
  return out;
}

// indexConfig is the LanceDB index of a type name.
export function indexConfig(type) {
  switch (type) {
    case "btree":
      return lancedb.Index.btree();
    case "bitmap":
      return lancedb.Index.bitmap();
    case "fts":
      return lancedb.Index.fts();
    case "ivf_flat":
      return lancedb.Index.ivfFlat({ numPartitions: 2 });
    default:
      throw new Error(`unknown index type ${type}`);
  }
}
