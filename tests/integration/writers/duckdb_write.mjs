// Writes the logical table with DuckDB's Parquet writer (C++), through @duckdb/node-api.
//   node duckdb_write.mjs SPEC.json
// SPEC as in pyarrow_write.py; "options" are COPY ... TO (FORMAT parquet, KEY value, ...)
// options. DuckDB reads each source's pyarrow-written plain copy ("parquet") and rewrites it;
// one thread and insertion order kept, so the rows stay in source order.
import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const inst = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await inst.connect();
await con.run('SET preserve_insertion_order = true');
const q = (s) => "'" + String(s).replaceAll("'", "''") + "'";
const opts = Object.entries(spec.options).map(([k, v]) =>
  `, ${k} ${typeof v === 'string' ? q(v) : (typeof v === 'boolean' ? (v ? 'true' : 'false') : v)}`).join('');
const cols = spec.columns.map((c) => '"' + c + '"').join(', ');
for (const [i, src] of spec.sources.entries()) {
  const out = join(spec.out_dir, `part-${String(i).padStart(3, '0')}.parquet`);
  await con.run(`COPY (SELECT ${cols} FROM read_parquet(${q(src.parquet)})) TO ${q(out)} (FORMAT parquet${opts})`);
}
