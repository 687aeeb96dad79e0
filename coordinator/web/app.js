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

function esc(s) {
  return String(s == null ? '' : s).replace(/[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}
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
function badge(state) { return `<span class="state ${esc(state)}">${esc(state)}</span>`; }
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
  if (p.steps_per_s > 0 && steps > 0 && !terminal(state))
    eta = ((epochs || 1) * steps * (1 - frac)) / p.steps_per_s;
  return { frac, text, eta };
}
function bar(p, state) {
  const g = progressOf(p, state);
  if (!g) return '';
  const eta = g.eta != null ? ' · ETA ' + dur(g.eta) : '';
  return `<div class="bar" title="${esc(g.text + eta)}" data-frac="${g.frac.toFixed(4)}">` +
    `<div style="width:${(g.frac * 100).toFixed(1)}%"></div><span>${esc(g.text + eta)}</span></div>`;
}
// the validation metrics of an epoch line other than val_loss (val_accuracy,
// val_auc, val_exp_rmspe, ...: what the job computes), in the job's order
function valMetrics(p) {
  return Object.keys(p || {}).filter((k) => k.startsWith('val_') && k !== 'val_loss' && typeof p[k] === 'number');
}
// the metrics of the last finished epoch: the progress itself, or mid-epoch
// (a step's report) the epoch line kept beside it
function latestEpoch(j) {
  return j.progress && j.progress.kind === 'epoch' ? j.progress : j.last_epoch || j.progress;
}
function latestMetrics(p) {
  if (!p) return '';
  const keys = ['loss', 'val_loss', ...valMetrics(p).slice(0, 3), 'samples_per_s'];
  return keys.filter((k) => p[k] != null).map((k) => `${k} ${num(p[k], k === 'samples_per_s' ? 0 : 4)}`).join(' · ');
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
    $('view').innerHTML = `<h1>Jobs</h1>
      <div class="filters">
        <label>state <select id="f-state"><option value="">any</option>${((S.me && S.me.job_states) || []).map((s) => `<option>${s}</option>`).join('')}</select></label>
        <label>user <input id="f-user" size="12"></label>
        <button id="newer">Newer</button> <button id="older">Older</button>
        <span class="small" id="page-info"></span>
      </div>
      <table id="jobs-table"></table>`;
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
  const head = '<tr><th>ID</th><th>name</th><th>user</th><th>state</th><th>np</th><th>att.</th>' +
    '<th>submitted</th><th>elapsed</th><th>progress</th><th>latest</th><th>reason / position</th></tr>';
  $('jobs-table').innerHTML = head + d.jobs.map((j) => {
    const pos = j.queue_pos > 0 ? `#${j.queue_pos} in the queue. ` : '';
    return `<tr class="clickable" data-id="${esc(j.id)}"><td class="num">${esc(j.id)}</td><td>${esc(j.name)}</td>` +
      `<td>${esc(j.user)}</td><td>${badge(j.state)}</td><td class="num">${esc(j.np)}</td><td class="num">${esc(j.attempt || 0)}</td>` +
      `<td class="small" title="${esc(fmtTime(j.created))}">${esc(ago(j.created))}</td><td class="num">${dur(elapsed(j))}</td>` +
      `<td>${bar(j.progress, j.state)}</td><td class="small">${esc(latestMetrics(latestEpoch(j)))}</td>` +
      `<td class="reason">${esc(pos + (j.reason || ''))}</td></tr>`;
  }).join('');
  for (const tr of document.querySelectorAll('#jobs-table tr.clickable'))
    tr.onclick = () => { location.hash = '#/job/' + tr.dataset.id; };
}

// the per-epoch metrics of the current attempt, as series
function seriesOf(metrics) {
  const pts = (metrics || []).map((m) => m.data || {}).filter((x) => x.epoch != null);
  const vals = [...new Set(pts.flatMap(valMetrics))];
  const keys = ['loss', 'val_loss', 'mae', 'val_mae', 'samples_per_s', ...vals];
  const out = { epoch: pts.map((x) => x.epoch), metrics: vals };
  for (const k of keys) out[k] = pts.map((x) => (x[k] == null ? null : Number(x[k])));
  return out;
}

// series: {x: [...], <name>: [...]}; xname labels the axis ("epoch", "step");
// keys: the series drawn (one scale)
function chart(series, xname = 'epoch', id = 'chart', keys = ['loss', 'val_loss', 'mae', 'val_mae']) {
  const W = 1200, H = 240, L = 56, R = 12, T = 10, B = 26;
  const colors = { loss: '#2f6fdb', val_loss: '#e0662a', mae: '#6aa84f', val_mae: '#a64d79', samples_per_s: '#7a5cff' };
  const palette = ['#0b8a8a', '#c9a100', '#d1495b', '#6aa84f', '#a64d79', '#7a5cff', '#2f6fdb'];
  keys.forEach((k, i) => { if (!colors[k]) colors[k] = palette[i % palette.length]; });
  const shown = keys.filter((k) => series[k] && series[k].some((v) => v != null));
  const xs = series[xname];
  let lo = Infinity, hi = -Infinity;
  for (const k of shown) for (const v of series[k]) if (v != null) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  let body = '';
  if (!xs.length || !shown.length) {
    body = `<text x="${L}" y="${H / 2}">no finished ${xname} yet</text>`;
  } else {
    if (hi === lo) { const pad = Math.abs(hi) * 0.05 || 1; hi += pad; lo -= pad; } /* one value: around it */
    const dig = tickDigits(lo, hi);
    const x0 = Math.min(...xs), x1 = Math.max(...xs) === x0 ? x0 + 1 : Math.max(...xs);
    const X = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
    const Y = (y) => T + (1 - (y - lo) / (hi - lo)) * (H - T - B);
    for (let i = 0; i <= 4; i++) {
      const v = lo + (i / 4) * (hi - lo), y = Y(v);
      body += `<line x1="${L}" x2="${W - R}" y1="${y}" y2="${y}" stroke="#eef1f5"/><text x="2" y="${y + 4}">${num(v, dig)}</text>`;
    }
    body += `<text x="${L}" y="${H - 6}">${xname} ${x0}</text><text x="${W - R - 70}" y="${H - 6}">${xname} ${Math.max(...xs)}</text>`;
    for (const k of shown) {
      const p = xs.map((x, i) => (series[k][i] == null ? null : `${X(x).toFixed(1)},${Y(series[k][i]).toFixed(1)}`)).filter(Boolean);
      body += `<polyline fill="none" stroke="${colors[k]}" stroke-width="2" points="${p.join(' ')}" data-series="${k}"/>`;
      if (p.length === 1) body += `<circle cx="${p[0].split(',')[0]}" cy="${p[0].split(',')[1]}" r="3" fill="${colors[k]}"/>`;
    }
  }
  const legend = shown.map((k) => `<span><i style="background:${colors[k]}"></i>${k}</span>`).join('');
  return `<svg class="chart" id="${id}" viewBox="0 0 ${W} ${H}" data-points='${esc(JSON.stringify(series))}'>${body}</svg><div class="legend">${legend}</div>`;
}

function describeExit(p) {
  if (p.state !== 'exited') return '';
  if (p.signal > 0) return 'signal ' + p.signal;
  if (p.signal < 0) return 'lost with its agent';
  return 'code ' + p.exit_code;
}

async function viewJob(id) {
  const d = await api('/v1/jobs/' + id);
  const j = d.job;
  if (!$('job-' + id)) {
    $('view').innerHTML = `<div id="job-${esc(id)}">
      <h1>Job ${esc(id)} <span id="j-name"></span> <span id="j-state"></span>
        <button id="cancel" class="danger" hidden>Cancel</button></h1>
      <div class="grid"><div class="card" id="j-info"></div><div class="card" id="j-progress"></div></div>
      <div id="j-failure"></div>
      <h2>Curves (per epoch, attempt <span id="j-att"></span>)</h2><div class="card" id="j-chart"></div>
      <h2 id="j-steps-h">This epoch, step by step <span class="small" id="j-steps-note"></span></h2><div class="card" id="j-steps"></div>
      <h2>Validation metrics (per epoch)</h2><div class="card" id="j-vmetrics"></div>
      <h2>Throughput (samples/s of all ranks, per epoch)</h2><div class="card" id="j-rate"></div>
      <h2>Placement</h2><table id="j-placement"></table>
      <div id="j-results"></div>
      <h2>Logs <select id="log-rank"></select> <span class="small" id="log-state"></span></h2><pre id="logs"></pre>
      <div class="grid"><div><h2>Attempts</h2><table id="j-attempts"></table></div>
        <div><h2>Events</h2><table id="j-events"></table></div></div></div>`;
    $('cancel').onclick = async () => {
      if (!confirm('Cancel job ' + id + '?')) return;
      try { await api(`/v1/jobs/${id}/cancel`, { method: 'POST' }); setStatus('job ' + id + ' cancelled'); refresh(); } catch (e) { setStatus(e.message, true); }
    };
    $('log-rank').onchange = () => followLogs(id, $('log-rank').value);
    S.logKey = '';
  }
  $('j-name').textContent = `'${j.name}'`;
  $('j-state').innerHTML = badge(j.state);
  $('cancel').hidden = !canChange() || terminal(j.state);
  $('j-info').innerHTML = `<div>${esc(j.type)} job of <b>${esc(j.user)}</b>, ${esc(j.np)} ranks, attempt ${esc(j.attempt || 0)}${j.restarts ? ` (${esc(j.restarts)} restarts)` : ''}</div>
    <div class="small">submitted ${esc(fmtTime(j.created))} · started ${esc(fmtTime(j.started))} · ended ${esc(fmtTime(j.finished))} · elapsed ${dur(elapsed(j))}</div>
    <div class="reason">${esc(j.queue_pos > 0 ? `#${j.queue_pos} in the queue. ` : '')}${esc(j.reason || '')}</div>`;
  const pr = j.progress || {};
  const straggler = pr.slowest_rank != null ?
    `<div class="small" id="straggler">slowest rank ${esc(pr.slowest_rank)}: the others waited up to ${num(pr.wait_ms_per_step_max, 1)} ms a step for it</div>` : '';
  $('j-progress').innerHTML = bar(j.progress, j.state) + `<div class="small">${esc(latestMetrics(latestEpoch(j)))}</div>` + straggler;
  $('j-att').textContent = j.attempt || 0;
  const ff = j.first_failure;
  $('j-failure').innerHTML = ff && typeof ff === 'object' ?
    `<h2>First failure</h2><div class="card failure">rank ${esc(ff.rank)} on ${esc(ff.host)} (agent ${esc(ff.agent)}), ` +
    `${ff.exit_code != null ? 'exit code ' + esc(ff.exit_code) : esc(ff.cause || '')}` +
    (ff.tail && ff.tail.length ? `<pre>${esc(ff.tail.join('\n'))}</pre>` : '') + '</div>' : '';
  const cur = (d.metrics || []).filter((m) => m.attempt === j.attempt);
  const series = seriesOf(cur);
  $('j-chart').innerHTML = chart(series);
  window.rtChart = series;
  $('j-vmetrics').innerHTML = chart(series, 'epoch', 'chart-vmetrics', series.metrics.filter((k) => k !== 'val_mae'));
  $('j-rate').innerHTML = chart(series, 'epoch', 'chart-rate', ['samples_per_s']);
  // rank 0's running MAE of the current epoch, from its step reports
  const st = d.steps && d.steps.attempt === j.attempt ? d.steps : null;
  const stepSeries = { step: st ? st.points.map((p) => p[0]) : [], mae: st ? st.points.map((p) => p[1]) : [] };
  $('j-steps').innerHTML = chart(stepSeries, 'step', 'chart-steps');
  // a finished job has no current epoch: no step-by-step panel
  const showSteps = !terminal(j.state) && st != null;
  $('j-steps').hidden = $('j-steps-h').hidden = !showSteps;
  $('j-steps-note').textContent = st ? `epoch ${st.epoch}: rank 0's mean |error| so far, ${st.points.length} reports` : '';
  window.rtSteps = stepSeries;
  const use = {};
  for (const u of d.usage || []) use[u.rank] = u;
  // GPU utilisation and memory where the rank's agent has NVML
  const gpuUse = (u) => u && u.gpu_util != null ? `<div class="small">${num(u.gpu_util, 0)}% · ${bytes(u.gpu_mem_bytes)}</div>` : '';
  $('j-placement').innerHTML = '<tr><th>rank</th><th>host</th><th>agent</th><th>local</th><th>cross</th><th>GPU</th><th>pid</th><th>CPU %</th><th>RSS</th><th>state</th><th>exit</th></tr>' +
    (d.placement || []).map((p) => `<tr><td class="num">${esc(p.rank)}</td><td>${esc(p.hostname)}</td><td>${esc(p.agent)}</td>` +
      `<td class="num">${esc(p.local_rank)}/${esc(p.local_size)}</td><td class="num">${esc(p.cross_rank)}/${esc(p.cross_size)}</td><td class="gpu">${esc(p.gpu || '-')}${gpuUse(use[p.rank])}</td>` +
      `<td class="num">${esc(p.pid || '-')}</td><td class="num cpu">${use[p.rank] ? num(use[p.rank].cpu_pct, 0) : '-'}</td>` +
      `<td class="num rss">${use[p.rank] ? bytes(use[p.rank].rss_bytes) : '-'}</td><td>${badge(p.state)}</td><td>${esc(describeExit(p))}</td></tr>`).join('');
  const res = d.results || [];
  $('j-results').innerHTML = res.length ? '<h2>Results</h2><table><tr><th>rank</th><th>value</th></tr>' +
    res.map((r) => `<tr><td class="num">${esc(r.rank)}</td><td><code>${esc(JSON.stringify(r.value))}</code></td></tr>`).join('') + '</table>' : '';
  $('j-attempts').innerHTML = '<tr><th>#</th><th>np</th><th>state</th><th>started</th><th>ended</th><th>reason</th></tr>' +
    (d.attempts || []).map((a) => `<tr><td class="num">${esc(a.attempt)}</td><td class="num">${esc(a.np)}</td><td>${badge(a.state)}</td>` +
      `<td class="small">${esc(fmtTime(a.started))}</td><td class="small">${esc(fmtTime(a.finished))}</td><td class="reason">${esc(a.reason)}</td></tr>`).join('');
  const ev = (d.events || []).slice(-30).reverse();
  $('j-events').innerHTML = '<tr><th>time</th><th>kind</th><th>message</th></tr>' +
    ev.map((e) => `<tr><td class="small">${esc(fmtTime(e.time))}</td><td>${esc(e.kind)}</td><td class="reason">${esc(e.message)}</td></tr>`).join('');
  // the log viewer: every rank, or one; restarted when the attempt changes
  const sel = $('log-rank');
  const want = ['all'].concat((d.placement || []).map((p) => String(p.rank)));
  if (sel.options.length !== want.length) {
    const keep = sel.value || 'all';
    sel.innerHTML = want.map((r) => `<option value="${r}">${r === 'all' ? 'every rank' : 'rank ' + r}</option>`).join('');
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
  $('view').innerHTML = '<h1>Nodes</h1><table id="nodes-table"><tr><th>agent</th><th>host</th><th>state</th><th>slots used/free</th>' +
    '<th>CPU</th><th>cores</th><th>memory</th><th>GPUs</th><th>since</th></tr>' +
    d.nodes.map((n) => {
      const c = n.caps || {};
      const gpus = n.gpus ? `${esc(n.gpus)}${c.gpu_names && c.gpu_names.length ? ' × ' + esc(c.gpu_names[0]) : ''}` : '-';
      const st = badge(n.state) + (n.draining ? ' <span class="state">draining</span>' : '');
      // ringtrain's GEMM kernel; OpenBLAS's for exec jobs (own pick -> the one the agent sets)
      const blas = c.blas_core ? ` · OpenBLAS ${c.blas_set ? esc(c.blas_own) + '→' : ''}${esc(c.blas_core)}` : '';
      const kern = c.gemm_kernel ? `<div>GEMM ${esc(c.gemm_kernel)}${blas}</div>` : '';
      // the job limits it enforces on its ranks' cgroups (memory_limit, cpu_limit)
      const lim = `<div>limits: ${c.limits && c.limits.length ? c.limits.map(esc).join(', ') : 'none'}</div>`;
      return `<tr><td>${esc(n.agent)}</td><td>${esc(n.hostname)}<div class="small">${esc(n.address)}</div></td><td>${st}</td>` +
        `<td class="num">${esc(n.used)}/${esc(n.slots - n.used)}</td><td class="small">${esc(c.cpu || '-')}<div>${esc(c.isa || '')}</div>${kern}${lim}</td>` +
        `<td class="num">${esc(c.cores || '-')}</td><td class="num">${bytes(c.memory_bytes)}</td><td>${gpus}</td><td class="small">${esc(ago(n.since))}</td></tr>`;
    }).join('') + '</table>';
}

// ---- routing, login ------------------------------------------------------------

function route() {
  const h = location.hash || '#/jobs';
  const m = h.match(/^#\/job\/(\d+)$/);
  const view = m ? 'job' : h === '#/nodes' ? 'nodes' : 'jobs';
  if (view !== S.view || (m && !$('job-' + m[1]))) {
    if (S.logAbort) { S.logAbort.abort(); S.logAbort = null; }
    $('view').innerHTML = '';
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
  $('view').innerHTML = '';
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
