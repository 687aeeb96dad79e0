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
//     partial one; here the body is read whole, checked against Content-Length
//     (IncompleteBody otherwise, nothing stored) and renamed into place;
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

// The whole body of a PUT, or an IncompleteBody error when the client went
// away before Content-Length bytes came.
function wholeBody(stream, want) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let n = 0;
    let done = false;
    const incomplete = () => {
      if (done) return;
      done = true;
      reject(new S3Error('IncompleteBody',
        'You did not provide the number of bytes specified by the Content-Length HTTP header.'));
    };
    stream.on('data', (c) => { chunks.push(c); n += c.length; });
    stream.on('end', () => {
      if (done) return;
      if (Number.isFinite(want) && n !== want) return incomplete();
      done = true;
      return resolve(Buffer.concat(chunks));
    });
    stream.on('aborted', incomplete);
    stream.on('error', incomplete);
    stream.on('close', incomplete); /* after 'end' a no-op */
  });
}

// file written beside its final name, then renamed: readers see the old or the new
async function writeWhole(file, body) {
  await fs.promises.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${crypto.randomBytes(8).toString('hex')}.tmp`;
  try {
    await fs.promises.writeFile(tmp, body);
    await fs.promises.rename(tmp, file);
  } catch (e) {
    await fs.promises.rm(tmp, { force: true });
    throw e;
  }
}

// a request's Content-Length (NaN for a stream that is not a request: a
// multipart upload's parts put together)
const lengthOf = (stream) => Number(stream.headers && stream.headers['content-length']);

function atomicPuts(store) {
  const md5 = (b) => crypto.createHash('md5').update(b).digest('hex');
  store.putObject = async function putObject(object) {
    const body = Buffer.isBuffer(object.content) ? object.content
      : await wholeBody(object.content, lengthOf(object.content));
    await writeWhole(this.getResourcePath(object.bucket, object.key, 'object'), body);
    const sum = md5(body);
    await this.putMetadata(object.bucket, object.key, object.metadata, sum);
    return { size: body.length, md5: sum };
  };
  store.putPart = async function putPart(bucket, uploadId, partNumber, content) {
    const body = await wholeBody(content, lengthOf(content));
    const part = path.join(this.getResourcePath(bucket, undefined, 'uploads'), uploadId,
      partNumber.toString());
    const sum = md5(body);
    await writeWhole(part, body);
    await fs.promises.writeFile(`${part}.md5`, sum);
    return { size: body.length, md5: sum };
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
