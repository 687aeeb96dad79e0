// dashboard_check.mjs — drives the dashboard in headless Chromium over the
// DevTools protocol (a small WebSocket client here: nothing from npm), as a
// person would: a wrong token, a read token, the jobs list, a training
// job's page and its loss curve, the live log of a job that prints after
// the page opened, a read token that cannot cancel, a submit token, the
// session cookie's flags, the nodes page, and no horizontal scrolling at
// 1280x800.  Screenshots go to OUT.  Run by test_dashboard.sh:
// A hostile job's markup (in its name, output, result and metric names)
// must appear as text: no element it describes may be in the page and no
// script of it may run; and the page's own code may trip no
// Content-Security-Policy rule (no inline style or script).
//   node dashboard_check.mjs URL OUT READ_TOKEN SUBMIT_TOKEN TRAIN_JOB EPOCHS LOG_JOB HELD_JOB HOSTILE_JOB
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

const [url, out, readTok, submitTok, trainJob, epochs, logJob, heldJob, hostileJob, sweepJob] = process.argv.slice(2);
const deadline = Date.now() + 150000;
let failures = 0;
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class WS {
  constructor(sock) {
    this.sock = sock; this.buf = Buffer.alloc(0); this.frag = ''; this.id = 0; this.pending = new Map();
    sock.on('data', (d) => this.data(d));
    sock.on('close', () => { for (const p of this.pending.values()) p.rej(new Error('DevTools connection closed')); });
  }
  send(obj) {
    const payload = Buffer.from(JSON.stringify(obj)), mask = crypto.randomBytes(4);
    let hdr;
    if (payload.length < 126) hdr = Buffer.from([0x81, 0x80 | payload.length]);
    else if (payload.length < 65536) { hdr = Buffer.alloc(4); hdr[0] = 0x81; hdr[1] = 0x80 | 126; hdr.writeUInt16BE(payload.length, 2); }
    else { hdr = Buffer.alloc(10); hdr[0] = 0x81; hdr[1] = 0x80 | 127; hdr.writeBigUInt64BE(BigInt(payload.length), 2); }
    for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3];
    this.sock.write(Buffer.concat([hdr, mask, payload]));
  }
  data(d) {
    this.buf = Buffer.concat([this.buf, d]);
    for (;;) {
      if (this.buf.length < 2) return;
      const fin = this.buf[0] & 0x80, op = this.buf[0] & 0x0f;
      let len = this.buf[1] & 0x7f, off = 2;
      if (len === 126) { if (this.buf.length < 4) return; len = this.buf.readUInt16BE(2); off = 4; }
      else if (len === 127) { if (this.buf.length < 10) return; len = Number(this.buf.readBigUInt64BE(2)); off = 10; }
      if (this.buf.length < off + len) return;
      const payload = this.buf.subarray(off, off + len);
      this.buf = this.buf.subarray(off + len);
      if (op === 0x1 || op === 0x0) {
        this.frag += payload.toString();
        if (fin) { const m = JSON.parse(this.frag); this.frag = ''; this.message(m); }
      }
    }
  }
  message(m) {
    const p = m.id && this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (m.error) p.rej(new Error(m.error.message)); else p.res(m.result);
  }
  call(method, params = {}) {
    const id = ++this.id;
    this.send({ id, method, params });
    return new Promise((res, rej) => this.pending.set(id, { res, rej }));
  }
}

function connect(wsUrl) {
  return new Promise((res, rej) => {
    const u = new URL(wsUrl);
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, headers: {
      Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13',
      'Sec-WebSocket-Key': crypto.randomBytes(16).toString('base64') } });
    req.on('upgrade', (_r, sock) => res(new WS(sock)));
    req.on('error', rej);
    req.end();
  });
}

const getJSON = (u) => new Promise((res, rej) => http.get(u, (r) => {
  let s = ''; r.on('data', (d) => { s += d; }); r.on('end', () => { try { res(JSON.parse(s)); } catch (e) { rej(e); } });
}).on('error', rej));

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'rt-chromium-'));
const chrome = spawn('/usr/bin/chromium', ['--headless=new', '--no-sandbox', '--disable-gpu',
  '--ignore-certificate-errors', '--remote-debugging-port=0', '--window-size=1280,800',
  '--no-first-run', `--user-data-dir=${profile}`, 'about:blank'], { stdio: ['ignore', 'ignore', 'pipe'] });
const killer = setTimeout(() => { console.log('FAIL the browser test ran out of time'); chrome.kill('SIGKILL'); process.exit(1); }, 170000);
let port = null, errText = '';
chrome.stderr.on('data', (d) => {
  errText += d;
  const m = errText.match(/DevTools listening on ws:\/\/127\.0\.0\.1:(\d+)\//);
  if (m) port = m[1];
});
while (!port && Date.now() < deadline) await sleep(50);
if (!port) { console.log('FAIL chromium did not start:\n' + errText); process.exit(1); }
const pages = await getJSON(`http://127.0.0.1:${port}/json/list`);
const page = pages.find((p) => p.type === 'page');
const cdp = await connect(page.webSocketDebuggerUrl);
await cdp.call('Page.enable');
await cdp.call('Runtime.enable');
await cdp.call('Network.enable');
await cdp.call('Emulation.setDeviceMetricsOverride', { width: 1280, height: 800, deviceScaleFactor: 1, mobile: false });
// every Content-Security-Policy violation of the page, kept for the end
await cdp.call('Page.addScriptToEvaluateOnNewDocument', { source:
  "window.__csp = []; document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));" });

async function evaluate(expr) {
  const r = await cdp.call('Runtime.evaluate', { expression: expr, awaitPromise: true, returnByValue: true });
  if (r.exceptionDetails) throw new Error(`${expr}: ${r.exceptionDetails.text} ${JSON.stringify(r.exceptionDetails.exception && r.exceptionDetails.exception.description)}`);
  return r.result.value;
}
async function waitFor(expr, what, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    let v = null;
    try { v = await evaluate(expr); } catch (e) { v = null; }
    if (v) { check(true, what); return v; }
    if (Date.now() > end) { check(false, `${what} (waited ${ms / 1000} s for: ${expr})`); return null; }
    await sleep(200);
  }
}
async function shot(name) {
  const r = await cdp.call('Page.captureScreenshot', { format: 'png' });
  fs.writeFileSync(path.join(out, name), Buffer.from(r.data, 'base64'));
}
const noHScroll = 'document.documentElement.scrollWidth <= 1280';
async function login(tok) {
  await evaluate(`document.getElementById('token').value = ${JSON.stringify(tok)}; document.getElementById('login-form').requestSubmit(); true`);
}

try {
  await cdp.call('Page.navigate', { url });
  await waitFor("document.getElementById('login') && !document.getElementById('login').hidden", 'the page asks for a token');
  await login('f'.repeat(64));
  await waitFor("document.getElementById('login-error').textContent.includes('Refused')", 'a wrong token shows an error');
  await shot('login-refused.png');

  await login(readTok);
  await waitFor(`document.querySelector('#jobs-table tr[data-id="${trainJob}"]')`, 'a read token logs in; the jobs list shows the training job');
  await waitFor(`document.querySelector('#jobs-table tr[data-id="${trainJob}"] .bar') && document.querySelector('#jobs-table tr[data-id="${trainJob}"] .bar').dataset.frac === '1.0000'`, "the training job's progress bar is full");
  const row = await evaluate(`document.querySelector('#jobs-table tr[data-id="${trainJob}"]').innerText`);
  check(/succeeded/.test(row) && /\d+s/.test(row) && /loss/.test(row), `its row has state, elapsed time and metrics: ${JSON.stringify(row)}`);
  check(await evaluate(noHScroll), 'the jobs list fits 1280 px');
  const stored = await evaluate('JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + document.cookie');
  check(!stored.includes(readTok), 'the page keeps no token (storage, readable cookies)');
  const cookies = (await cdp.call('Network.getCookies', { urls: [url] })).cookies;
  const c = cookies.find((k) => k.name === 'rt_session');
  check(c && c.httpOnly && c.secure && c.sameSite === 'Strict', `the session cookie is HttpOnly, Secure, SameSite=Strict: ${JSON.stringify(c && { httpOnly: c.httpOnly, secure: c.secure, sameSite: c.sameSite })}`);
  await shot('jobs.png');

  await evaluate(`location.hash = '#/job/${trainJob}'; true`);
  await waitFor(`window.rtChart && window.rtChart.epoch.length === ${Number(epochs)}`, `the job page's loss curve has one point per epoch (${epochs})`);
  const chart = await evaluate('JSON.stringify(window.rtChart)');
  const series = JSON.parse(chart);
  check(series.loss.every((v) => typeof v === 'number') && series.val_loss.some((v) => typeof v === 'number'), `loss and val_loss are drawn: ${chart}`);
  check(await evaluate("document.querySelectorAll('#chart polyline').length >= 2"), 'the chart has a line per series');
  check(series.samples_per_s.length === Number(epochs) && series.samples_per_s.every((v) => typeof v === 'number' && v > 0) &&
        await evaluate("document.querySelectorAll('#chart-rate polyline[data-series=samples_per_s]').length === 1"),
        `the throughput curve has each epoch's samples/s: ${JSON.stringify(series.samples_per_s)}`);
  check(series.metrics.includes('val_exp_rmspe') && series.val_exp_rmspe.some((v) => typeof v === 'number') &&
        await evaluate("document.querySelectorAll('#chart-vmetrics polyline[data-series=val_exp_rmspe]').length === 1"),
        `the validation metrics the job computes are drawn (val_exp_rmspe): ${JSON.stringify(series.metrics)}`);
  const steps = JSON.parse(await evaluate('JSON.stringify(window.rtSteps || null)'));
  check(steps && steps.step.length >= 1 && steps.step.every((s, i) => i === 0 || s > steps.step[i - 1]) &&
        steps.loss.every((v) => typeof v === 'number' && v > 0) &&
        await evaluate("document.querySelectorAll('#chart-steps polyline').length === 1"),
        `the last epoch's step-by-step curve (rank 0's running loss) is drawn: ${JSON.stringify(steps)}`);
  check(await evaluate("document.getElementById('j-steps').hidden && document.getElementById('j-steps-h').hidden"),
        'a finished job shows no step-by-step panel');
  const ticks = JSON.parse(await evaluate(`JSON.stringify(['chart', 'chart-rate', 'chart-vmetrics'].map((id) =>
    [...document.querySelectorAll('#' + id + ' text[x="2"]')].map((t) => t.textContent)))`));
  check(ticks.every((t) => t.length === 5 && new Set(t).size === 5), `every axis has five different tick labels: ${JSON.stringify(ticks)}`);
  check(ticks[1].every((t) => !t.includes('.')), `throughput ticks are whole numbers: ${JSON.stringify(ticks[1])}`);
  check(await evaluate("document.getElementById('cancel').hidden"), 'a read token is offered no cancel');
  check(await evaluate(noHScroll), "the job's page fits 1280 px");
  await waitFor("document.getElementById('logs').textContent.includes('epoch')", "the job's log is shown");
  await shot('job.png');

  await evaluate(`location.hash = '#/job/${logJob}'; true`);
  await waitFor("document.getElementById('logs').textContent.includes('before-open')", 'the log viewer shows what a running job printed');
  await waitFor("document.getElementById('logs').textContent.includes('printed-after-the-page-opened')", 'and a line it printed after the page opened', 30000);
  await shot('job-log.png');

  const st = await evaluate(`fetch('/v1/jobs/${heldJob}/cancel', {method: 'POST', credentials: 'same-origin', headers: {'X-Requested-With': 'ringtrain'}}).then((r) => r.status)`);
  check(st === 403, `a read token cannot cancel (HTTP ${st})`);

  await evaluate("document.getElementById('logout').click(); true");
  await waitFor("!document.getElementById('login').hidden", 'logging out asks for a token again');
  await login(submitTok);
  await waitFor("document.getElementById('whoami').textContent.includes('role submit')", 'a submit token logs in');
  const csrf = await evaluate(`fetch('/v1/jobs/${heldJob}/cancel', {method: 'POST', credentials: 'same-origin'}).then((r) => r.status)`);
  check(csrf === 403, `a change by cookie without X-Requested-With is refused (HTTP ${csrf})`);
  await evaluate(`location.hash = '#/job/${heldJob}'; true`);
  // the held job's own page: until it has rendered, the log job's page (where the
  // login left it) still shows, with a cancel button of its own that cancels that job
  await waitFor(`document.getElementById('job-${heldJob}') !== null && !document.getElementById('cancel').hidden`,
                'a submit token is offered cancel');
  await evaluate('window.confirm = () => true; document.getElementById("cancel").click(); true');
  await waitFor("document.getElementById('j-state').textContent.includes('cancelled')", 'cancel from the page cancels the job');

  // the hostile job: its list row and its page, markup shown as text only
  const injected = "document.querySelector('[id^=pwned], img[src=x], [onerror], [onload]')";
  await evaluate("location.hash = '#/jobs'; true");
  await waitFor(`document.querySelector('#jobs-table tr[data-id="${hostileJob}"]')`, 'the jobs list shows the hostile job');
  check(await evaluate(`document.querySelector('#jobs-table tr[data-id="${hostileJob}"]').innerText.includes('<b id=pwned-name>')`),
        'its name is shown as the text it is');
  await evaluate(`location.hash = '#/job/${hostileJob}'; true`);
  await waitFor("document.getElementById('logs').textContent.includes('pwned-svg')", "the hostile job's log is shown");
  await waitFor("document.getElementById('j-failure').textContent.includes('pwned-log2')", 'its failure shows its last lines');
  await waitFor("document.getElementById('j-results').textContent.includes('pwned-result')", 'its result is shown');
  const hostile = JSON.parse(await evaluate('JSON.stringify(window.rtChart)'));
  check(!hostile.metrics.some((k) => k.includes('<')), `no metric name with markup reached the page: ${JSON.stringify(hostile.metrics)}`);
  check(await evaluate(`${injected} === null`), `no element the job's markup describes is in the page: ${await evaluate(`(${injected} || {}).outerHTML || 'none'`)}`);
  check(await evaluate('window.__pwned === undefined'), 'no script of the job ran');
  await shot('job-hostile.png');

  // the sweep's page: its trials best first, every trial's curve, each value against the monitor
  await evaluate(`location.hash = '#/job/${sweepJob}'; true`);
  await waitFor("document.querySelectorAll('#s-trials tr[data-trial]').length === 4", 'the sweep page lists its 4 trials');
  const vals = JSON.parse(await evaluate("JSON.stringify([...document.querySelectorAll('#s-trials tr[data-trial]')].map((r) => r.children[5].textContent))"));
  const nums = vals.filter((v) => v !== '-').map(Number);
  check(nums.length >= 1 && nums.every((v, i) => i === 0 || v >= nums[i - 1]), `the trials are sorted by val_loss, best first: ${JSON.stringify(vals)}`);
  await waitFor("document.querySelectorAll('#sweep-curves polyline[data-trial]').length === 4", "every trial's validation curve is drawn");
  check(await evaluate("document.querySelectorAll('#sweep-curves line[data-rung]').length >= 1"), "ASHA's rungs are marked on the chart");
  const stopped = await evaluate("document.querySelectorAll('#s-trials tr[data-trial] .state.stopped').length");
  check(await evaluate("document.querySelectorAll('#sweep-curves path[data-stopped]').length") === stopped, `a cross for each of the ${stopped} stopped trials`);
  check(await evaluate("document.querySelectorAll('#s-params svg[data-param]').length") === 2, 'one chart per searched key');
  check(await evaluate("document.getElementById('s-best').textContent.startsWith('best: trial')"), 'the best trial is named');
  check(await evaluate("document.getElementById('s-name').textContent.includes('<b id=pwned-sweep>')"), "the sweep's name is shown as the text it is");
  check(await evaluate("document.getElementById('pwned-sweep') === null"), 'no element of its name is in the page');
  check(await evaluate(noHScroll), "the sweep's page fits 1280 px");
  await shot('sweep.png');

  await evaluate("location.hash = '#/nodes'; true");
  await waitFor("document.querySelectorAll('#nodes-table tr').length >= 2 && document.getElementById('nodes-table').innerText.includes('up')", 'the nodes page lists the agent, up');
  check(await evaluate(noHScroll), 'the nodes page fits 1280 px');
  await shot('nodes.png');
  const csp = await evaluate('JSON.stringify(window.__csp)');
  check(csp === '[]', `the page broke no Content-Security-Policy rule: ${csp}`);
} catch (e) {
  check(false, 'the browser session: ' + e.message);
}
clearTimeout(killer);
const gone = new Promise((r) => chrome.once('exit', r));
chrome.kill('SIGKILL');
await gone;
try { fs.rmSync(profile, { recursive: true, force: true }); } catch (e) { /* the OS cleans /tmp */ }
console.log(failures ? `${failures} check(s) failed` : 'dashboard: every check passed');
process.exit(failures ? 1 : 0);
