// Reads one audit-ledger Parquet file with hyparquet, a Parquet reader that
// shares no code with reaper's writer, and prints {columns, metadata, rows}
// as JSON: the interop suite checks it against docs/FORMAT.md.
//
//   node js/ledger.mjs <file.parquet>
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'

const file = await asyncBufferFromFile(process.argv[2])
const meta = await parquetMetadataAsync(file)
const rows = await parquetReadObjects({ file, compressors, rowFormat: 'object' })
const metadata = Object.fromEntries((meta.key_value_metadata ?? []).map((kv) => [kv.key, kv.value]))
const columns = meta.schema.slice(1).map((s) => s.name)
const json = JSON.stringify({ columns, metadata, rows }, (_, v) => {
  if (typeof v === 'bigint') return Number(v)
  return v
})
process.stdout.write(json + '\n')
