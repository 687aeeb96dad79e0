// csv_to_parquet.mjs — the Rossmann tables of test_parquet's identity test,
// written as Parquet by an independent writer (arrow-rs via parquet-wasm
// 0.7.1), the way Spark writes CSVs it read without inferSchema: every
// column a nullable STRING, an empty field NULL.  The CSVs come from
//
//   rossmann-gen --out /tmp/rg --stores 4 --days 400 --seed 5 --quiet
//   node tests/parquet/csv_to_parquet.mjs /tmp/pqgen/node_modules /tmp/rg tests/parquet/rossmann
//
// (modules as in make_fixtures.mjs).  train becomes a Spark output folder
// (two part files, _SUCCESS), weather one ZSTD file of several row groups,
// the rest one SNAPPY file each.
import { readFileSync, writeFileSync, mkdirSync, rmSync, readdirSync } from 'fs';
import { join } from 'path';

const [mods, src, out] = process.argv.slice(2);
const arrow = await import(join(mods, 'apache-arrow/Arrow.node.mjs'));
const pq = await import(join(mods, 'parquet-wasm/esm/parquet_wasm.js'));
await pq.default({ module_or_path: readFileSync(join(mods, 'parquet-wasm/esm/parquet_wasm_bg.wasm')) });

// RFC 4180: quoted fields may hold commas, quotes ("") and newlines.
function parseCsv(text) {
  const rows = [];
  let row = [], field = '', quoted = false, i = 0;
  while (i < text.length) {
    const c = text[i++];
    if (quoted) {
      if (c === '"' && text[i] === '"') { field += '"'; i++; }
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(field); field = ''; }
    else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i] === '\n') i++;
      row.push(field); rows.push(row); row = []; field = '';
    } else field += c;
  }
  if (field !== '' || row.length) { row.push(field); rows.push(row); }
  return rows;
}

const toTable = (header, rows) => {
  const cols = {};
  header.forEach((h, k) => { cols[h] = arrow.vectorFromArray(rows.map((r) => (r[k] === '' ? null : r[k])), new arrow.Utf8()); });
  return new arrow.Table(cols);
};
const write = (path, header, rows, props) => {
  const t = pq.Table.fromIPCStream(arrow.tableToIPC(toTable(header, rows), 'stream'));
  writeFileSync(path, pq.writeParquet(t, props.build()));
};
const P = () => new pq.WriterPropertiesBuilder().setCreatedBy('parquet-wasm 0.7.1 (arrow-rs), tests/parquet/csv_to_parquet.mjs');

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
for (const f of readdirSync(src).filter((f) => f.endsWith('.csv')).sort()) {
  const [header, ...all] = parseCsv(readFileSync(join(src, f), 'utf8'));
  const rows = all.filter((r) => r.length > 1 || r[0] !== '');   // blank lines are no rows
  const name = f.slice(0, -4);
  if (name === 'train') {
    const dir = join(out, 'train');
    mkdirSync(dir);
    const half = Math.floor(rows.length / 2);
    write(join(dir, 'part-00000-5e1f-c000.snappy.parquet'), header, rows.slice(0, half), P().setCompression(pq.Compression.SNAPPY));
    write(join(dir, 'part-00001-5e1f-c000.snappy.parquet'), header, rows.slice(half), P().setCompression(pq.Compression.SNAPPY));
    writeFileSync(join(dir, '_SUCCESS'), '');
  } else if (name === 'weather') {
    write(join(out, 'weather.parquet'), header, rows, P().setCompression(pq.Compression.ZSTD).setMaxRowGroupSize(4000));
  } else {
    write(join(out, name + '.parquet'), header, rows, P().setCompression(pq.Compression.SNAPPY));
  }
  console.log(name, rows.length, 'rows');
}
