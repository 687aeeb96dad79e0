#!/usr/bin/env node
// tools/s3rver/server.js — the tests' S3 server (scripts/s3-server.sh): s3rver
// (npm, version in package.json) with three things a real S3 does and s3rver
// does not, in front of its own handlers:
//   - every request's Signature Version 4 verified (s3rver's own check is
//     unimplemented for V4): SignatureDoesNotMatch, RequestTimeTooSkewed;
//   - session tokens: S3_TEST_TOKEN is the valid one, S3_TEST_EXPIRED_TOKEN
//     answers ExpiredToken, any other InvalidToken;
//   - AbortMultipartUpload (DELETE ?uploadId=), which removes the parts;
//   - a PUT stored whole or not at all: s3rver streams a body straight into the
//     object's file, so a client killed mid-upload left a truncated object (a
//     checkpoint a resumed job then found damaged) and a GET meanwhile read a
//     partial one; here the body goes to a file beside the object, is checked
//     against Content-Length (IncompleteBody otherwise, nothing stored) and
//     is renamed into place;
// and it logs one line per request ("REQ METHOD PATH") for the tests to count.
// The payload's hash is taken from x-amz-content-sha256 as sent, not checked
// against the body (AWS checks it).  Arguments: DIR [--address A]
// [--key K --cert C].
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const S3rver = require('s3rver');
const S3Error = require('s3rver/lib/models/error');

const args = process.argv.slice(2);
const dir = args[0];
const opt = (name) => { const i = args.indexOf(name); return i > 0 ? args[i + 1] : undefined; };
const keys = { S3RVER: 'S3RVER' };

function error(ctx, status, code, message) {
  ctx.status = status;
  ctx.type = 'application/xml';
  ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code>` +
    `<Message>${message}</Message><Resource>${ctx.path}</Resource></Error>`;
}

const hmac = (k, s) => crypto.createHmac('sha256', k).update(s).digest();
const sha256 = (s) => crypto.createHash('sha256').update(s).digest('hex');
// RFC 3986's unreserved characters stay, every other byte is %XX (upper case)
const enc = (s) => encodeURIComponent(s).replace(/[!'()*]/g,
  (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());

function verify(ctx) {
  const auth = ctx.get('authorization');
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) return ['AccessDenied', 403, 'Signature Version 4 only (an Authorization header)'];
  const [, id, day, region, service, signed, signature] = m;
  if (!(id in keys)) return ['InvalidAccessKeyId', 403, 'The AWS Access Key Id you provided does not exist in our records.'];
  const amzDate = ctx.get('x-amz-date');
  const t = Date.parse(amzDate.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z'));
  if (!(Math.abs(Date.now() - t) < 15 * 60 * 1000) || amzDate.slice(0, 8) !== day)
    return ['RequestTimeTooSkewed', 403, 'The difference between the request time and the current time is too large.'];
  const raw = ctx.req.url;
  const q = raw.indexOf('?');
  const uriPath = q < 0 ? raw : raw.slice(0, q);
  const query = q < 0 ? '' : raw.slice(q + 1);
  const pairs = query ? query.split('&').map((kv) => {
    const e = kv.indexOf('=');
    const k = decodeURIComponent(e < 0 ? kv : kv.slice(0, e));
    const v = decodeURIComponent(e < 0 ? '' : kv.slice(e + 1));
    return [enc(k), enc(v)];
  }) : [];
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  const names = signed.split(';');
  if (!names.includes('host') || !names.includes('x-amz-date'))
    return ['AccessDenied', 403, 'host and x-amz-date must be signed'];
  const headers = names.map((h) => `${h}:${String(ctx.get(h)).trim().replace(/\s+/g, ' ')}\n`).join('');
  const payload = ctx.get('x-amz-content-sha256');
  if (!payload) return ['InvalidRequest', 400, 'Missing required header for this request: x-amz-content-sha256'];
  const canonical = [ctx.method, uriPath, pairs.map(([k, v]) => `${k}=${v}`).join('&'),
    headers, signed, payload].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  let k = hmac('AWS4' + keys[id], day);
  for (const part of [region, service, 'aws4_request']) k = hmac(k, part);
  if (hmac(k, toSign).toString('hex') !== signature)
    return ['SignatureDoesNotMatch', 403, 'The request signature we calculated does not match the signature you provided. Check your key and signing method.'];
  const token = ctx.get('x-amz-security-token');
  if (token && token === process.env.S3_TEST_EXPIRED_TOKEN)
    return ['ExpiredToken', 400, 'The provided token has expired.'];
  if (token && token !== process.env.S3_TEST_TOKEN)
    return ['InvalidToken', 400, 'The provided token is malformed or otherwise invalid.'];
  return null;
}

// A PUT's body (a request, the parts of a multipart upload put together, or a
// Buffer) streamed into a file beside `file` and renamed into place once
// whole: every byte of the request's Content-Length came.  When the client
// went away first: an IncompleteBody error, and nothing stored.  Resolves
// { size, md5 }.
function storeWhole(file, content) {
  return new Promise((resolve, reject) => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${crypto.randomBytes(8).toString('hex')}.tmp`;
    const out = fs.createWriteStream(tmp);
    const md5 = crypto.createHash('md5');
    // a request's Content-Length (NaN for the parts put together)
    const want = Number(content.headers && content.headers['content-length']);
    let n = 0;
    let ended = false;
    let done = false;
    const fail = (e) => {
      if (done) return;
      done = true;
      out.destroy();
      fs.rm(tmp, { force: true }, () => reject(e));
    };
    const incomplete = () => fail(new S3Error('IncompleteBody',
      'You did not provide the number of bytes specified by the Content-Length HTTP header.'));
    out.on('error', fail);
    out.on('finish', () => {
      if (done) return;
      fs.rename(tmp, file, (e) => {
        if (e) return fail(e);
        done = true;
        return resolve({ size: n, md5: md5.digest('hex') });
      });
    });
    if (Buffer.isBuffer(content)) {
      md5.update(content);
      n = content.length;
      out.end(content);
      return;
    }
    content.on('data', (c) => {
      md5.update(c);
      n += c.length;
      if (!out.write(c)) {
        content.pause();
        out.once('drain', () => content.resume());
      }
    });
    content.on('end', () => {
      ended = true;
      if (Number.isFinite(want) && n !== want) return incomplete();
      return out.end();
    });
    content.on('aborted', incomplete);
    content.on('error', incomplete);
    content.on('close', () => { if (!ended) incomplete(); });
  });
}

function atomicPuts(store) {
  store.putObject = async function putObject(object) {
    const r = await storeWhole(this.getResourcePath(object.bucket, object.key, 'object'),
      object.content);
    await this.putMetadata(object.bucket, object.key, object.metadata, r.md5);
    return r;
  };
  store.putPart = async function putPart(bucket, uploadId, partNumber, content) {
    const part = path.join(this.getResourcePath(bucket, undefined, 'uploads'), uploadId,
      partNumber.toString());
    const r = await storeWhole(part, content);
    await fs.promises.writeFile(`${part}.md5`, r.md5);
    return r;
  };
}

async function main() {
  const server = new S3rver({
    directory: path.join(dir, 'data'), address: opt('--address') || '127.0.0.1', port: 0,
    silent: false,
    key: opt('--key') && fs.readFileSync(opt('--key')),
    cert: opt('--cert') && fs.readFileSync(opt('--cert')),
    configureBuckets: [{ name: 'ringtrain', configs: [] }],
  });
  atomicPuts(server.store);
  // ahead of s3rver's own middleware: Koa composes the list when it listens
  server.middleware.unshift(async (ctx, next) => {
    // one line per request, for the tests that count them (s3rver's own log is sparse)
    console.log(`REQ ${ctx.method} ${ctx.path}`);
    const bad = verify(ctx);
    if (bad) return error(ctx, bad[1], bad[0], bad[2]);
    const m = /^\/([^/?]+)\/([^?]+)$/.exec(ctx.path);
    if (ctx.method === 'DELETE' && m && ctx.query.uploadId !== undefined) {
      const up = path.join(server.store.getResourcePath(m[1], undefined, 'uploads'),
        path.basename(String(ctx.query.uploadId)));
      if (!fs.existsSync(up)) return error(ctx, 404, 'NoSuchUpload', 'The specified upload does not exist.');
      fs.rmSync(up, { recursive: true, force: true });
      ctx.status = 204;
      return undefined;
    }
    return next();
  });
  const { address, port } = await server.run();
  console.log(`S3rver listening on ${address}:${port}`);
}

main().catch((e) => { console.error(e); process.exit(1); });
