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
    if (response.ok) { form.hidden = true; document.getElementById('signin-token').value = ''; main(); }
    else { document.getElementById('signin-error').textContent = 'wrong token'; }
  };
}
function bytes(n) {
  const a = Math.abs(n), sign = n < 0 ? '-' : '';
  if (a >= 1 << 30) return sign + (a / (1 << 30)).toFixed(1) + ' GB';
  if (a >= 1 << 20) return sign + Math.floor(a / (1 << 20)) + ' MB';
  if (a >= 1 << 10) return sign + Math.floor(a / (1 << 10)) + ' KB';
  return sign + a + ' B';
}
function cell(text, cls) { const td = document.createElement('td'); td.textContent = text; if (cls) td.className = cls; return td; }
function tag(domain) { const td = document.createElement('td'); if (domain) { const s = document.createElement('span'); s.className = 'tag ' + domain; s.textContent = domain; td.appendChild(s); } return td; }
function fill(tbody, rows, render) { tbody.replaceChildren(...rows.map(r => { const tr = document.createElement('tr'); render(r).forEach(td => tr.appendChild(td)); return tr; })); }

async function showFleet(release) {
  const fleet = await api('/api/fleet?release=' + encodeURIComponent(release));
  document.getElementById('fleet-summary').textContent = fleet.deployments + ' deployments · heap ' + bytes(fleet.heapBytes)
    + ' · off-heap ' + bytes(fleet.offHeapBytes) + ' · mapped ' + bytes(fleet.mappedBytes)
    + ' · regressions: ' + (fleet.withRegressions.join(', ') || 'none') + ' · drifting: ' + (fleet.drifting.join(', ') || 'none');
  fill(document.querySelector('#fleet tbody'), fleet.rows, r => [cell(r.deploymentId), cell(r.modelId), cell(r.platform), cell(r.profile),
    cell(bytes(r.heapBytes), 'num'), cell(bytes(r.offHeapBytes), 'num'), cell(bytes(r.mappedBytes), 'num'),
    cell(r.regressions ? r.regressions + ' finding(s)' : '', r.regressions ? 'bad' : ''), cell(r.driftsFromFleet ? 'DRIFT' : '', 'bad')]);
  return fleet;
}

async function showChart(deployment) {
  const loads = (await api('/api/loads?limit=1000&deployment=' + encodeURIComponent(deployment))).filter(l => l.complete).reverse();
  const byRelease = new Map();
  loads.forEach(l => { const t = byRelease.get(l.release) || { heap: 0, off: 0, mmap: 0 }; t.heap += l.heapBytes; t.off += l.offHeapBytes; t.mmap += l.mappedBytes; byRelease.set(l.release, t); });
  const svg = document.getElementById('chart'), width = svg.clientWidth || 600, height = 260, pad = 40;
  const releases = [...byRelease.keys()], max = Math.max(1, ...[...byRelease.values()].map(t => Math.max(t.heap, t.off, t.mmap)));
  const group = (width - pad) / Math.max(1, releases.length), bar = Math.min(40, group / 4);
  let out = '';
  releases.forEach((release, i) => {
    const t = byRelease.get(release), x0 = pad + i * group + group / 2 - 1.5 * bar;
    [['heap', t.heap, 'var(--heap)'], ['off-heap', t.off, 'var(--offheap)'], ['mapped', t.mmap, 'var(--mmap)']].forEach(([name, v, color], j) => {
      const h = (height - 2 * pad) * v / max, x = x0 + j * bar, y = height - pad - h;
      out += `<rect x="${x}" y="${y}" width="${bar - 2}" height="${h}" fill="${color}"><title>${release} ${name} ${bytes(v)}</title></rect>`;
      out += `<text x="${x + bar / 2 - 1}" y="${y - 4}" font-size="10" text-anchor="middle">${bytes(v)}</text>`;
    });
    out += `<text x="${x0 + 1.5 * bar}" y="${height - pad + 16}" text-anchor="middle">${release}</text>`;
  });
  svg.innerHTML = out + `<line x1="${pad}" x2="${width}" y1="${height - pad}" y2="${height - pad}" stroke="#8a9ba8"/>`;
  return loads;
}

async function showDiff(loads) {
  const releases = [...new Set(loads.map(l => l.release))];
  const body = document.querySelector('#diff tbody');
  if (releases.length < 2) { document.getElementById('diff-title').textContent = '(needs two releases)'; body.replaceChildren(); return; }
  const [from, to] = releases.slice(-2), model = loads[loads.length - 1].modelId, deployment = loads[0].deploymentId;
  const diff = await api(`/api/diff?deployment=${encodeURIComponent(deployment)}&model=${encodeURIComponent(model)}&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`);
  document.getElementById('diff-title').textContent = `${deployment} · ${model} · ${from} → ${to}`;
  document.getElementById('diff-counts').textContent = Object.entries(diff.countsByKind).map(([k, v]) => k + ' ' + v).join(' · ') || 'no changes';
  fill(body, diff.findings, f => {
    const why = document.createElement('td'); why.className = 'reason';
    why.textContent = (f.beforeReason || '') + (f.afterReason ? '  →  ' + f.afterReason : '');
    return [cell(f.kind, f.kind === 'LOST_MAPPING' || f.kind.endsWith('GROWTH') ? 'bad' : ''), cell(f.tensorName || '(load total)'),
      tag(f.beforeDomain), tag(f.afterDomain), why];
  });
}

async function showAlerts() {
  const alerts = await api('/api/alerts?limit=50');
  fill(document.querySelector('#alerts tbody'), alerts, a => [cell(a.kind, 'bad'), cell(a.deploymentId), cell(a.fromRelease + ' → ' + a.toRelease),
    cell((a.deltaBytes >= 0 ? '+' : '') + bytes(a.deltaBytes), 'num'), cell(a.suppressedBy ? 'suppressed: ' + a.suppressedBy : a.rule, a.suppressedBy ? 'muted' : '')]);
}

async function main() {
  try {
    const loads = await api('/api/loads?limit=1000');
    const releases = [...new Set(loads.slice().reverse().map(l => l.release))];
    const deployments = [...new Set(loads.map(l => l.deploymentId))].sort();
    const releaseSelect = document.getElementById('release'), deploymentSelect = document.getElementById('deployment');
    releases.forEach(r => releaseSelect.add(new Option(r, r)));
    deployments.forEach(d => deploymentSelect.add(new Option(d, d)));
    releaseSelect.value = releases[releases.length - 1];
    const fleet = await showFleet(releaseSelect.value);
    if (fleet.withRegressions.length) { deploymentSelect.value = fleet.withRegressions[0]; }
    const history = deployments.length ? await showChart(deploymentSelect.value) : [];
    await showDiff(history);
    await showAlerts();
    releaseSelect.onchange = () => showFleet(releaseSelect.value);
    deploymentSelect.onchange = async () => showDiff(await showChart(deploymentSelect.value));
    document.body.dataset.ready = 'true';
  } catch (e) {
    if (e instanceof SignInNeeded) { askForToken(); return; }
    document.getElementById('error').textContent = e.message;
  }
}
main();
