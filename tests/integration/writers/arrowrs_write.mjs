// Writes the logical table with arrow-rs (the Rust `parquet` crate), compiled to WebAssembly
// in the npm package parquet-wasm.
//   node arrowrs_write.mjs SPEC.json
// SPEC as in pyarrow_write.py; "options": compression (Compression enum name), writerVersion
// (V1|V2), dictionary (bool), dataPageSize, dictionaryPageSizeLimit, maxRowGroupSize,
// writeBatchSize, statistics (None|Chunk|Page: Page also writes the page index), columnEncoding
// {column path: Encoding enum name}. Sources are Arrow IPC streams.
import * as pw from 'parquet-wasm';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const o = spec.options;

function props() {
  let b = new pw.WriterPropertiesBuilder();
  if (o.compression) b = b.setCompression(pw.Compression[o.compression]);
  if (o.writerVersion) b = b.setWriterVersion(pw.WriterVersion[o.writerVersion]);
  if (o.dictionary !== undefined) b = b.setDictionaryEnabled(o.dictionary);
  if (o.dataPageSize) b = b.setDataPageSizeLimit(o.dataPageSize);
  if (o.dictionaryPageSizeLimit) b = b.setDictionaryPageSizeLimit(o.dictionaryPageSizeLimit);
  if (o.maxRowGroupSize) b = b.setMaxRowGroupSize(o.maxRowGroupSize);
  if (o.writeBatchSize) b = b.setWriteBatchSize(o.writeBatchSize);
  if (o.statistics) b = b.setStatisticsEnabled(pw.EnabledStatistics[o.statistics]);
  for (const [col, enc] of Object.entries(o.columnEncoding || {})) {
    b = b.setColumnDictionaryEnabled(col, false).setColumnEncoding(col, pw.Encoding[enc]);
  }
  return b.build();
}

for (const [i, src] of spec.sources.entries()) {
  const table = pw.Table.fromIPCStream(new Uint8Array(readFileSync(src.arrows)));
  const out = pw.writeParquet(table, props());
  writeFileSync(join(spec.out_dir, `part-${String(i).padStart(3, '0')}.parquet`), out);
}
