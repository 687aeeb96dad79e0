// make_fixtures.mjs — writes the Parquet fixtures of test_parquet with an
// independent writer: arrow-rs's (Rust) Parquet writer, as the npm package
// parquet-wasm 0.7.1 builds it to WebAssembly, fed by apache-arrow 19 (JS).
// The files are committed; this script documents how they were made:
//
//   mkdir /tmp/pqgen && cd /tmp/pqgen && npm install parquet-wasm@0.7.1 apache-arrow@19
//   node tests/parquet/make_fixtures.mjs /tmp/pqgen/node_modules tests/parquet fuzz/corpus/parquet
//
// (the third folder gets the same files with 20 rows: the fuzzer's seeds)
// Every fixture holds the same 1000 rows (seeded; nulls in the nullable
// columns); expected.tsv gives each row as the reader must return it:
// `-` for NULL, `i:` an integer, `r:` a real (shortest round-trip form; the
// test parses it and compares exactly), `t:` text.
import { readFileSync, writeFileSync, mkdirSync, rmSync } from 'fs';
import { join } from 'path';

const [mods, out, seeds] = process.argv.slice(2);
const arrow = await import(join(mods, 'apache-arrow/Arrow.node.mjs'));
const pq = await import(join(mods, 'parquet-wasm/esm/parquet_wasm.js'));
await pq.default({ module_or_path: readFileSync(join(mods, 'parquet-wasm/esm/parquet_wasm_bg.wasm')) });

const N = 1000;
let seed = 12345;
const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
const words = ['Berlin', 'Bern', 'Bergamo', 'Köln', 'Kö', '', 'a,b', 'quote"d', 'Zürich-Nord', 'Z'];

const col = { id: [], b: [], i8: [], i32: [], u32: [], i64: [], f32: [], f64: [], s: [], d: [],
              ts_ms: [], ts_us: [], dec7: [], dec15: [], dec25: [] };
for (let r = 0; r < N; r++) {
  const nul = (k) => (r * 7 + k) % 11 === 0;
  col.id.push(BigInt(r));
  col.b.push(nul(1) ? null : rnd() < 0.5);
  col.i8.push(Math.floor(rnd() * 256) - 128);
  col.i32.push(nul(2) ? null : Math.floor(rnd() * 4294967296) - 2147483648);
  col.u32.push(Math.floor(rnd() * 4294967296));
  col.i64.push(nul(3) ? null : BigInt(Math.floor(rnd() * 2 ** 42) - 2 ** 41) * 1000003n);
  col.f32.push(Math.fround((rnd() - 0.5) * 1e6));
  col.f64.push(nul(4) ? null : (rnd() - 0.5) * 10 ** Math.floor(rnd() * 30 - 15));
  col.s.push(nul(5) ? null : words[Math.floor(rnd() * words.length)] + (rnd() < 0.3 ? String(r % 13) : ''));
  col.d.push(Math.floor(rnd() * 40000) - 10000);                    // days since 1970-01-01
  col.ts_ms.push(nul(6) ? null : BigInt(Math.floor((rnd() - 0.3) * 4e12)) - (r % 3 === 0 ? 0n : 0n));
  col.ts_us.push(BigInt(Math.floor(rnd() * 2e9)) * 1000000n + BigInt(r % 4 === 0 ? 0 : Math.floor(rnd() * 1e6)));
  col.dec7.push(nul(7) ? null : BigInt(Math.floor(rnd() * 1.9e7) - 9.5e6));
  col.dec15.push(BigInt(Math.floor(rnd() * 2 ** 50) - 2 ** 49) * 777n);
  col.dec25.push(nul(8) ? null : (BigInt(Math.floor(rnd() * 2 ** 52)) * 10n ** 9n + BigInt(r)) * (r % 2 ? -1n : 1n));
}

const validity = (vals) => {
  const bm = new Uint8Array(Math.ceil(vals.length / 8));
  vals.forEach((v, i) => { if (v !== null) bm[i >> 3] |= 1 << (i & 7); });
  return bm;
};
const nulls = (vals) => vals.filter((v) => v === null).length;
const typed = (T, vals, to = (v) => v) => T.from(vals.map((v) => (v === null ? to(0) : to(v))));
const data = (type, vals, buf) => arrow.makeData({ type, length: vals.length, nullCount: nulls(vals),
                                                    nullBitmap: validity(vals), data: buf });
const decimal = (vals, scale, precision) => {
  const words32 = new Uint32Array(vals.length * 4);
  vals.forEach((v, i) => {
    let x = BigInt.asUintN(128, v === null ? 0n : v);
    for (let k = 0; k < 4; k++) { words32[i * 4 + k] = Number(x & 0xffffffffn); x >>= 32n; }
  });
  return data(new arrow.Decimal(scale, precision, 128), vals, words32);
};
const columns = (lo, hi) => {
  const c = {};
  for (const k in col) c[k] = col[k].slice(lo, hi);
  return c;
};
const vectors = (col) => ({
  id: data(new arrow.Int64(), col.id, typed(BigInt64Array, col.id)),
  b: data(new arrow.Bool(), col.b, validity(col.b.map((v) => (v ? 1 : null)))),
  i8: data(new arrow.Int8(), col.i8, typed(Int8Array, col.i8)),
  i32: data(new arrow.Int32(), col.i32, typed(Int32Array, col.i32)),
  u32: data(new arrow.Uint32(), col.u32, typed(Uint32Array, col.u32)),
  i64: data(new arrow.Int64(), col.i64, typed(BigInt64Array, col.i64, BigInt)),
  f32: data(new arrow.Float32(), col.f32, typed(Float32Array, col.f32)),
  f64: data(new arrow.Float64(), col.f64, typed(Float64Array, col.f64)),
  s: arrow.vectorFromArray(col.s, new arrow.Utf8()).data[0],
  d: data(new arrow.DateDay(), col.d, typed(Int32Array, col.d)),
  ts_ms: data(new arrow.Timestamp(arrow.TimeUnit.MILLISECOND, 'UTC'), col.ts_ms, typed(BigInt64Array, col.ts_ms, BigInt)),
  ts_us: data(new arrow.Timestamp(arrow.TimeUnit.MICROSECOND), col.ts_us, typed(BigInt64Array, col.ts_us)),
  dec7: decimal(col.dec7, 2, 7),
  dec15: decimal(col.dec15, 3, 15),
  dec25: decimal(col.dec25, 4, 25),
});
const required = ['id', 'i8', 'f32', 'd'];   // written REQUIRED; the rest OPTIONAL
const table = (lo = 0, hi = N) => {
  const d = vectors(columns(lo, hi)), names = Object.keys(d);
  const fields = names.map((c) => new arrow.Field(c, d[c].type, !required.includes(c)));
  const struct = arrow.makeData({ type: new arrow.Struct(fields), length: hi - lo, nullCount: 0,
                                  children: names.map((c) => d[c]) });
  return new arrow.Table([new arrow.RecordBatch(new arrow.Schema(fields), struct)]);
};
const names = Object.keys(col);

// ---- expected values, rendered as the reader must return them ----
const pad = (n, w = 2) => String(n).padStart(w, '0');
const ymd = (days) => { const t = new Date(Number(days) * 86400000);
  return `${pad(t.getUTCFullYear(), 4)}-${pad(t.getUTCMonth() + 1)}-${pad(t.getUTCDate())}`; };
const stamp = (v, perSec) => {                 // v: BigInt units since the epoch
  const per = BigInt(perSec), digits = String(perSec).length - 1;
  let sec = v / per, frac = v % per;
  if (frac < 0n) { frac += per; sec -= 1n; }
  const days = sec >= 0n ? sec / 86400n : -((-sec + 86399n) / 86400n);
  const tod = Number(sec - days * 86400n);
  let s = `${ymd(days)} ${pad(Math.floor(tod / 3600))}:${pad(Math.floor(tod / 60) % 60)}:${pad(tod % 60)}`;
  if (frac !== 0n) s += '.' + String(frac).padStart(digits, '0');
  return s;
};
const real = (x) => 'r:' + (Object.is(x, -0) ? '-0' : String(x));
const dec = (v, scale) => real(Number(v) / 10 ** scale);
const render = {
  id: (v) => 'i:' + v, b: (v) => 'i:' + (v ? 1 : 0), i8: (v) => 'i:' + v, i32: (v) => 'i:' + v,
  u32: (v) => 'i:' + v, i64: (v) => 'i:' + v, f32: real, f64: real, s: (v) => 't:' + v,
  d: (v) => 't:' + ymd(v), ts_ms: (v) => 't:' + stamp(v, 1000), ts_us: (v) => 't:' + stamp(v, 1000000),
  dec7: (v) => dec(v, 2), dec15: (v) => dec(v, 3), dec25: (v) => dec(v, 4),
};
let tsv = names.join('\t') + '\n';
for (let r = 0; r < N; r++)
  tsv += names.map((c) => (col[c][r] === null ? '-' : render[c](col[c][r]))).join('\t') + '\n';
writeFileSync(join(out, 'expected.tsv'), tsv);

// ---- the fixtures ----
const write = (file, props) => {   // props: a function making the writer's properties
  const w = pq.Table.fromIPCStream(arrow.tableToIPC(table(), 'stream'));
  writeFileSync(join(out, file), pq.writeParquet(w, props().build()));
  if (seeds) {
    const small = pq.Table.fromIPCStream(arrow.tableToIPC(table(0, 20), 'stream'));
    writeFileSync(join(seeds, file), pq.writeParquet(small, props().build()));
  }
};
const P = () => new pq.WriterPropertiesBuilder().setCreatedBy('parquet-wasm 0.7.1 (arrow-rs), tests/parquet/make_fixtures.mjs');
const E = pq.Encoding, C = pq.Compression, V = pq.WriterVersion;
const ints = ['id', 'i8', 'i32', 'u32', 'i64', 'd', 'ts_ms', 'ts_us', 'dec7', 'dec15'];
const perColumn = (p, cols, enc) => { for (const c of cols) p = p.setColumnEncoding(c, enc); return p; };

write('plain_v1_uncompressed.parquet', () =>
      P().setDictionaryEnabled(false).setEncoding(E.PLAIN).setWriterVersion(V.V1).setCompression(C.UNCOMPRESSED));
write('dict_v1_snappy.parquet', () =>
      P().setWriterVersion(V.V1).setCompression(C.SNAPPY).setMaxRowGroupSize(400));
write('dict_v2_gzip.parquet', () =>
      P().setWriterVersion(V.V2).setCompression(C.GZIP).setDataPageSizeLimit(1024).setWriteBatchSize(64));
write('delta_v2_zstd.parquet', () =>
      perColumn(perColumn(perColumn(P().setDictionaryEnabled(false).setWriterVersion(V.V2).setCompression(C.ZSTD),
        ints, E.DELTA_BINARY_PACKED), ['s'], E.DELTA_LENGTH_BYTE_ARRAY), ['f32', 'f64'], E.BYTE_STREAM_SPLIT)
        .setColumnEncoding('b', E.RLE));
write('plain_v2_lz4hadoop.parquet', () =>
      P().setDictionaryEnabled(false).setWriterVersion(V.V2).setCompression(C.LZ4).setDataPageSizeLimit(4096));
write('deltaba_v1_lz4raw.parquet', () =>
      perColumn(perColumn(P().setDictionaryEnabled(false).setWriterVersion(V.V1).setCompression(C.LZ4_RAW)
        .setDataPageSizeLimit(512).setWriteBatchSize(32).setMaxRowGroupSize(300),
        ints, E.DELTA_BINARY_PACKED), ['s', 'dec25'], E.DELTA_BYTE_ARRAY));

// Spark's output layout: part files, a _SUCCESS marker, hidden .crc files.
const dir = join(out, 'spark_out');
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir);
const cuts = [0, 332, 333, 1000];   // the second part holds one row
for (let k = 0; k + 1 < cuts.length; k++) {
  const name = `part-0000${k}-7d0b2e1c-3f4a-4b5c-9d8e-${k}a2b3c4d5e6f-c000.snappy.parquet`;
  const w = pq.Table.fromIPCStream(arrow.tableToIPC(table(cuts[k], cuts[k + 1]), 'stream'));
  writeFileSync(join(dir, name), pq.writeParquet(w, P().setCompression(C.SNAPPY).build()));
  writeFileSync(join(dir, `.${name}.crc`), 'crc');
}
writeFileSync(join(dir, '_SUCCESS'), '');

// A column a flat reader must refuse: a list of integers.
const lists = arrow.vectorFromArray([[1, 2], [], null, [3]], new arrow.List(new arrow.Field('item', new arrow.Int32(), true)));
const nested = new arrow.Table({ id: arrow.vectorFromArray([1, 2, 3, 4], new arrow.Int32()), tags: lists });
writeFileSync(join(out, 'nested_list.parquet'),
              pq.writeParquet(pq.Table.fromIPCStream(arrow.tableToIPC(nested, 'stream')), P().build()));
// INT96 (Spark's legacy timestamps: nanoseconds of the day, then the Julian
// day, little-endian).  arrow-rs writes no INT96, so the values are written
// as FIXED_LEN_BYTE_ARRAY(12) and the footer's two type fields of that
// column (schema element and column metadata) are changed from 7 to 3:
// the pages are the writer's own bytes.
{
  const M = 300, raw = new Uint8Array(M * 12), ids = Int32Array.from({ length: M }, (_, i) => i);
  let lines = 'id\tt96\n';
  const nul = (r) => r % 13 === 5;
  for (let r = 0; r < M; r++) {
    const days = Math.floor(rnd() * 50000) - 20000;
    const nanos = r % 5 === 0 ? BigInt(Math.floor(rnd() * 86400)) * 1000000000n
                              : BigInt(Math.floor(rnd() * 86400e6)) * 1000n + BigInt(r);
    const dv = new DataView(raw.buffer, r * 12, 12);
    dv.setBigInt64(0, nanos, true);
    dv.setInt32(8, 2440588 + days, true);
    lines += `i:${r}\t` + (nul(r) ? '-' : 't:' + stamp(BigInt(days) * 86400n * 1000000000n + nanos, 1000000000)) + '\n';
  }
  const valid = Array.from({ length: M }, (_, r) => (nul(r) ? null : 1));
  const t96 = arrow.makeData({ type: new arrow.FixedSizeBinary(12), length: M, nullCount: valid.filter((v) => v === null).length,
                               nullBitmap: validity(valid), data: raw });
  const fields = [new arrow.Field('id', new arrow.Int32(), false), new arrow.Field('t96', new arrow.FixedSizeBinary(12), true)];
  const struct = arrow.makeData({ type: new arrow.Struct(fields), length: M, nullCount: 0,
                                  children: [arrow.makeData({ type: new arrow.Int32(), length: M, data: ids }), t96] });
  const t = new arrow.Table([new arrow.RecordBatch(new arrow.Schema(fields), struct)]);
  const bytes = pq.writeParquet(pq.Table.fromIPCStream(arrow.tableToIPC(t, 'stream')),
                                P().setDictionaryEnabled(false).setCompression(C.SNAPPY).build());
  const flen = new DataView(bytes.buffer, bytes.byteOffset + bytes.length - 8, 4).getUint32(0, true);
  const start = bytes.length - 8 - flen;
  let patched = 0;
  for (let i = start; i + 3 < bytes.length - 8; i++) {
    // SchemaElement: type (field 1, i32 7 -> zigzag 14) then type_length 12;
    // ColumnMetaData: type then the encodings list (field 2, a list)
    const el = bytes[i] === 0x15 && bytes[i + 1] === 0x0e && bytes[i + 2] === 0x15 && bytes[i + 3] === 0x18;
    const cm = bytes[i] === 0x15 && bytes[i + 1] === 0x0e && bytes[i + 2] === 0x19;
    if (el || cm) { bytes[i + 1] = 0x06; patched++; }
  }
  if (patched !== 2) throw new Error(`INT96 patch: ${patched} type fields found, not 2`);
  writeFileSync(join(out, 'int96.parquet'), bytes);
  writeFileSync(join(out, 'expected_int96.tsv'), lines);
}
console.log('fixtures written to', out);
