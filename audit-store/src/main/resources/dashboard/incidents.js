// Incidents, one per cause across the fleet: the list of all of them by state (open, acknowledged, resolved), filtered by
// release and model, and one incident's page: its cause, tensors, deployments and exposure over time.

/** What a runtime said of its own loads on one release (planned against observed), not a change between releases. */
const RUNTIME_KINDS = ['UNPLANNED_OFFHEAP', 'MAPPING_NOT_OBSERVED', 'DIVERGED'];

function releasesText(i) { return !i.fromRelease || i.fromRelease === i.toRelease ? 'on ' + i.toRelease : i.fromRelease + ' → ' + i.toRelease; }
const DOMAIN_NAMES = { HOST_HEAP: 'heap', HOST_OFFHEAP: 'off-heap', MMAP_FILE: 'mapped' };
function side(domain, format, reason) { return [domain ? DOMAIN_NAMES[domain] || domain : '(none)', format, reason].filter(v => v).join(', '); }
function incidentsHash(params) { return '#incidents' + (Object.keys(params).length ? '?' + query(params) : ''); }

/** open: pages someone; acknowledged: open, with an acknowledgement still running; resolved: no deployment shows it now. */
function incidentState(i) {
  if (i.state !== 'OPEN') return 'resolved';
  return ackActive(i.acknowledged) ? 'acknowledged' : 'open';
}

function incidentRow(i) {
  const state = incidentState(i);
  return el('tr', { class: 'incident ' + state },
    td(state, state === 'open' ? 'bad' : 'muted'), td(link(i.incidentId, incidentHash(i.incidentId))), td(i.modelId),
    td(releasesText(i)), td(i.primaryKind), td(`${i.showing} of ${i.onRelease}`, 'num'), td(percent(i.exposure), 'num'),
    td(bytes(i.bytesMoved), 'num'),
    td([el('div', { class: 'cause' }, i.cause), i.acknowledged ? el('div', { class: 'muted' }, ackText(i.acknowledged)) : '']));
}

const INCIDENT_COLUMNS = ['state', 'incident', 'model', 'releases', 'kind', { text: 'affected of on release', num: true },
  { text: 'exposure', num: true }, { text: 'bytes moved', num: true }, 'cause'];

async function incidentsView(params) {
  const [all, releases] = await Promise.all([api('/api/incidents?' + query(Object.assign({ limit: LIST_LIMIT },
    params.release ? { release: params.release } : {}, params.model ? { model: params.model } : {}))), api('/api/releases')]);
  const models = [...new Set(all.map(i => i.modelId).concat(params.model ? [params.model] : []))].sort();
  const picker = (id, label, values, chosen) => {
    const select = el('select', { id }, el('option', { value: '' }, 'any ' + label),
      values.map(v => el('option', v === chosen ? { value: v, selected: '' } : { value: v }, v)));
    select.onchange = () => { location.hash = incidentsHash(Object.fromEntries(Object.entries({ release: document.getElementById('release-filter').value,
      model: document.getElementById('model-filter').value }).filter(([, v]) => v))); };
    return select;
  };
  const groups = ['open', 'acknowledged', 'resolved'].map(state => {
    const those = all.filter(i => incidentState(i) === state);
    return el('div', { class: 'incident-group', id: 'incidents-' + state },
      el('h3', {}, `${state[0].toUpperCase()}${state.slice(1)} (${those.length})`),
      those.length ? table(INCIDENT_COLUMNS, those.map(incidentRow), 'incidents ' + state) : el('p', { class: 'muted' }, 'None.'));
  });
  return [section('Incidents, one per cause across the fleet',
    el('p', {}, 'Release ', picker('release-filter', 'release', releases, params.release), ' · model ',
      picker('model-filter', 'model', models, params.model)),
    groups, truncated(all.length, LIST_LIMIT, 'incidents'))];
}

async function incident(params) {
  const d = await api('/api/incident?' + query({ id: params.id }));
  const i = d.incident;
  const runtime = RUNTIME_KINDS.includes(i.primaryKind);
  const rows = d.deployments.map(x => el('tr', { class: x.showing ? 'showing' : 'left' },
    td(link(x.deploymentId, historyHash(x.deploymentId, i.modelId))), td(x.showing ? 'showing' : 'left', x.showing ? 'bad' : 'muted'),
    td(x.loads, 'num'), td(bytes(x.bytesMoved), 'num'), td(signed(x.offHeapDelta), 'num'), td(signed(x.mappedDelta), 'num'),
    td(x.firstSeen.replace('T', ' ').replace('Z', '')), td(x.lastSeen.replace('T', ' ').replace('Z', '')),
    td(runtime ? link('planned against observed', historyHash(x.deploymentId, i.modelId))
      : link('diff', diffHash(x.deploymentId, i.modelId, i.fromRelease, i.toRelease)))));
  const example = d.deployments.find(x => x.showing) || d.deployments[0];
  // A runtime's incident is one release planned against observed: its example is the deployment's history, not a diff.
  const representative = example && !runtime ? await diff({ deployment: example.deploymentId, model: i.modelId, from: i.fromRelease, to: i.toRelease })
    .catch(() => [el('p', { class: 'muted' }, 'The example deployment\'s loads are no longer in the store.')]) : [];
  return [section(`Incident ${i.incidentId}: ${i.modelId} · ${releasesText(i)}`,
    el('p', { class: i.state === 'OPEN' ? 'bad' : 'muted', id: 'incident-state' }, `${i.state} · ${i.primaryKind} · ${i.exposureText} · `
      + `${bytes(i.bytesMoved)} moved · seen ${i.firstSeen} .. ${i.lastSeen} in ${i.loads} load(s)`),
    el('p', { class: 'cause' }, i.cause),
    el('p', { class: 'muted' }, `${runtime ? 'planned' : 'before'}: ${side(d.beforeDomain, d.beforeFormat, d.beforeReason)} · `
      + `${runtime ? 'observed' : 'after'}: ${side(d.afterDomain, d.afterFormat, d.afterReason)} · kinds: ${i.kinds.join(', ')}`),
    i.acknowledged ? el('p', { class: 'muted' }, ackText(i.acknowledged)) : '',
    // Its tensors in view when there are a few; folded when there are many.
    i.tensorCount ? el('details', { id: 'incident-tensors', open: i.tensorCount <= 20 ? '' : null }, el('summary', {}, `${i.tensorCount} tensor(s)`),
      el('ul', {}, d.tensors.map(t => el('li', {}, link(t, tensorHash(example ? example.deploymentId : '', i.modelId, t))))))
      : el('p', { class: 'muted' }, 'No tensor named: the runtime measured bytes per domain.'),
    el('h3', {}, `Deployments: ${i.showing} showing it now, ${i.affected} ever`),
    table(['deployment', 'now', { text: 'loads', num: true }, { text: 'bytes moved', num: true }, { text: 'off-heap', num: true },
      { text: 'mapped', num: true }, 'first seen', 'last seen', ''], rows, 'deployments'),
    el('h3', {}, `Exposure over time (deployments showing it, of ${i.onRelease} on ${i.toRelease} now)`),
    exposureChart(d.exposureOverTime, i.onRelease, i.state === 'OPEN' ? Date.now() : null),
    table(['from', { text: 'showing', num: true }], d.exposureOverTime.map(p => el('tr', {}, td(p.at.replace('T', ' ').replace('Z', '')),
      td(`${p.showing} (${percent(i.onRelease ? p.showing / i.onRelease : 0)})`, 'num'))), 'exposure')),
    example ? el('h3', {}, `One of them: ${example.deploymentId}`) : '',
    example && runtime ? el('p', {}, link('bytes over time, planned against observed', historyHash(example.deploymentId, i.modelId))) : '',
    ...representative];
}

