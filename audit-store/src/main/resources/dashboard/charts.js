// The dashboard's charts, drawn as SVG from the API's JSON: bytes per domain over a deployment's loads, and an
// incident's exposure over time. Both are steps: a value holds until the next event changes it (a load, a deployment
// joining or leaving the incident), so a line is flat between events and jumps at each.

const SVG_NS = 'http://www.w3.org/2000/svg';

/** An empty chart and the function that adds a shape (with its text, if any) to it. */
function svgCanvas(id, width, height, label) {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('id', id);
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  const add = (name, attrs, text) => { const n = document.createElementNS(SVG_NS, name); Object.entries(attrs).forEach(([k, v]) => n.setAttribute(k, v));
    if (text !== undefined) n.textContent = text; svg.appendChild(n); return n; };
  return [svg, add];
}

/**
 * Heap, off-heap and mapped bytes of each load on a time axis: one line per domain, a point per load, drawn as steps:
 * a load's bytes hold until the next load, so the line is flat between loads and jumps at each.
 */
function chart(loads) {
  const width = 900, height = 260, pad = 56;
  const [svg, add] = svgCanvas('chart', width, height, 'bytes per domain over time');
  if (!loads.length) { add('text', { x: pad, y: height / 2 }, 'no complete load yet'); return svg; }
  const times = loads.map(l => Date.parse(l.occurredAt));
  const t0 = Math.min(...times), t1 = Math.max(...times), span = Math.max(1, t1 - t0);
  const max = Math.max(1, ...loads.map(l => Math.max(l.heapBytes, l.offHeapBytes, l.mappedBytes, l.observedOffHeapBytes || 0,
    l.observedMappedBytes || 0, l.observedHeapBytes || 0)));
  const x = t => pad + (width - 2 * pad) * (loads.length === 1 ? 0.5 : (t - t0) / span);
  const y = v => height - pad - (height - 2 * pad) * v / max;
  add('line', { x1: pad, x2: width - pad, y1: height - pad, y2: height - pad, stroke: '#8a9ba8' });
  add('line', { x1: pad, x2: pad, y1: pad / 2, y2: height - pad, stroke: '#8a9ba8' });
  [0, 0.5, 1].forEach(f => add('text', { x: pad - 6, y: y(max * f) + 4, 'text-anchor': 'end', 'font-size': 11, class: 'y-tick' }, bytes(max * f)));
  const ticks = loads.length === 1 ? [t0] : [t0, t0 + span / 2, t1];
  ticks.forEach(t => add('text', { x: x(t), y: height - pad + 18, 'text-anchor': 'middle', 'font-size': 11, class: 'time-tick' },
    new Date(t).toISOString().slice(0, 16).replace('T', ' ')));
  [['heapBytes', 'var(--heap)', 'heap'], ['offHeapBytes', 'var(--offheap)', 'off-heap'], ['mappedBytes', 'var(--mmap)', 'mapped']].forEach(([key, color, name]) => {
    const steps = loads.flatMap((l, i) => (i > 0 ? [x(times[i]) + ',' + y(loads[i - 1][key])] : []).concat([x(times[i]) + ',' + y(l[key])]));
    add('polyline', { points: steps.join(' '), fill: 'none', stroke: color, 'stroke-width': 2, class: 'series ' + key });
    loads.forEach((l, i) => add('circle', { cx: x(times[i]), cy: y(l[key]), r: 3, fill: color }).appendChild(
      Object.assign(document.createElementNS(SVG_NS, 'title'), { textContent: `${l.release} ${name} ${bytes(l[key])}` })));
  });
  // What runtimes observed, where they reported it: dashed, a point per observed load.
  [['observedHeapBytes', 'var(--heap)', 'heap observed'], ['observedOffHeapBytes', 'var(--offheap)', 'off-heap observed'],
    ['observedMappedBytes', 'var(--mmap)', 'mapped observed']].forEach(([key, color, name]) => {
    const seen = loads.map((l, i) => [l, i]).filter(([l]) => l[key] !== null && l[key] !== undefined);
    if (!seen.length) return;
    // Steps, as the planned series: what a runtime observed holds until its next observed load.
    const points = seen.flatMap(([l, i], j) => (j > 0 ? [x(times[i]) + ',' + y(Math.max(0, seen[j - 1][0][key]))] : [])
      .concat([x(times[i]) + ',' + y(Math.max(0, l[key]))]));
    add('polyline', { points: points.join(' '), fill: 'none', stroke: color, 'stroke-width': 2, 'stroke-dasharray': '5 4', class: 'series ' + key });
    seen.forEach(([l, i]) => add('circle', { cx: x(times[i]), cy: y(Math.max(0, l[key])), r: 3, fill: 'none', stroke: color }).appendChild(
      Object.assign(document.createElementNS(SVG_NS, 'title'), { textContent: `${l.release} ${name} ${bytes(l[key])}` })));
  });
  loads.forEach((l, i) => { if (i === 0 || loads[i - 1].release !== l.release) {
    add('text', { x: x(times[i]), y: pad / 2 + 10, 'text-anchor': 'middle', 'font-size': 11, class: 'release-tick' }, l.release); } });
  return svg;
}

/**
 * How many deployments showed an incident over time, of those on its release now: a step per change, held until now
 * (or the last change, when the incident is resolved).
 */
function exposureChart(points, onRelease, until) {
  const width = 900, height = 200, pad = 56;
  const [svg, add] = svgCanvas('exposure-chart', width, height, 'deployments showing the incident over time');
  if (!points.length) { add('text', { x: pad, y: height / 2 }, 'never shown'); return svg; }
  const times = points.map(p => Date.parse(p.at));
  const end = Math.max(times[times.length - 1], until || 0);
  const t0 = times[0], span = Math.max(1, end - t0);
  const max = Math.max(1, onRelease, ...points.map(p => p.showing));
  const x = t => pad + (width - 2 * pad) * (t - t0) / span;
  const y = v => height - pad - (height - 2 * pad) * v / max;
  add('line', { x1: pad, x2: width - pad, y1: height - pad, y2: height - pad, stroke: '#8a9ba8' });
  add('line', { x1: pad, x2: pad, y1: pad / 2, y2: height - pad, stroke: '#8a9ba8' });
  [0, max].forEach(v => add('text', { x: pad - 6, y: y(v) + 4, 'text-anchor': 'end', 'font-size': 11, class: 'y-tick' }, String(v)));
  [t0, end].forEach(t => add('text', { x: x(t), y: height - pad + 18, 'text-anchor': 'middle', 'font-size': 11, class: 'time-tick' },
    new Date(t).toISOString().slice(0, 16).replace('T', ' ')));
  const steps = points.flatMap((p, i) => (i > 0 ? [x(times[i]) + ',' + y(points[i - 1].showing)] : []).concat([x(times[i]) + ',' + y(p.showing)]));
  if (end > times[times.length - 1]) { steps.push(x(end) + ',' + y(points[points.length - 1].showing)); }
  add('polyline', { points: steps.join(' '), fill: 'none', stroke: 'var(--offheap)', 'stroke-width': 2, class: 'series exposure' });
  points.forEach((p, i) => add('circle', { cx: x(times[i]), cy: y(p.showing), r: 3, fill: 'var(--offheap)' }).appendChild(
    Object.assign(document.createElementNS(SVG_NS, 'title'), { textContent: `${p.at}: ${p.showing} of ${onRelease}` })));
  return svg;
}
