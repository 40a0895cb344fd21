// The dashboard: one page, no build step, everything from the JSON API (charts.js draws the charts, incidents.js holds
// the incidents' views). Each view has its own address (#diff?..., #load?id=..., #tensor?..., #history?...), so an
// alert's link (Alertmanager's "dashboard" annotation), a bookmark and the back button all work. The path an SRE takes: alert -> diff (root causes, expandable to tensors) -> load
// (every tensor, filterable) -> one tensor's history across releases.

// The API token never travels in a URL (URLs end up in logs, history and Referer headers): when the API answers 401,
// the page asks for it once and POSTs it to /session, which sets an HttpOnly, SameSite=Strict cookie.
class SignInNeeded extends Error {}
async function api(path) {
  const response = await fetch(path, { credentials: 'same-origin' });
  if (response.status === 401) { throw new SignInNeeded(path); }
  if (!response.ok) { throw new Error(path + ': ' + response.status + ' ' + (await response.text())); }
  return response.json();
}
function askForToken() {
  const form = document.getElementById('signin');
  form.hidden = false;
  document.getElementById('signin-token').focus();
  form.onsubmit = async event => {
    event.preventDefault();
    const response = await fetch('/session', { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ token: document.getElementById('signin-token').value }) });
    if (response.ok) { form.hidden = true; document.getElementById('signin-token').value = ''; render(); }
    else { document.getElementById('signin-error').textContent = 'wrong token'; }
  };
}

const REFRESH_MS = 30000;
const LIST_LIMIT = 200;

function bytes(n) {
  const a = Math.abs(n), sign = n < 0 ? '-' : '';
  if (a >= 1 << 30) return sign + (a / (1 << 30)).toFixed(1) + ' GB';
  if (a >= 1 << 20) return sign + Math.floor(a / (1 << 20)) + ' MB';
  if (a >= 1 << 10) return sign + Math.floor(a / (1 << 10)) + ' KB';
  return sign + a + ' B';
}
function signed(n) { return (n > 0 ? '+' : '') + bytes(n); }

// Small DOM helpers: text always goes in as text, never as HTML.
function el(name, attrs, ...children) {
  const node = document.createElement(name);
  Object.entries(attrs || {}).forEach(([k, v]) => { if (v !== undefined && v !== null) node.setAttribute(k, v); });
  children.flat(Infinity).forEach(c => node.append(c instanceof Node ? c : document.createTextNode(c === undefined || c === null ? '' : String(c))));
  return node;
}
function link(text, hash) { return el('a', { href: hash }, text); }
function tag(domain) { return domain ? el('span', { class: 'tag ' + domain }, domain) : ''; }
function table(headers, rows, cls) {
  return el('table', { class: cls || '' }, el('thead', {}, el('tr', {}, headers.map(h => el('th', { class: h.num ? 'num' : '' }, h.text || h)))),
    el('tbody', {}, rows));
}
function td(content, cls) { return el('td', { class: cls || '' }, content); }
function section(title, ...content) { return el('section', { class: 'wide' }, el('h2', {}, title), content); }
function truncated(shown, limit, what) {
  return shown >= limit ? el('p', { class: 'truncated' }, `Showing the first ${limit} ${what}; there are more (narrow the view, or use the CLI).`) : '';
}
function query(params) { return Object.entries(params).map(([k, v]) => k + '=' + encodeURIComponent(v)).join('&'); }
function diffHash(deployment, model, from, to) { return '#diff?' + query({ deployment, model, from, to }); }
function tensorHash(deployment, model, tensor) { return '#tensor?' + query({ deployment, model, tensor }); }
function historyHash(deployment, model) { return '#history?' + query({ deployment, model }); }
function incidentHash(id) { return '#incident?' + query({ id }); }
function percent(f) { return Math.round(f * 100) + '%'; }
/** Whether an acknowledgement still lets its cause through: no end, or an end still to come. */
function ackActive(a) { return !!a && (!a.until || Date.parse(a.until) > Date.now()); }
function ackText(a) {
  if (!a) return '';
  return `acknowledged by ${a.by}: ${a.note}` + (!a.until ? '' : ackActive(a) ? ` (until ${a.until})` : ` (ran out at ${a.until})`);
}

// --- Views -------------------------------------------------------------------------------------------------------

async function overview(params) {
  const releases = await api('/api/releases');
  const release = params.release || releases[releases.length - 1];
  const [incidents, alerts, fleet] = await Promise.all([api('/api/incidents?limit=' + LIST_LIMIT), api('/api/alerts?limit=' + LIST_LIMIT),
    release ? api('/api/fleet?release=' + encodeURIComponent(release)) : Promise.resolve(null)]);
  const open = incidents.filter(i => i.state === 'OPEN');
  const incidentRows = incidents.map(incidentRow);
  const alertRows = alerts.map(a => el('tr', { class: 'alert' },
    td(a.kind, 'bad'), td(link(a.deploymentId, historyHash(a.deploymentId, a.modelId))), td(a.modelId),
    td(link(a.fromRelease + ' → ' + a.toRelease, diffHash(a.deploymentId, a.modelId, a.fromRelease, a.toRelease))),
    td(signed(a.deltaBytes), 'num'),
    td([a.causes.length ? a.causes.map(c => el('div', { class: 'cause' }, c.cause)) : el('div', { class: 'muted' }, a.rule),
      a.suppressedBy ? el('div', { class: 'muted' }, 'suppressed: ' + a.suppressedBy) : ''])));
  const releasePicker = el('select', { id: 'release' }, releases.map(r => el('option', r === release ? { value: r, selected: '' } : { value: r }, r)));
  releasePicker.onchange = () => { location.hash = '#fleet?' + query({ release: releasePicker.value }); };
  const fleetRows = fleet ? fleet.rows.map(r => el('tr', {},
    td(link(r.deploymentId, historyHash(r.deploymentId, r.modelId))), td(r.modelId), td(r.platform), td(r.profile),
    td(bytes(r.heapBytes), 'num'), td(bytes(r.offHeapBytes), 'num'), td(observedCell(r.observedOffHeapBytes, r.offHeapBytes), 'num'),
    td(bytes(r.mappedBytes), 'num'), td(link('tensors', '#load?' + query({ id: r.loadId }))),
    td(r.regressions ? r.regressions + ' finding(s)' : '', r.regressions ? 'bad' : ''), td(r.driftsFromFleet ? 'DRIFT' : '', 'bad'))) : [];
  return [
    section(`Incidents: ${open.length} open (one per cause across the fleet)`,
      el('p', {}, link('all incidents: open, acknowledged, resolved, by release and model', incidentsHash({}))),
      incidents.length ? table(INCIDENT_COLUMNS, incidentRows, 'incidents') : el('p', { class: 'muted' }, 'No incidents.'),
      truncated(incidents.length, LIST_LIMIT, 'incidents')),
    section(`Alerts (${alerts.length}${alerts.length >= LIST_LIMIT ? '+' : ''})`,
      alerts.length ? table(['kind', 'deployment', 'model', 'releases (diff)', { text: 'delta', num: true }, 'why'], alertRows, 'alerts')
        : el('p', { class: 'muted' }, 'No alerts.'),
      truncated(alerts.length, LIST_LIMIT, 'alerts')),
    section(el('span', {}, 'Fleet on release ', releasePicker),
      fleet ? el('div', { id: 'fleet-summary', class: 'muted' }, `${fleet.deployments} deployments · heap ${bytes(fleet.heapBytes)} · off-heap `
        + `${bytes(fleet.offHeapBytes)} · mapped ${bytes(fleet.mappedBytes)} · regressions: ${fleet.withRegressions.join(', ') || 'none'} · drifting: `
        + `${fleet.drifting.join(', ') || 'none'}`) : el('p', { class: 'muted' }, 'No complete load yet.'),
      table(['deployment', 'model', 'platform', 'profile', { text: 'heap', num: true }, { text: 'off-heap', num: true },
        { text: 'off-heap observed', num: true }, { text: 'mapped', num: true }, 'load', 'regressions', 'drift'], fleetRows, 'fleet'))];
}

/** What the runtime observed beside what was planned: the bytes, marked when they exceed the plan; empty when not reported. */
function observedCell(observed, planned) {
  if (observed === null || observed === undefined) return '';
  const over = observed - planned;
  return bytes(observed) + (over > 0 ? ' (+' + bytes(over) + ')' : '');
}

async function diff(params) {
  const d = await api('/api/diff?' + query({ deployment: params.deployment, model: params.model, from: params.from, to: params.to }));
  const causes = d.causes.map((g, i) => el('details', { class: 'cause-group', open: i === 0 ? '' : null },
    el('summary', {}, el('span', { class: 'cause' }, g.cause),
      el('span', { class: 'muted' }, `  ${g.beforeReason || '-'} → ${g.afterReason || '-'}`)),
    table(['tensor', 'before', 'after', { text: 'bytes before', num: true }, { text: 'bytes after', num: true }, 'format before → after', 'reasons'],
      g.tensors.map(t => el('tr', { class: 'tensor' },
        td(link(t.name, tensorHash(params.deployment, params.model, t.name))), td(tag(t.beforeDomain)), td(tag(t.afterDomain)),
        td(bytes(t.beforeBytes), 'num'), td(bytes(t.afterBytes), 'num'), td((t.beforeFormat || '-') + ' → ' + (t.afterFormat || '-')),
        td([el('div', { class: 'reason' }, 'before: ' + (t.beforeReason || '-')), el('div', { class: 'reason' }, 'after: ' + (t.afterReason || '-'))])))
    )));
  const totals = d.findings.filter(f => !f.tensorName).map(f => el('li', { class: 'bad' },
    `${f.kind}: ${bytes(f.beforeBytes)} → ${bytes(f.afterBytes)} (${f.afterReason})`));
  return [section(`Diff: ${params.deployment} · ${params.model} · ${params.from} → ${params.to}`,
    el('p', {}, 'Loads: ', link(params.from, '#load?' + query({ id: d.from.loadId })), ' → ', link(params.to, '#load?' + query({ id: d.to.loadId })),
      ' · ', link('bytes over releases', historyHash(params.deployment, params.model))),
    el('p', { class: 'muted', id: 'diff-counts' }, `off-heap ${bytes(d.from.offHeapBytes)} → ${bytes(d.to.offHeapBytes)} · heap ${bytes(d.from.heapBytes)} → `
      + `${bytes(d.to.heapBytes)} · mapped ${bytes(d.from.mappedBytes)} → ${bytes(d.to.mappedBytes)} · findings: `
      + (Object.entries(d.countsByKind).map(([k, v]) => k + ' ' + v).join(', ') || 'none')),
    totals.length ? el('ul', {}, totals) : '',
    el('h3', {}, `${d.causes.length} root cause${d.causes.length === 1 ? '' : 's'}, largest first`),
    causes.length ? causes : el('p', { class: 'muted' }, 'Every tensor landed where it did before.'))];
}

async function load(params) {
  const detail = await api('/api/loads/' + encodeURIComponent(params.id));
  const l = detail.load;
  const filter = el('input', { id: 'filter', type: 'search', placeholder: 'filter: name, domain, reason, format', value: params.filter || '' });
  const rows = detail.tensors.map(t => el('tr', { class: 'tensor', 'data-text': [t.name, t.domain, t.reasonCode, t.residentFormat, t.storedFormat].join(' ').toLowerCase() },
    td(t.index), td(link(t.name, tensorHash(l.deploymentId, l.modelId, t.name))), td(tag(t.domain)), td(bytes(t.residentBytes), 'num'),
    td(t.storedFormat === t.residentFormat ? t.residentFormat : t.storedFormat + ' → ' + t.residentFormat), td(t.reasonCode),
    td(t.sizeEstimated ? 'size estimated' : '', 'muted'), td(el('span', { class: 'reason' }, t.reason))));
  const count = el('span', { id: 'shown', class: 'muted' });
  const apply = () => {
    const words = filter.value.toLowerCase().split(/\s+/).filter(w => w);
    let shown = 0;
    rows.forEach(r => { const match = words.every(w => r.dataset.text.includes(w)); r.hidden = !match; if (match) shown++; });
    count.textContent = `${shown} of ${rows.length} tensors`;
  };
  // The filter lives in the address too: it survives a refresh, and a filtered view can be shared.
  filter.oninput = () => { apply(); window.history.replaceState(null, '', '#load?' + query(filter.value ? { id: params.id, filter: filter.value } : { id: params.id })); };
  apply();
  return [section(`Load ${l.loadId}`,
    el('p', {}, `${l.deploymentId} · ${l.modelId} · ${l.release} · ${l.platform} / ${l.profile} · ${l.tensorCount} tensors · heap ${bytes(l.heapBytes)} · `
      + `off-heap ${bytes(l.offHeapBytes)} · mapped ${bytes(l.mappedBytes)}${l.complete ? '' : ' · INCOMPLETE'}`
      + `${l.deadLetteredRecords ? ' · ' + l.deadLetteredRecords + ' records dead-lettered' : ''}`, ' · ', link('bytes over releases', historyHash(l.deploymentId, l.modelId))),
    el('p', {}, filter, ' ', count),
    table(['#', 'tensor', 'domain', { text: 'resident', num: true }, 'format', 'reason code', '', 'why'], rows, 'tensors'))];
}

async function tensor(params) {
  const past = await api('/api/tensor-history?' + query({ deployment: params.deployment, model: params.model, tensor: params.tensor, limit: LIST_LIMIT }));
  const rows = past.map((h, i) => {
    const before = i > 0 ? past[i - 1] : null;
    const moved = before && (before.domain !== h.domain || before.residentBytes !== h.residentBytes);
    return el('tr', { class: moved ? 'moved' : '' },
      td(before && before.release !== h.release ? link(h.release, diffHash(params.deployment, params.model, before.release, h.release)) : h.release),
      td(h.occurredAt.replace('T', ' ').replace('Z', '')), td(tag(h.domain)), td(bytes(h.residentBytes), 'num'),
      td(h.storedFormat === h.residentFormat ? h.residentFormat : h.storedFormat + ' → ' + h.residentFormat), td(h.reasonCode),
      td(link('load', '#load?' + query({ id: h.loadId }))), td(el('span', { class: 'reason' }, h.reason)));
  });
  return [section(`Tensor ${params.tensor} on ${params.deployment} · ${params.model}, release after release`,
    past.length ? table(['release (diff from the one before)', 'loaded', 'domain', { text: 'resident', num: true }, 'format', 'reason code', '', 'why'],
      rows, 'history') : el('p', { class: 'muted' }, 'No complete load has this tensor.'),
    truncated(past.length, LIST_LIMIT, 'loads'))];
}

async function historyView(params) {
  const loads = (await api('/api/loads?' + query({ deployment: params.deployment, model: params.model, limit: LIST_LIMIT })))
    .filter(l => l.complete).reverse();
  const rows = loads.map((l, i) => el('tr', {},
    td(i > 0 && loads[i - 1].release !== l.release ? link(l.release, diffHash(params.deployment, params.model, loads[i - 1].release, l.release)) : l.release),
    td(l.occurredAt.replace('T', ' ').replace('Z', '')), td(bytes(l.heapBytes), 'num'), td(bytes(l.offHeapBytes), 'num'),
    td(observedCell(l.observedOffHeapBytes, l.offHeapBytes), 'num'), td(bytes(l.mappedBytes), 'num'),
    td(observedCell(l.observedMappedBytes, l.mappedBytes), 'num'), td(link('tensors', '#load?' + query({ id: l.loadId })))));
  return [section(`Bytes per domain over time: ${params.deployment} · ${params.model}`,
    el('div', { class: 'legend' }, el('span', {}, el('i', { class: 'swatch heap' }), 'heap'), el('span', {}, el('i', { class: 'swatch offheap' }), 'off-heap'),
      el('span', {}, el('i', { class: 'swatch mmap' }), 'mapped'), el('span', { class: 'muted' }, 'dashed: as the runtime observed it')),
    chart(loads),
    table(['release (diff from the one before)', 'loaded', { text: 'heap', num: true }, { text: 'off-heap', num: true },
      { text: 'off-heap observed', num: true }, { text: 'mapped', num: true }, { text: 'mapped observed', num: true }, ''], rows, 'loads'),
    truncated(loads.length, LIST_LIMIT, 'loads'))];
}

// --- Routing, refresh --------------------------------------------------------------------------------------------

const VIEWS = { '': overview, fleet: overview, incidents: incidentsView, incident, diff, load, tensor, history: historyView };
const NEEDS = { incident: ['id'], diff: ['deployment', 'model', 'from', 'to'], load: ['id'], tensor: ['deployment', 'model', 'tensor'], history: ['deployment', 'model'] };

function route() {
  const hash = location.hash.replace(/^#/, '');
  const [name, search] = hash.split('?');
  return { name: VIEWS[name] ? name : '', params: Object.fromEntries(new URLSearchParams(search || '')) };
}

function trail(r) {
  const parts = [link('overview', '#')];
  const p = r.params;
  if (p.deployment && p.model) { parts.push(' › ', link(p.deployment + ' · ' + p.model, historyHash(p.deployment, p.model))); }
  if (r.name === 'incidents' || r.name === 'incident') { parts.push(' › ', r.name === 'incident' ? link('incidents', incidentsHash({})) : el('span', {}, 'incidents')); }
  if (r.name === 'incident') { parts.push(' › ', el('span', {}, 'incident ' + p.id)); }
  if (r.name === 'diff') { parts.push(' › ', el('span', {}, `diff ${p.from} → ${p.to}`)); }
  if (r.name === 'tensor') { parts.push(' › ', el('span', {}, p.tensor)); }
  if (r.name === 'load') { parts.push(' › ', el('span', {}, 'load ' + p.id)); }
  return parts;
}

async function render() {
  const r = route();
  const missing = (NEEDS[r.name] || []).filter(k => !r.params[k]);
  const view = document.getElementById('view');
  try {
    if (missing.length) { throw new Error(`this link lacks ${missing.join(', ')}`); }
    const focused = document.activeElement && document.activeElement.id;
    const content = await VIEWS[r.name](r.params);
    view.replaceChildren(...content);
    document.getElementById('trail').replaceChildren(...trail(r));
    if (focused && document.getElementById(focused)) { document.getElementById(focused).focus(); }
    document.getElementById('error').textContent = '';
    document.getElementById('updated').textContent = 'last updated ' + new Date().toLocaleTimeString();
    document.body.dataset.view = r.name || 'overview';
    document.body.dataset.ready = 'true';
  } catch (e) {
    if (e instanceof SignInNeeded) { askForToken(); return; }
    document.getElementById('error').textContent = e.message;
    document.body.dataset.ready = 'error';
  }
}

window.addEventListener('hashchange', render);
// Refreshes the view in place every 30 s, unless the reader is typing in the filter.
setInterval(() => { if (!(document.activeElement && document.activeElement.id === 'filter')) { render(); } }, REFRESH_MS);
render();
