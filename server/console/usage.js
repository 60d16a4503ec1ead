// usage.js: the usage page of the trainctl web console (#/usage): what each project used over
// time, from trainctld's hourly usage rollup (GET /v1/usage, UsageService.GetUsage). A stacked bar
// chart, one bar per time bucket, each project a coloured segment, of GPU-, CPU- or memory-hours,
// and a table of each project's totals over the range:
//
//   #/usage?range=24h&resource=cpu     the last 24 hours by hour (the default), CPU-hours
//   #/usage?range=7d&resource=gpu      the last 7 days by day, GPU-hours
//   #/usage?range=30d&resource=memory  the last 30 days by day, memory GiB-hours
//
// GetUsage sums one dimension over one range, so each bucket is one request (?by=project with the
// bucket's since and until). The rollup counts every hour that overlaps a range whole, so bucket
// edges fall on whole hours (a day starts at the whole hour at or before local midnight) and no
// hour counts in two buckets. A member's token sees their projects' rows alone. Loaded after
// app.js, whose helpers it takes from window.trainctl; registers window.trainctl.views.usage.
// Every piece of server text reaches the page as a text node or an attribute.
'use strict';

(function () {
  const tc = window.trainctl;
  const {h, num, replaceContent, api, enc, showError, clearError, main, poll, sectionTitle} = tc;

  const SVG_NS = 'http://www.w3.org/2000/svg';
  const REFRESH_MS = 15000;
  const HOUR_MS = 3600 * 1000;
  const COLOURS = 10;        // usage-c0 .. usage-c9 in style.css, then round again
  const CHART_H = 220;       // px of the plot area
  const TOP = 22;            // the unit above it
  const AXIS_W = 64;         // the value axis left of the bars
  const LABEL_H = 34;        // the bucket labels under the bars
  const RANGES = {
    '24h': {label: 'Last 24 hours, by hour', buckets: 24, daily: false},
    '7d': {label: 'Last 7 days, by day', buckets: 7, daily: true},
    '30d': {label: 'Last 30 days, by day', buckets: 30, daily: true},
  };
  const RESOURCES = {
    gpu: {label: 'GPU-hours', unit: 'GPU-h', of: (r) => num(r.gpuSeconds) / 3600},
    cpu: {label: 'CPU-hours', unit: 'CPU-h', of: (r) => num(r.cpuSeconds) / 3600},
    memory: {label: 'Memory GiB-hours', unit: 'GiB-h', of: (r) => num(r.memoryMbSeconds) / 1024 / 3600},
  };

  // s('tag', {attrs}, child...): an SVG element, as timeline.js makes them.
  function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVG_NS, tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === 'className') el.setAttribute('class', value);
      else if (key === 'testid') el.setAttribute('data-testid', value);
      else el.setAttribute(key, String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  const floorHour = (ms) => Math.floor(ms / HOUR_MS) * HOUR_MS;

  // The range's buckets, oldest first: {since, until (ms), label}. The last one holds now.
  function bucketsOf(range, now) {
    const out = [];
    if (!range.daily) {
      const end = floorHour(now) + HOUR_MS;
      for (let i = range.buckets; i > 0; i--) {
        const since = end - i * HOUR_MS;
        const d = new Date(since);
        out.push({since, until: since + HOUR_MS,
                  label: String(d.getHours()).padStart(2, '0') + ':00',
                  title: d.toLocaleString()});
      }
      return out;
    }
    const today = new Date(now);
    const dayStart = (offset) => floorHour(
        new Date(today.getFullYear(), today.getMonth(), today.getDate() + offset).getTime());
    for (let i = range.buckets - 1; i >= 0; i--) {
      const since = dayStart(-i);
      const d = new Date(since);
      out.push({since, until: dayStart(-i + 1),
                label: d.toLocaleDateString(undefined, {month: 'short', day: 'numeric'}),
                title: d.toLocaleDateString(undefined, {weekday: 'long', year: 'numeric',
                                                        month: 'long', day: 'numeric'})});
    }
    return out;
  }

  // Hours read well at any size: 2 decimals, or 2 significant digits below 0.01.
  function fmtHours(n) {
    if (!n) return '0';
    if (Math.abs(n) >= 0.01) return String(Math.round(n * 100) / 100);
    return String(Number(n.toPrecision(2)));
  }

  function usageView(scope, params) {
    let rangeKey = RANGES[params.get('range')] ? params.get('range') : '24h';
    let resourceKey = RESOURCES[params.get('resource')] ? params.get('resource') : 'cpu';
    let lastKey = null;
    const option = (value, label, selected) => h('option', {value, selected}, label);
    const rangeSelect = h('select', {testid: 'usage-range', 'aria-label': 'Range'},
      Object.entries(RANGES).map(([k, r]) => option(k, r.label, k === rangeKey)));
    const resourceSelect = h('select', {testid: 'usage-resource', 'aria-label': 'Resource'},
      Object.entries(RESOURCES).map(([k, r]) => option(k, r.label, k === resourceKey)));
    const chart = h('div', {className: 'usage-chart-box', testid: 'usage-chart-box'},
                    h('p', {className: 'muted'}, 'Loading…'));
    const table = h('div', {testid: 'usage-body'});
    const updated = h('span', {className: 'muted small'}, '');
    main.appendChild(h('section', {testid: 'usage-view'},
      sectionTitle('Usage', h('div', {className: 'toolbar'},
        h('label', null, 'Range ', rangeSelect),
        h('label', null, 'Show ', resourceSelect),
        h('button', {type: 'button', className: 'btn small', testid: 'usage-refresh',
                     onclick: () => load()}, 'Refresh'),
        updated)),
      h('p', {className: 'muted small'}, 'What each project held (allocated, not measured), ' +
        'from the hourly usage records: an hour counts whole in the bucket it falls in; the ' +
        'current hour is up to a minute behind for jobs still running.'),
      chart, table));

    function remember() {
      const q = new URLSearchParams({range: rangeKey, resource: resourceKey});
      history.replaceState(null, '', '#/usage?' + q);
    }
    rangeSelect.addEventListener('change', () => {
      rangeKey = rangeSelect.value;
      remember();
      load();
    });
    resourceSelect.addEventListener('change', () => {
      resourceKey = resourceSelect.value;
      remember();
      lastKey = null;
      load();
    });

    let generation = 0;
    async function load() {
      const mine = ++generation;
      const buckets = bucketsOf(RANGES[rangeKey], Date.now());
      const c = scope.controller();
      try {
        const answers = await Promise.all(buckets.map((b) => api('GET',
            '/v1/usage?by=project&since=' + enc(new Date(b.since).toISOString()) +
            '&until=' + enc(new Date(b.until).toISOString()), undefined, c.signal)));
        if (scope.closed || mine !== generation) return;
        clearError();
        buckets.forEach((b, i) => { b.rows = answers[i].rows || []; });
        const key = JSON.stringify([rangeKey, resourceKey, buckets]);
        if (key !== lastKey) render(buckets);
        lastKey = key;
        updated.textContent = 'updated ' + new Date().toLocaleTimeString();
      } catch (e) {
        if (!scope.closed) showError(e);
      } finally {
        scope.release(c);
      }
    }

    function render(buckets) {
      // Each project's totals over the range; projects ordered by the shown resource, largest
      // first, and coloured in that order.
      const totals = new Map();
      for (const b of buckets) {
        for (const r of b.rows) {
          const key = r.key || '';
          if (!totals.has(key)) {
            totals.set(key, {key, gpuSeconds: 0, cpuSeconds: 0, memoryMbSeconds: 0, runs: 0,
                             wallSeconds: 0, queueWaitSeconds: 0});
          }
          const t = totals.get(key);
          for (const f of ['gpuSeconds', 'cpuSeconds', 'memoryMbSeconds', 'runs', 'wallSeconds',
                           'queueWaitSeconds']) {
            t[f] += num(r[f]);
          }
        }
      }
      const resource = RESOURCES[resourceKey];
      const projects = [...totals.values()].sort(
          (a, b) => resource.of(b) - resource.of(a) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      const colour = new Map(projects.map((p, i) => [p.key, 'usage-c' + (i % COLOURS)]));
      replaceContent(chart, drawChart(buckets, resource, colour),
        h('div', {className: 'usage-legend small', testid: 'usage-legend'},
          projects.map((p) => h('span', {className: 'tl-key'},
            h('span', {className: 'tl-swatch ' + colour.get(p.key)}), p.key || '(none)'))));
      if (!projects.length) {
        replaceContent(table, h('p', {className: 'empty', testid: 'usage-empty'},
                                'No usage recorded in this range.'));
        return;
      }
      const cell = (text, testid) => h('td', {className: 'num', testid}, text);
      replaceContent(table, h('table', {className: 'grid', testid: 'usage-table'},
        h('thead', null, h('tr', null, ['Project', 'GPU-hours', 'CPU-hours', 'Memory GiB-hours',
                                        'Runs', 'Replica-hours', 'Queue wait (h)']
          .map((t) => h('th', null, t)))),
        h('tbody', null, projects.map((p) => h('tr', {testid: 'usage-row-' + p.key,
                                                      'data-cpu-seconds': p.cpuSeconds},
          h('td', null, h('span', {className: 'tl-swatch ' + colour.get(p.key)}), ' ',
            h('a', {href: '#/jobs?project=' + enc(p.key)}, p.key || '(none)')),
          cell(fmtHours(RESOURCES.gpu.of(p)), 'usage-gpu-' + p.key),
          cell(fmtHours(RESOURCES.cpu.of(p)), 'usage-cpu-' + p.key),
          cell(fmtHours(RESOURCES.memory.of(p)), 'usage-memory-' + p.key),
          cell(String(p.runs), 'usage-runs-' + p.key),
          cell(fmtHours(p.wallSeconds / 3600), 'usage-wall-' + p.key),
          cell(fmtHours(p.queueWaitSeconds / 3600), 'usage-wait-' + p.key))))));
    }

    function drawChart(buckets, resource, colour) {
      const width = Math.max(480, chart.clientWidth || 900);
      const height = TOP + CHART_H + LABEL_H;
      const plotW = width - AXIS_W - 8;
      const slot = plotW / buckets.length;
      const barW = Math.max(3, slot * 0.7);
      const sums = buckets.map((b) => b.rows.reduce((acc, r) => acc + resource.of(r), 0));
      const max = Math.max(...sums);
      const svg = s('svg', {className: 'usage-svg', testid: 'usage-chart', width, height,
                            viewBox: '0 0 ' + width + ' ' + height, role: 'img',
                            'aria-label': resource.label + ' per project over time'});
      const y = (v) => TOP + CHART_H - (max > 0 ? v / max : 0) * CHART_H;
      for (const f of [0, 0.5, 1]) {
        const ty = y(max * f);
        svg.appendChild(s('g', {className: 'usage-grid'},
          s('line', {x1: AXIS_W, x2: width - 8, y1: ty, y2: ty}),
          s('text', {x: AXIS_W - 4, y: ty + 4, className: 'usage-axis-label'},
            f === 0 ? '0' : fmtHours(max * f))));
      }
      svg.appendChild(s('text', {x: 4, y: 12, className: 'usage-axis-unit'}, resource.unit));
      const every = Math.ceil(buckets.length / 12);   // labels that fit
      buckets.forEach((b, i) => {
        const x = AXIS_W + i * slot + (slot - barW) / 2;
        let acc = 0;
        const bar = s('g', {className: 'usage-bucket', testid: 'usage-bucket',
                            'data-since': new Date(b.since).toISOString(),
                            'data-value': sums[i]});
        const rows = [...b.rows].sort((p, q) => resource.of(q) - resource.of(p));
        for (const r of rows) {
          const v = resource.of(r);
          if (!(v > 0)) continue;
          const top = y(acc + v);
          const bottom = y(acc);
          acc += v;
          bar.appendChild(s('rect', {className: 'usage-bar ' + colour.get(r.key || ''),
                                     testid: 'usage-bar', 'data-project': r.key || '',
                                     'data-value': v, x, width: barW, y: Math.min(top, bottom - 1),
                                     height: Math.max(1, bottom - top)},
            s('title', null, (r.key || '(none)') + ' · ' + b.title + ': ' + fmtHours(v) + ' ' +
                             resource.unit)));
        }
        if (i % every === 0) {
          bar.appendChild(s('text', {x: x + barW / 2, y: TOP + CHART_H + 16,
                                     className: 'usage-bucket-label'}, b.label));
        }
        svg.appendChild(bar);
      });
      if (!(max > 0)) {
        svg.appendChild(s('text', {x: AXIS_W + plotW / 2, y: TOP + CHART_H / 2,
                                   className: 'usage-none', testid: 'usage-chart-empty'},
          'No ' + resource.label + ' in this range'));
      }
      return svg;
    }

    load();
    poll(scope, REFRESH_MS, load);
  }

  tc.views.usage = usageView;
})();
