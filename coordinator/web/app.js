// app.js — the ringtrain dashboard: jobs, a job's page (curves, placement,
// results, events, live logs), nodes.  Talks to the coordinator's JSON API
// with the session cookie it got at login (never the token itself), and
// refreshes the page it shows every two seconds.
'use strict';

const S = { me: null, timer: null, logAbort: null, pages: [], view: '', logKey: '' };
const $ = (id) => document.getElementById(id);
// the job states and the terminal ones come with the session (GET/POST /v1/session):
// the coordinator's one table, never a copy here
const terminal = (state) => ((S.me && S.me.terminal_states) || []).includes(state);
// the progress lines' keys come with the session too (rt_proto.h's RT_P_*)
const K = (name) => ((S.me && S.me.progress_keys) || {})[name];

// The page is built from elements and text nodes only: nothing a job or a
// user wrote (names, metric keys, log lines, reasons) is ever parsed as
// markup, and no style is inline text (the CSP allows neither).
// h('td', {class: 'num', title: t}, 'text', child): attributes by
// setAttribute, `style` an object for the CSSOM, on* handlers as
// properties, children nodes or text.  svgEl(...) the same in SVG.
const SVGNS = 'http://www.w3.org/2000/svg';
function build(el, props, children) {
  for (const [k, v] of Object.entries(props || {})) {
    if (v == null || v === false) continue;
    if (k === 'style') Object.assign(el.style, v);
    else if (k.startsWith('on')) el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}
function append(el, children) {
  for (const c of children.flat(Infinity))
    if (c != null && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}
const h = (tag, props, ...children) => build(document.createElement(tag), props, children);
const svgEl = (tag, props, ...children) => build(document.createElementNS(SVGNS, tag), props, children);
// replace what element id holds
function fill(id, ...children) { const e = $(id); e.replaceChildren(); return append(e, children); }
function pad(n) { return String(n).padStart(2, '0'); }
function fmtTime(t) {
  if (!t) return '-';
  const d = new Date(t * 1000);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
function dur(s) {
  if (s == null || s < 0 || !isFinite(s)) return '-';
  s = Math.round(s);
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm' + pad(s % 60) + 's';
  if (s < 86400) return Math.floor(s / 3600) + 'h' + pad(Math.floor(s % 3600 / 60)) + 'm';
  return Math.floor(s / 86400) + 'd' + pad(Math.floor(s % 86400 / 3600)) + 'h';
}
function ago(t) { return t ? dur(Date.now() / 1000 - t) + ' ago' : '-'; }
function num(x, d) { return x == null || !isFinite(x) ? '-' : Number(x).toFixed(d == null ? 4 : d); }
// an axis's tick labels: as many decimals as its step needs (0.1071, 0.1073:
// not 0.107 twice), none for large values (19575, not 19575.393)
function tickDigits(lo, hi) {
  const step = (hi - lo) / 4;
  if (!(step > 0)) return 3;
  return Math.min(6, Math.max(0, Math.ceil(-Math.log10(step)) + 1));
}
function bytes(b) {
  if (!b) return '-';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return b.toFixed(i ? 1 : 0) + ' ' + u[i];
}
function badge(state) { return h('span', { class: 'state ' + String(state).replace(/[^a-z_-]/g, '') }, state); }
function elapsed(j) {
  if (!j.started) return null;
  return (j.finished || Date.now() / 1000) - j.started;
}
function canChange() { return S.me && (S.me.role === 'submit' || S.me.role === 'admin'); }
function setStatus(msg, bad) {
  const f = $('status');
  f.textContent = msg;
  f.className = bad ? 'error' : '';
}

async function api(path, opts) {
  const o = Object.assign({ credentials: 'same-origin', headers: {} }, opts || {});
  if (o.method === 'POST') {
    o.headers['X-Requested-With'] = 'ringtrain';
    o.headers['Content-Type'] = 'application/json';
  }
  const r = await fetch(path, o);
  let body = null;
  try { body = await r.json(); } catch (e) { body = null; }
  if (r.status === 401 && path !== '/v1/session') {
    showLogin(body && body.error);
    throw new Error('not logged in');
  }
  if (!r.ok) throw new Error((body && body.error) || ('HTTP ' + r.status));
  return body;
}

// ---- progress ---------------------------------------------------------------

// {frac 0..1, text, eta seconds} from a job's latest progress report
function progressOf(p, state) {
  if (!p) return state === 'succeeded' ? { frac: 1, text: 'done', eta: null } : null;
  const epochs = p.epochs || 0, steps = p.steps || 0, epoch = p.epoch || 0, step = p.step || 0;
  let frac = 0;
  if (epochs > 0 && steps > 0) frac = (Math.max(epoch - 1, 0) + step / steps) / epochs;
  else if (steps > 0) frac = step / steps;
  if (p.kind === 'epoch' && epochs > 0) frac = epoch / epochs;
  if (state === 'succeeded') frac = 1;
  frac = Math.min(Math.max(frac, 0), 1);
  let text = epochs ? `epoch ${epoch}/${epochs}` : '';
  if (steps && p.kind !== 'epoch') text += (text ? ' · ' : '') + `step ${step}/${steps}`;
  let eta = null;
  const rate = p[K('steps_per_s')];
  if (rate > 0 && steps > 0 && !terminal(state))
    eta = ((epochs || 1) * steps * (1 - frac)) / rate;
  return { frac, text, eta };
}
function bar(p, state) {
  const g = progressOf(p, state);
  if (!g) return null;
  const label = g.text + (g.eta != null ? ' · ETA ' + dur(g.eta) : '');
  return h('div', { class: 'bar', title: label, 'data-frac': g.frac.toFixed(4) },
    h('div', { style: { width: (g.frac * 100).toFixed(1) + '%' } }), h('span', {}, label));
}
// the validation metrics of an epoch line other than val_loss (val_accuracy,
// val_auc, val_exp_rmspe, ...: what the job computes), in the job's order
function valMetrics(p) {
  return Object.keys(p || {}).filter((k) => k.startsWith(K('val_prefix')) && k !== K('val_loss') && typeof p[k] === 'number');
}
// the metrics of the last finished epoch: the progress itself, or mid-epoch
// (a step's report) the epoch line kept beside it
function latestEpoch(j) {
  return j.progress && j.progress.kind === 'epoch' ? j.progress : j.last_epoch || j.progress;
}
function latestMetrics(p) {
  if (!p) return '';
  const keys = [K('loss'), K('val_loss'), ...valMetrics(p).slice(0, 3), K('samples_per_s')];
  return keys.filter((k) => p[k] != null).map((k) => `${k} ${num(p[k], k === K('samples_per_s') ? 0 : 4)}`).join(' · ');
}

// ---- views ------------------------------------------------------------------

async function viewJobs() {
  const st = $('f-state') ? $('f-state').value : '';
  const user = $('f-user') ? $('f-user').value.trim() : '';
  let q = '?limit=50';
  if (st) q += '&state=' + encodeURIComponent(st);
  if (user) q += '&user=' + encodeURIComponent(user);
  if (S.pages.length) q += '&before=' + S.pages[S.pages.length - 1];
  const d = await api('/v1/jobs' + q);
  if (!$('jobs-table')) {
    const states = ((S.me && S.me.job_states) || []).map((x) => h('option', {}, x));
    fill('view', h('h1', {}, 'Jobs'),
      h('div', { class: 'filters' },
        h('label', {}, 'state ', h('select', { id: 'f-state' }, h('option', { value: '' }, 'any'), states)),
        h('label', {}, 'user ', h('input', { id: 'f-user', size: 12 })),
        h('button', { id: 'newer' }, 'Newer'), ' ', h('button', { id: 'older' }, 'Older'),
        h('span', { class: 'small', id: 'page-info' })),
      h('table', { id: 'jobs-table' }));
    $('f-state').value = st;
    $('f-user').value = user;
    $('f-state').onchange = () => { S.pages = []; refresh(); };
    $('f-user').onchange = () => { S.pages = []; refresh(); };
    $('newer').onclick = () => { S.pages.pop(); refresh(); };
    $('older').onclick = () => { if (S.nextBefore) { S.pages.push(S.nextBefore); refresh(); } };
  }
  S.nextBefore = d.next_before || null;
  $('older').disabled = !S.nextBefore;
  $('newer').disabled = S.pages.length === 0;
  $('page-info').textContent = `${d.jobs.length} job${d.jobs.length === 1 ? '' : 's'}` + (S.pages.length ? ` (page ${S.pages.length + 1})` : '');
  const head = h('tr', {}, ['ID', 'name', 'user', 'state', 'np', 'att.', 'submitted', 'elapsed', 'progress', 'latest', 'reason / position'].map((t) => h('th', {}, t)));
  fill('jobs-table', head, d.jobs.map((j) => {
    const pos = j.queue_pos > 0 ? `#${j.queue_pos} in the queue. ` : '';
    return h('tr', { class: 'clickable', 'data-id': j.id, onclick: () => { location.hash = '#/job/' + Number(j.id); } },
      h('td', { class: 'num' }, j.id), h('td', {}, j.name), h('td', {}, j.user), h('td', {}, badge(j.state)),
      h('td', { class: 'num' }, j.np), h('td', { class: 'num' }, j.attempt || 0),
      h('td', { class: 'small', title: fmtTime(j.created) }, ago(j.created)), h('td', { class: 'num' }, dur(elapsed(j))),
      h('td', {}, bar(j.progress, j.state)), h('td', { class: 'small' }, latestMetrics(latestEpoch(j))),
      h('td', { class: 'reason' }, pos + (j.reason || '')));
  }));
}

// the per-epoch metrics of the current attempt, as series
function seriesOf(metrics) {
  const pts = (metrics || []).map((m) => m.data || {}).filter((x) => x.epoch != null);
  const vals = [...new Set(pts.flatMap(valMetrics))];
  const keys = [K('loss'), K('val_loss'), K('samples_per_s'), ...vals];
  // keyed by names jobs give: no prototype for a name to reach
  const out = Object.assign(Object.create(null), { epoch: pts.map((x) => x.epoch), metrics: vals });
  for (const k of keys) out[k] = pts.map((x) => (x[k] == null ? null : Number(x[k])));
  return out;
}

// series: {x: [...], <name>: [...]}; xname labels the axis ("epoch", "step");
// keys: the series drawn (one scale).  An SVG element and its legend.
function chart(series, xname = 'epoch', id = 'chart', keys = [K('loss'), K('val_loss')]) {
  const W = 1200, H = 240, L = 56, R = 12, T = 10, B = 26;
  const colors = Object.assign(Object.create(null), { [K('loss')]: '#2f6fdb', [K('val_loss')]: '#e0662a', [K('samples_per_s')]: '#7a5cff' });
  const palette = ['#0b8a8a', '#c9a100', '#d1495b', '#6aa84f', '#a64d79', '#7a5cff', '#2f6fdb'];
  keys.forEach((k, i) => { if (!colors[k]) colors[k] = palette[i % palette.length]; });
  const shown = keys.filter((k) => series[k] && series[k].some((v) => v != null));
  const xs = series[xname];
  let lo = Infinity, hi = -Infinity;
  for (const k of shown) for (const v of series[k]) if (v != null) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  const body = [];
  if (!xs.length || !shown.length) {
    body.push(svgEl('text', { x: L, y: H / 2 }, `no finished ${xname} yet`));
  } else {
    if (hi === lo) { const pad = Math.abs(hi) * 0.05 || 1; hi += pad; lo -= pad; } /* one value: around it */
    const dig = tickDigits(lo, hi);
    const x0 = Math.min(...xs), x1 = Math.max(...xs) === x0 ? x0 + 1 : Math.max(...xs);
    const X = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
    const Y = (y) => T + (1 - (y - lo) / (hi - lo)) * (H - T - B);
    for (let i = 0; i <= 4; i++) {
      const v = lo + (i / 4) * (hi - lo), y = Y(v);
      body.push(svgEl('line', { x1: L, x2: W - R, y1: y, y2: y, stroke: '#eef1f5' }), svgEl('text', { x: 2, y: y + 4 }, num(v, dig)));
    }
    body.push(svgEl('text', { x: L, y: H - 6 }, `${xname} ${x0}`), svgEl('text', { x: W - R - 70, y: H - 6 }, `${xname} ${Math.max(...xs)}`));
    for (const k of shown) {
      const p = xs.map((x, i) => (series[k][i] == null ? null : [X(x).toFixed(1), Y(series[k][i]).toFixed(1)])).filter(Boolean);
      body.push(svgEl('polyline', { fill: 'none', stroke: colors[k], 'stroke-width': 2, points: p.map((q) => q.join(',')).join(' '), 'data-series': k }));
      if (p.length === 1) body.push(svgEl('circle', { cx: p[0][0], cy: p[0][1], r: 3, fill: colors[k] }));
    }
  }
  return [svgEl('svg', { class: 'chart', id, viewBox: `0 0 ${W} ${H}`, 'data-points': JSON.stringify(series) }, body),
    h('div', { class: 'legend' }, shown.map((k) => h('span', {}, h('i', { style: { background: colors[k] } }), k)))];
}

function describeExit(p) {
  if (p.state !== 'exited') return '';
  if (p.signal > 0) return 'signal ' + p.signal;
  if (p.signal < 0) return 'lost with its agent';
  return 'code ' + p.exit_code;
}

// a table's header row
const headRow = (...names) => h('tr', {}, names.map((t) => h('th', {}, t)));

async function viewJob(id) {
  const d = await api('/v1/jobs/' + id);
  const j = d.job;
  if (j.type === 'sweep') return viewSweep(id, d); // sweep.js
  if (!$('job-' + id)) {
    const card = (cid) => h('div', { class: 'card', id: cid });
    fill('view', h('div', { id: 'job-' + id },
      h('h1', {}, `Job ${id} `, h('span', { id: 'j-name' }), ' ', h('span', { id: 'j-state' }), ' ',
        h('button', { id: 'cancel', class: 'danger', hidden: true }, 'Cancel')),
      h('div', { class: 'grid' }, card('j-info'), card('j-progress')),
      h('div', { id: 'j-failure' }),
      h('h2', {}, 'Curves (per epoch, attempt ', h('span', { id: 'j-att' }), ')'), card('j-chart'),
      h('h2', { id: 'j-steps-h' }, 'This epoch, step by step ', h('span', { class: 'small', id: 'j-steps-note' })), card('j-steps'),
      h('h2', {}, 'Validation metrics (per epoch)'), card('j-vmetrics'),
      h('h2', {}, 'Throughput (samples/s of all ranks, per epoch)'), card('j-rate'),
      h('h2', {}, 'Placement'), h('table', { id: 'j-placement' }),
      h('div', { id: 'j-results' }),
      h('h2', {}, 'Logs ', h('select', { id: 'log-rank' }), ' ', h('span', { class: 'small', id: 'log-state' })), h('pre', { id: 'logs' }),
      h('div', { class: 'grid' },
        h('div', {}, h('h2', {}, 'Attempts'), h('table', { id: 'j-attempts' })),
        h('div', {}, h('h2', {}, 'Events'), h('table', { id: 'j-events' })))));
    $('cancel').onclick = async () => {
      if (!confirm('Cancel job ' + id + '?')) return;
      try { await api(`/v1/jobs/${id}/cancel`, { method: 'POST' }); setStatus('job ' + id + ' cancelled'); refresh(); } catch (e) { setStatus(e.message, true); }
    };
    $('log-rank').onchange = () => followLogs(id, $('log-rank').value);
    S.logKey = '';
  }
  $('j-name').textContent = `'${j.name}'`;
  fill('j-state', badge(j.state));
  $('cancel').hidden = !canChange() || terminal(j.state);
  fill('j-info',
    h('div', {}, `${j.type} job of `, h('b', {}, j.user), `, ${j.np} ranks, attempt ${j.attempt || 0}`, j.restarts ? ` (${j.restarts} restarts)` : ''),
    h('div', { class: 'small' }, `submitted ${fmtTime(j.created)} · started ${fmtTime(j.started)} · ended ${fmtTime(j.finished)} · elapsed ${dur(elapsed(j))}`),
    j.sweep > 0 ? h('div', {}, j.trial > 0 ? `trial ${j.trial} of ` : 'the last step of ',
      h('a', { href: '#/job/' + Number(j.sweep) }, 'sweep ' + j.sweep)) : null,
    h('div', { class: 'reason' }, (j.queue_pos > 0 ? `#${j.queue_pos} in the queue. ` : '') + (j.reason || '')));
  const pr = j.progress || {};
  fill('j-progress', bar(j.progress, j.state), h('div', { class: 'small' }, latestMetrics(latestEpoch(j))),
    pr.slowest_rank != null ? h('div', { class: 'small', id: 'straggler' },
      `slowest rank ${pr.slowest_rank}: the others waited up to ${num(pr.wait_ms_per_step_max, 1)} ms a step for it`) : null);
  $('j-att').textContent = j.attempt || 0;
  const ff = j.first_failure;
  fill('j-failure', ff && typeof ff === 'object' ? [h('h2', {}, 'First failure'),
    h('div', { class: 'card failure' }, `rank ${ff.rank} on ${ff.host} (agent ${ff.agent}), `,
      ff.exit_code != null ? 'exit code ' + ff.exit_code : String(ff.cause || ''),
      Array.isArray(ff.tail) && ff.tail.length ? h('pre', {}, ff.tail.join('\n')) : null)] : null);
  const cur = (d.metrics || []).filter((m) => m.attempt === j.attempt);
  const series = seriesOf(cur);
  fill('j-chart', chart(series));
  window.rtChart = series;
  fill('j-vmetrics', chart(series, 'epoch', 'chart-vmetrics', series.metrics));
  fill('j-rate', chart(series, 'epoch', 'chart-rate', [K('samples_per_s')]));
  // rank 0's running loss of the current epoch, from its step reports
  const st = d.steps && d.steps.attempt === j.attempt ? d.steps : null;
  const stepSeries = { step: st ? st.points.map((p) => p[0]) : [], [K('loss')]: st ? st.points.map((p) => p[1]) : [] };
  fill('j-steps', chart(stepSeries, 'step', 'chart-steps'));
  // a finished job has no current epoch: no step-by-step panel
  const showSteps = !terminal(j.state) && st != null;
  $('j-steps').hidden = $('j-steps-h').hidden = !showSteps;
  $('j-steps-note').textContent = st ? `epoch ${st.epoch}: rank 0's mean |error| so far, ${st.points.length} reports` : '';
  window.rtSteps = stepSeries;
  const use = {};
  for (const u of d.usage || []) use[u.rank] = u;
  // GPU utilisation and memory where the rank's agent has NVML
  const gpuUse = (u) => u && u.gpu_util != null ? h('div', { class: 'small' }, `${num(u.gpu_util, 0)}% · ${bytes(u.gpu_mem_bytes)}`) : null;
  fill('j-placement', headRow('rank', 'host', 'agent', 'local', 'cross', 'GPU', 'pid', 'CPU %', 'RSS', 'state', 'exit'),
    (d.placement || []).map((p) => h('tr', {}, h('td', { class: 'num' }, p.rank), h('td', {}, p.hostname), h('td', {}, p.agent),
      h('td', { class: 'num' }, `${p.local_rank}/${p.local_size}`), h('td', { class: 'num' }, `${p.cross_rank}/${p.cross_size}`),
      h('td', { class: 'gpu' }, p.gpu || '-', gpuUse(use[p.rank])), h('td', { class: 'num' }, p.pid || '-'),
      h('td', { class: 'num cpu' }, use[p.rank] ? num(use[p.rank].cpu_pct, 0) : '-'),
      h('td', { class: 'num rss' }, use[p.rank] ? bytes(use[p.rank].rss_bytes) : '-'),
      h('td', {}, badge(p.state)), h('td', {}, describeExit(p)))));
  const res = d.results || [];
  fill('j-results', res.length ? [h('h2', {}, 'Results'), h('table', {}, headRow('rank', 'value'),
    res.map((r) => h('tr', {}, h('td', { class: 'num' }, r.rank), h('td', {}, h('code', {}, JSON.stringify(r.value))))))] : null);
  fill('j-attempts', headRow('#', 'np', 'state', 'started', 'ended', 'reason'),
    (d.attempts || []).map((a) => h('tr', {}, h('td', { class: 'num' }, a.attempt), h('td', { class: 'num' }, a.np), h('td', {}, badge(a.state)),
      h('td', { class: 'small' }, fmtTime(a.started)), h('td', { class: 'small' }, fmtTime(a.finished)), h('td', { class: 'reason' }, a.reason || ''))));
  const ev = (d.events || []).slice(-30).reverse();
  fill('j-events', headRow('time', 'kind', 'message'),
    ev.map((e) => h('tr', {}, h('td', { class: 'small' }, fmtTime(e.time)), h('td', {}, e.kind), h('td', { class: 'reason' }, e.message))));
  // the log viewer: every rank, or one; restarted when the attempt changes
  const sel = $('log-rank');
  const want = ['all'].concat((d.placement || []).map((p) => String(Number(p.rank))));
  if (sel.options.length !== want.length) {
    const keep = sel.value || 'all';
    fill('log-rank', want.map((r) => h('option', { value: r }, r === 'all' ? 'every rank' : 'rank ' + r)));
    sel.value = want.includes(keep) ? keep : 'all';
  }
  const key = id + '/' + j.attempt;
  if (S.logKey !== key && j.attempt > 0) {
    S.logKey = key;
    followLogs(id, sel.value);
  }
}

async function followLogs(id, rank) {
  if (S.logAbort) S.logAbort.abort();
  const ac = new AbortController();
  S.logAbort = ac;
  const pre = $('logs');
  pre.textContent = '';
  $('log-state').textContent = 'following';
  try {
    const r = await fetch(`/v1/jobs/${id}/logs?rank=${encodeURIComponent(rank)}&follow=1`, { signal: ac.signal, credentials: 'same-origin' });
    if (!r.ok) { $('log-state').textContent = 'no output: HTTP ' + r.status; return; }
    const reader = r.body.getReader(), dec = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      pre.textContent += dec.decode(value, { stream: true });
      if (pre.textContent.length > 400000) pre.textContent = pre.textContent.slice(-300000);
      if (atEnd) pre.scrollTop = pre.scrollHeight;
    }
    if (S.logAbort === ac) $('log-state').textContent = 'ended';
  } catch (e) {
    if (!ac.signal.aborted) $('log-state').textContent = 'stream lost: ' + e.message;
  }
}

async function viewNodes() {
  const d = await api('/v1/nodes');
  fill('view', h('h1', {}, 'Nodes'), h('table', { id: 'nodes-table' },
    headRow('agent', 'host', 'state', 'slots used/free', 'CPU', 'cores', 'memory', 'GPUs', 'since'),
    d.nodes.map((n) => {
      const c = n.caps || {};
      const gpus = n.gpus ? `${n.gpus}${c.gpu_names && c.gpu_names.length ? ' × ' + c.gpu_names[0] : ''}` : '-';
      // ringtrain's GEMM kernel; OpenBLAS's for exec jobs (own pick -> the one the agent sets)
      const blas = c.blas_core ? ` · OpenBLAS ${c.blas_set ? c.blas_own + '→' : ''}${c.blas_core}` : '';
      return h('tr', {}, h('td', {}, n.agent), h('td', {}, n.hostname, h('div', { class: 'small' }, n.address)),
        h('td', {}, badge(n.state), n.draining ? [' ', h('span', { class: 'state' }, 'draining')] : null),
        h('td', { class: 'num' }, `${n.used}/${n.slots - n.used}`),
        h('td', { class: 'small' }, c.cpu || '-', h('div', {}, c.isa || ''),
          c.gemm_kernel ? h('div', {}, `GEMM ${c.gemm_kernel}${blas}`) : null,
          // the job limits it enforces on its ranks' cgroups (memory_limit, cpu_limit)
          h('div', {}, 'limits: ' + (Array.isArray(c.limits) && c.limits.length ? c.limits.join(', ') : 'none'))),
        h('td', { class: 'num' }, c.cores || '-'), h('td', { class: 'num' }, bytes(c.memory_bytes)), h('td', {}, gpus),
        h('td', { class: 'small' }, ago(n.since)));
    })));
}

// ---- routing, login ------------------------------------------------------------

function route() {
  const h = location.hash || '#/jobs';
  const m = h.match(/^#\/job\/(\d+)$/);
  const view = m ? 'job' : h === '#/nodes' ? 'nodes' : 'jobs';
  if (view !== S.view || (m && !$('job-' + m[1]))) {
    if (S.logAbort) { S.logAbort.abort(); S.logAbort = null; }
    $('view').replaceChildren();
    S.view = view;
  }
  $('nav-jobs').className = view === 'nodes' ? '' : 'active';
  $('nav-nodes').className = view === 'nodes' ? 'active' : '';
  refresh();
}

async function refresh() {
  if (!S.me) return;
  const h = location.hash || '#/jobs';
  const m = h.match(/^#\/job\/(\d+)$/);
  try {
    if (m) await viewJob(m[1]);
    else if (h === '#/nodes') await viewNodes();
    else await viewJobs();
    setStatus('updated ' + fmtTime(Date.now() / 1000));
  } catch (e) {
    if (S.me) setStatus(e.message, true);
  }
}

function showLogin(msg) {
  S.me = null;
  if (S.timer) { clearInterval(S.timer); S.timer = null; }
  if (S.logAbort) { S.logAbort.abort(); S.logAbort = null; }
  $('login').hidden = false;
  $('nav').hidden = true;
  $('logout').hidden = true;
  $('whoami').textContent = '';
  $('view').replaceChildren();
  S.view = '';
  if (msg) $('login-error').textContent = msg;
}

function loggedIn(me) {
  S.me = me;
  $('login').hidden = true;
  $('login-error').textContent = '';
  $('nav').hidden = false;
  $('logout').hidden = false;
  $('whoami').textContent = `${me.who} · role ${me.role}`;
  route();
  if (!S.timer) S.timer = setInterval(refresh, 2000);
}

async function login(ev) {
  ev.preventDefault();
  const token = $('token').value.trim();
  $('token').value = '';
  try {
    const r = await fetch('/v1/session', { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token }) });
    const body = await r.json().catch(() => null);
    if (!r.ok) { $('login-error').textContent = 'Refused: ' + ((body && body.error) || 'HTTP ' + r.status); return; }
    loggedIn(body);
  } catch (e) {
    $('login-error').textContent = 'Cannot reach the coordinator: ' + e.message;
  }
}

async function start() {
  $('login-form').onsubmit = login;
  $('logout').onclick = async () => {
    try { await api('/v1/session/logout', { method: 'POST' }); } catch (e) { /* gone anyway */ }
    showLogin('');
  };
  window.onhashchange = route;
  try {
    const r = await fetch('/v1/session', { credentials: 'same-origin' });
    if (r.ok) { loggedIn(await r.json()); return; }
  } catch (e) { /* not logged in */ }
  showLogin('');
}

start();
