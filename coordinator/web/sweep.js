// sweep.js — the dashboard's sweep page (docs/sweeps.md): the trials as a
// table sorted by the monitor, every trial's validation curve on one chart
// (a cross where ASHA stopped one), and each searched value against the
// monitor.  Built with app.js's h()/svgEl()/fill(): no markup from data.
'use strict';

const SW = { curves: Object.create(null) }; // trial job id -> {done, epochs, values}

const trialValue = (t) => (t.best == null || !isFinite(t.best) ? null : Number(t.best));

// best first by the monitor's direction; trials without a value last
function sortTrials(list, max) {
  return list.slice().sort((a, b) => {
    const x = trialValue(a), y = trialValue(b);
    if ((x == null) !== (y == null)) return x == null ? 1 : -1;
    if (x != null && x !== y) return (max ? y - x : x - y);
    return a.trial - b.trial;
  });
}

// each trial's monitor per epoch, from its job's metrics (a finished trial once)
async function trialCurves(list, monitor) {
  await Promise.all(list.filter((t) => t.job > 0 && !(SW.curves[t.job] && SW.curves[t.job].done)).map(async (t) => {
    try {
      const d = await api('/v1/jobs/' + Number(t.job));
      const pts = (d.metrics || []).map((m) => m.data || {}).filter((x) => x.epoch != null && x[monitor] != null);
      const by = new Map(); // an epoch repeated by a restart: its last value
      for (const p of pts) by.set(Number(p.epoch), Number(p[monitor]));
      const epochs = [...by.keys()].sort((a, b) => a - b);
      SW.curves[t.job] = { done: terminal(d.job.state), epochs, values: epochs.map((e) => by.get(e)) };
    } catch (e) { /* shown next refresh */ }
  }));
}

const TRIAL_COLORS = ['#2f6fdb', '#e0662a', '#6aa84f', '#a64d79', '#7a5cff', '#0b8a8a', '#c9a100', '#d1495b'];

// every trial's curve on one chart; a cross at the end of a stopped one
function curvesChart(list, monitor, rungs) {
  const W = 1200, H = 300, L = 56, R = 12, T = 10, B = 26;
  let lo = Infinity, hi = -Infinity, x1 = 1;
  const drawn = list.filter((t) => SW.curves[t.job] && SW.curves[t.job].epochs.length);
  for (const t of drawn) {
    const c = SW.curves[t.job];
    for (const v of c.values) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    x1 = Math.max(x1, ...c.epochs);
  }
  const body = [];
  if (!drawn.length) {
    body.push(svgEl('text', { x: L, y: H / 2 }, 'no trial has finished an epoch yet'));
  } else {
    if (hi === lo) { hi += 1e-3; lo -= 1e-3; }
    const X = (x) => L + ((x - 1) / Math.max(1, x1 - 1)) * (W - L - R);
    const Y = (y) => T + (1 - (y - lo) / (hi - lo)) * (H - T - B);
    const dig = tickDigits(lo, hi);
    for (let i = 0; i <= 4; i++) {
      const v = lo + (i / 4) * (hi - lo);
      body.push(svgEl('line', { x1: L, x2: W - R, y1: Y(v), y2: Y(v), stroke: '#eef1f5' }), svgEl('text', { x: 2, y: Y(v) + 4 }, num(v, dig)));
    }
    for (const r of rungs || []) // ASHA's rungs
      if (r <= x1) body.push(svgEl('line', { x1: X(r), x2: X(r), y1: T, y2: H - B, stroke: '#c8ccd2', 'stroke-dasharray': '4 4', 'data-rung': r }));
    body.push(svgEl('text', { x: L, y: H - 6 }, 'epoch 1'), svgEl('text', { x: W - R - 70, y: H - 6 }, `epoch ${x1}`));
    for (const t of drawn) {
      const c = SW.curves[t.job], color = TRIAL_COLORS[(t.trial - 1) % TRIAL_COLORS.length];
      const p = c.epochs.map((e, i) => [X(e).toFixed(1), Y(c.values[i]).toFixed(1)]);
      body.push(svgEl('polyline', { fill: 'none', stroke: color, 'stroke-width': 1.5, points: p.map((q) => q.join(',')).join(' '), 'data-trial': t.trial }));
      const [ex, ey] = p[p.length - 1];
      if (t.state === 'stopped') // where ASHA stopped it
        body.push(svgEl('path', { d: `M${ex - 4},${ey - 4}L${+ex + 4},${+ey + 4}M${ex - 4},${+ey + 4}L${+ex + 4},${ey - 4}`, stroke: color, 'stroke-width': 2, 'data-stopped': t.trial }));
    }
  }
  return [svgEl('svg', { class: 'chart', id: 'sweep-curves', viewBox: `0 0 ${W} ${H}` }, body),
    h('div', { class: 'legend' }, `${monitor} per epoch of every trial; dashed: ASHA's rungs; a cross: stopped there`)];
}

// one searched key against the monitor: numbers on an axis (log when they
// span decades), other values as categories
function paramChart(key, list, monitor) {
  const W = 380, H = 200, L = 50, R = 10, T = 10, B = 34;
  const pts = list.filter((t) => trialValue(t) != null && t.params && t.params[key] != null)
    .map((t) => ({ raw: String(t.params[key]), y: trialValue(t), trial: t.trial }));
  const body = [];
  if (!pts.length) {
    body.push(svgEl('text', { x: L, y: H / 2 }, 'no value yet'));
  } else {
    const numeric = pts.every((p) => /^-?[0-9.eE+-]+$/.test(p.raw) && isFinite(Number(p.raw)));
    let xs, labels = null;
    if (numeric) {
      const v = pts.map((p) => Number(p.raw)), lo = Math.min(...v), hi = Math.max(...v);
      const log = lo > 0 && hi / lo > 20;
      xs = v.map((x) => (log ? Math.log10(x) : x));
      labels = [numeric && log ? `10^${Math.min(...xs).toFixed(1)}` : String(lo), log ? `10^${Math.max(...xs).toFixed(1)}` : String(hi)];
    } else {
      const cats = [...new Set(pts.map((p) => p.raw))].sort();
      xs = pts.map((p) => cats.indexOf(p.raw));
      labels = cats;
    }
    let ylo = Math.min(...pts.map((p) => p.y)), yhi = Math.max(...pts.map((p) => p.y));
    if (yhi === ylo) { yhi += 1e-3; ylo -= 1e-3; }
    let xlo = Math.min(...xs), xhi = Math.max(...xs);
    if (xhi === xlo) { xhi += 0.5; xlo -= 0.5; }
    const X = (x) => L + ((x - xlo) / (xhi - xlo)) * (W - L - R);
    const Y = (y) => T + (1 - (y - ylo) / (yhi - ylo)) * (H - T - B);
    body.push(svgEl('text', { x: 2, y: T + 10 }, num(yhi, tickDigits(ylo, yhi))), svgEl('text', { x: 2, y: H - B }, num(ylo, tickDigits(ylo, yhi))));
    if (numeric) body.push(svgEl('text', { x: L, y: H - 18 }, labels[0]), svgEl('text', { x: W - R - 60, y: H - 18 }, labels[1]));
    else labels.forEach((c, i) => body.push(svgEl('text', { x: X(i) - 10, y: H - 18 }, c.length > 14 ? c.slice(0, 13) + '…' : c)));
    pts.forEach((p, i) => body.push(svgEl('circle', { cx: X(xs[i]).toFixed(1), cy: Y(p.y).toFixed(1), r: 4, fill: TRIAL_COLORS[(p.trial - 1) % TRIAL_COLORS.length], 'data-trial': p.trial })));
  }
  return h('div', { class: 'param' }, h('div', { class: 'small' }, `${key} against ${monitor}`),
    svgEl('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, 'data-param': key }, body));
}

const fmtParams = (p) => Object.keys(p || {}).map((k) => `${k.replace(/^[a-z]+\./, '')}=${p[k]}`).join(' ');

// called by viewJob for a job of type sweep
async function viewSweep(id, d) {
  const j = d.job, sw = d.sweep || {};
  const list = sw.trial_list || [], max = sw.mode === 'max', monitor = sw.monitor || K('val_loss');
  if (!$('sweep-' + id)) {
    const card = (cid) => h('div', { class: 'card', id: cid });
    fill('view', h('div', { id: 'sweep-' + id },
      h('h1', {}, `Sweep ${id} `, h('span', { id: 's-name' }), ' ', h('span', { id: 's-state' }), ' ',
        h('button', { id: 's-cancel', class: 'danger', hidden: true }, 'Cancel')),
      card('s-info'),
      h('h2', {}, 'Trials, best first'), h('table', { id: 's-trials' }),
      h('h2', {}, 'Validation curves'), card('s-curves'),
      h('h2', {}, 'Each searched value against the monitor'), h('div', { class: 'params', id: 's-params' }),
      h('h2', {}, 'Events'), h('table', { id: 's-events' })));
    $('s-cancel').onclick = async () => {
      if (!confirm('Cancel sweep ' + id + ' and its trials?')) return;
      try { await api(`/v1/jobs/${id}/cancel`, { method: 'POST' }); setStatus('sweep ' + id + ' cancelled'); refresh(); } catch (e) { setStatus(e.message, true); }
    };
  }
  $('s-name').textContent = `'${j.name}'`;
  fill('s-state', badge(j.state));
  $('s-cancel').hidden = !canChange() || terminal(j.state);
  const sorted = sortTrials(list, max);
  const best = sorted.length && trialValue(sorted[0]) != null ? sorted[0] : null;
  const link = (jid, text) => h('a', { href: '#/job/' + Number(jid) }, text);
  fill('s-info',
    h('div', {}, `sweep of `, h('b', {}, j.user), `: ${sw.trials || 0} trials of ${j.np} rank${j.np === 1 ? '' : 's'}, `,
      `${list.length} submitted; ${monitor}, ${max ? 'higher' : 'lower'} better; rungs at epochs ${(sw.rungs || []).join(', ') || 'none'}`),
    h('div', { id: 's-best' }, best ? [`best${sw.best_trial ? '' : ' so far'}: trial ${best.trial} (`, link(best.job, 'job ' + best.job),
      `), ${monitor} ${num(best.best)} at epoch ${best.best_epoch}`] : 'no trial has a value yet'),
    sw.finish_job ? h('div', { class: 'small' }, 'results: ', link(sw.finish_job, 'job ' + sw.finish_job), ' writes trials.jsonl and best/') : null,
    h('div', { class: 'small' }, `submitted ${fmtTime(j.created)} · elapsed ${dur(elapsed(j))}`),
    h('div', { class: 'reason' }, j.reason || ''));
  const rungOf = (t) => (t.rung >= 0 && sw.rungs ? `${t.rung} (epoch ${sw.rungs[t.rung]})` : '-');
  fill('s-trials', headRow('trial', 'job', 'state', 'rung', 'epochs', monitor, 'at epoch', 'values', 'reason'),
    sorted.map((t) => h('tr', { class: 'clickable', 'data-trial': t.trial, onclick: () => { if (t.job > 0) location.hash = '#/job/' + Number(t.job); } },
      h('td', { class: 'num' }, t.trial), h('td', { class: 'num' }, t.job || '-'), h('td', {}, badge(t.state)),
      h('td', {}, rungOf(t)), h('td', { class: 'num' }, t.epochs || 0), h('td', { class: 'num' }, num(trialValue(t))),
      h('td', { class: 'num' }, t.best_epoch || '-'), h('td', { class: 'small' }, fmtParams(t.params)),
      h('td', { class: 'reason' }, t.state === 'completed' ? '' : t.reason || ''))));
  await trialCurves(list, monitor);
  fill('s-curves', curvesChart(list, monitor, sw.rungs));
  const keys = [...new Set(list.flatMap((t) => Object.keys(t.params || {})))];
  fill('s-params', keys.map((k) => paramChart(k, list, monitor)));
  const ev = (d.events || []).slice(-40).reverse();
  fill('s-events', headRow('time', 'kind', 'message'),
    ev.map((e) => h('tr', {}, h('td', { class: 'small' }, fmtTime(e.time)), h('td', {}, e.kind), h('td', { class: 'reason' }, e.message))));
}
