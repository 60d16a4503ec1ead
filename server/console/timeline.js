// timeline.js: the timeline panel of a trainctl console job page (#/jobs/{id}): each replica's
// runs as bars over time, from the job's creation to now (or its end), so that a restart storm
// or a straggling start shows at a glance. Drawn as inline SVG from what the job page already
// reads: the job (its replicas, attempts and gang restarts) and its events (GET /v1/events):
//
//   ReplicaStarted                        a run starts (on the event's node)
//   ReplicaExited, ReplicaHung,           a run ends; its reason says how: "exited with status
//   ReplicaLost, LaunchTimedOut             3 (class USER_ERROR, ...)", "... status 0; ..."
//   ReplicaStopped                        a run stopped by trainctl: cancel, move, gang restart or
//                                           preemption (its reason says which)
//   ReplicaStopping                       the stop was asked for (shown in the run's tooltip)
//   ReplicaMoved                          a marker on the replica's row: it changes node
//   JobPreempting                         a marker across every row
//   attempts[].gangRestarts (or           a marker across every row, "G<generation>"
//     GangRestarting events)
//   attempts[].startTime                  a dashed line, "#<number>", for every later attempt
//
// Bars are coloured by how the run ended (succeeded, failed by its failure class, stopped,
// preempted, moved; open while it runs) and carry a <title> tooltip with node, start, end and
// exit. Loaded after app.js, whose helpers it takes from window.trainctl; adds
// window.trainctl.timelinePanel, which job.js uses. Every piece of server text reaches the page
// as a text node or an attribute.
'use strict';

(function () {
  const tc = window.trainctl;
  const {TERMINAL, h, replaceContent, jobState, replicaState, parseTime, fmtDurationMs} = tc;

  const SVG_NS = 'http://www.w3.org/2000/svg';
  const MAX_ROWS = 64;         // replicas drawn; the rest are counted in a note
  const ROW_H = 20;            // px per replica row
  const BAR_H = 12;
  const AXIS_H = 26;           // the time axis above the rows
  const LABEL_W = 130;         // the replica names left of the bars
  const MIN_BAR_W = 2;         // a run shorter than a pixel still shows
  const LIVE_REDRAW_MS = 5000; // open bars grow while the job runs
  const END_TYPES = new Set(['ReplicaExited', 'ReplicaHung', 'ReplicaLost', 'LaunchTimedOut']);
  const LIVE_REPLICA = new Set(['STARTING', 'RUNNING', 'STOPPING']);
  const OUTCOMES = [
    ['succeeded', 'succeeded'], ['failed', 'failed'], ['class-transient', 'failed: transient'],
    ['class-out-of-memory', 'failed: out of memory'], ['class-infra', 'failed: internal / host'],
    ['stopped', 'stopped'], ['preempted', 'preempted'], ['moved', 'moved'],
    ['running', 'running'], ['unknown', 'unknown end'],
  ];
  const MARKS = [['gang', 'gang restart'], ['preempt', 'preemption'], ['move', 'move'],
                 ['attempt', 'new attempt']];

  // s('tag', {attrs}, child...): an SVG element, as h() makes HTML ones. "className" sets the
  // class attribute, "testid" data-testid; strings become text nodes.
  function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVG_NS, tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === 'className') {
        el.setAttribute('class', value);
      } else if (key === 'testid') {
        el.setAttribute('data-testid', value);
      } else {
        el.setAttribute(key, String(value));
      }
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  // --- From events to runs -------------------------------------------------------------------

  // How a run ended, from the event that ended it: {outcome, cls, summary}.
  function endOf(type, reason) {
    reason = reason || '';
    const m = /\(class ([A-Z_]+)/.exec(reason);
    const cls = m ? m[1] : type === 'ReplicaHung' ? 'HUNG' : /host fault/i.test(reason) ?
        'HOST_FAULT' : type === 'ReplicaLost' || type === 'LaunchTimedOut' ? 'INTERNAL' : '';
    const summary = summaryOf(reason);
    if (type === 'ReplicaStopped') {
      if (/preempt/i.test(reason)) return {outcome: 'preempted', cls: '', summary};
      if (/to move/.test(reason)) return {outcome: 'moved', cls: '', summary};
      return {outcome: 'stopped', cls: '', summary};
    }
    if (/: moving it|; moving/.test(reason) && !cls) return {outcome: 'moved', cls: '', summary};
    if (!cls && /exited with status 0(?!\d)/.test(reason) && !/consequence of/.test(reason)) {
      return {outcome: 'succeeded', cls: '', summary};
    }
    return {outcome: 'failed', cls, summary};
  }

  // "Replica w-0 on node-1 exited with status 3 (class ...); ..." -> "exited with status 3".
  function summaryOf(reason) {
    const m = /^Replica \S+ on \S* ?(.*?)(?: \(class |; |: a consequence|: failing|$)/.exec(reason);
    return m ? m[1] : reason.split(/; |: /)[0];
  }

  // The CSS classes of a run's bar.
  function barClass(run) {
    let kind = run.outcome;
    if (kind === 'failed') {
      if (run.cls === 'TRANSIENT' || run.cls === 'HUNG') kind = 'class-transient';
      else if (run.cls === 'OUT_OF_MEMORY') kind = 'class-out-of-memory';
      else if (run.cls === 'INTERNAL' || run.cls === 'HOST_FAULT') kind = 'class-infra';
    }
    return 'tl-run tl-' + kind;
  }

  // {rows: Map name -> {name, runs, marks}, marks: [...]} from the job and its events (oldest
  // first). A run is {start, end (null while open), node, attempt, outcome, cls, summary, reason,
  // stopAsked}; a mark {kind: 'move'|'gang'|'preempt'|'attempt', time, label, text}.
  function derive(job, events) {
    const rows = new Map();
    const rowOf = (name) => {
      if (!rows.has(name)) rows.set(name, {name, runs: [], marks: []});
      return rows.get(name);
    };
    for (const r of job.replicas || []) rowOf(r.name);
    const marks = [];
    const gangEvents = [];
    for (const e of events) {
      const t = parseTime(e.time);
      if (t === null) continue;
      const type = e.type || '';
      if (type === 'JobPreempting') {
        marks.push({kind: 'preempt', time: t, label: 'P', text: 'preempted: ' + (e.reason || '')});
        continue;
      }
      if (type === 'GangRestarting') {
        gangEvents.push({kind: 'gang', time: t, label: 'G',
                         text: 'gang restart: ' + (e.reason || '')});
        continue;
      }
      if (!e.replica) continue;
      const row = rowOf(e.replica);
      const last = row.runs.length ? row.runs[row.runs.length - 1] : null;
      const open = last && last.end === null ? last : null;
      if (type === 'ReplicaStarted') {
        if (open) Object.assign(open, {end: t, outcome: 'unknown', summary: 'no exit recorded'});
        row.runs.push({start: t, end: null, node: e.node || '', attempt: e.attempt || 0,
                       outcome: 'running', cls: '', summary: '', reason: '', stopAsked: null});
      } else if (END_TYPES.has(type) || type === 'ReplicaStopped') {
        const end = endOf(type, e.reason);
        if (open) {
          Object.assign(open, end, {end: t, reason: e.reason || ''});
        } else if (last && END_TYPES.has(type) && /settle window/.test(last.reason)) {
          // A gang's settle window, then the decision on the same exit: keep the later word.
          Object.assign(last, end, {reason: e.reason || ''});
        } else if (END_TYPES.has(type)) {
          // Ended without a start (it could not launch): a run of no length.
          row.runs.push(Object.assign({start: t, end: t, node: e.node || '',
                                       attempt: e.attempt || 0, stopAsked: null}, end,
                                      {reason: e.reason || ''}));
        }
      } else if (type === 'ReplicaStopping') {
        if (open && open.stopAsked === null) open.stopAsked = t;
      } else if (type === 'ReplicaMoved') {
        row.marks.push({kind: 'move', time: t, label: '', text: e.reason || 'moved'});
      }
    }
    // Gang restarts: the attempts' records are complete even when the events are cut.
    const attempts = job.attempts || [];
    const recorded = [];
    for (const a of attempts) {
      for (const g of a.gangRestarts || []) {
        const t = parseTime(g.time);
        if (t === null) continue;
        const cause = g.cause || {};
        recorded.push({kind: 'gang', time: t, label: 'G' + (g.generation || 0),
                       text: 'gang restart, generation ' + (g.generation || 0) +
                             (cause.replica ? ': ' + cause.replica + ' ' + (cause.summary || '')
                                            : '') +
                             (cause.failureClass ? ' (' + cause.failureClass + ')' : '') +
                             (g.matchedRule ? ' [' + g.matchedRule + ']' : '')});
      }
    }
    marks.push(...(recorded.length ? recorded : gangEvents));
    const p = job.preemption;
    const pt = p ? parseTime(p.decisionTime) : null;
    if (pt !== null && !marks.some((m) => m.kind === 'preempt' && Math.abs(m.time - pt) < 2000)) {
      marks.push({kind: 'preempt', time: pt, label: 'P',
                  text: 'preempted' + (p.preemptingJob ? ' by ' + p.preemptingJob : '') + ': ' +
                        (p.reason || '')});
    }
    for (const a of attempts.slice(1)) {
      const t = parseTime(a.startTime);
      if (t !== null) {
        marks.push({kind: 'attempt', time: t, label: '#' + (a.number || 0),
                    text: 'attempt ' + (a.number || 0) + ' started'});
      }
    }
    reconcile(job, rows);
    return {rows, marks};
  }

  // The job is read more often than the events: its replicas close or open their last run
  // where the events do not say so yet.
  function reconcile(job, rows) {
    const terminal = TERMINAL.has(jobState(job.state));
    for (const r of job.replicas || []) {
      const row = rows.get(r.name);
      const last = row.runs.length ? row.runs[row.runs.length - 1] : null;
      const st = replicaState(r.state);
      const start = parseTime(r.startTime);
      // Running by the job, but its start is not among the events (yet): an open run.
      if (LIVE_REPLICA.has(st) && !terminal && start !== null &&
          (!last || (last.end !== null && last.start < start - 2000))) {
        row.runs.push({start, end: null, node: r.node || '', attempt: 0, outcome: 'running',
                       cls: '', summary: '', reason: '', stopAsked: null});
      } else if (last && last.end === null && (terminal || !LIVE_REPLICA.has(st))) {
        const end = parseTime(r.endTime);
        if (end === null && !terminal) continue;
        const outcome = st === 'SUCCEEDED' ? 'succeeded' : st === 'FAILED' ? 'failed' :
            st === 'STOPPED' ? 'stopped' : 'unknown';
        Object.assign(last, {end: end !== null && end >= last.start ? end : null, outcome,
                             summary: r.message || ''});
      }
    }
  }

  // --- The panel -------------------------------------------------------------------------------

  // The timeline of a job page: update(job) with every job read, setEvents(events, cut) with
  // every events read (cut: older events were left out).
  function timelinePanel(scope) {
    const box = h('div', {className: 'timeline-box'});
    const note = h('p', {className: 'muted small', testid: 'timeline-note', hidden: true});
    const legend = h('div', {className: 'timeline-legend small', testid: 'timeline-legend'},
      OUTCOMES.map(([kind, label]) => h('span', {className: 'tl-key'},
        h('span', {className: 'tl-swatch tl-' + kind}), label)),
      MARKS.map(([kind, label]) => h('span', {className: 'tl-key'},
        h('span', {className: 'tl-swatch tl-line-' + kind}), label)));
    const element = h('div', {className: 'timeline', testid: 'job-timeline'}, box, note, legend);
    let job = null;
    let events = [];
    let cut = false;
    let pending = null;

    // Redraws soon, once however many updates come in the meantime.
    function schedule() {
      if (pending !== null) return;
      pending = scope.later(100, () => {
        pending = null;
        draw();
      });
    }

    scope.every(LIVE_REDRAW_MS, () => {
      if (job && !TERMINAL.has(jobState(job.state))) schedule();
    });

    function draw() {
      if (!job) return;
      const {rows, marks} = derive(job, events);
      const all = [...rows.values()];
      const withRuns = all.filter((row) => row.runs.length);
      if (!withRuns.length) {
        replaceContent(box, h('p', {className: 'muted', testid: 'timeline-empty'}, 'No runs yet.'));
        note.hidden = true;
        return;
      }
      const shown = all.slice(0, MAX_ROWS);
      const notes = [];
      if (all.length > shown.length) {
        notes.push('Showing the first ' + shown.length + ' of ' + all.length + ' replicas.');
      }
      if (cut) notes.push('Older events were left out: earlier runs may be missing.');
      note.textContent = notes.join(' ');
      note.hidden = !notes.length;

      const terminal = TERMINAL.has(jobState(job.state));
      const now = Date.now();
      let t0 = parseTime(job.createTime);
      let t1 = terminal ? parseTime(job.endTime) : now;
      for (const row of all) {
        for (const run of row.runs) {
          if (t0 === null || run.start < t0) t0 = run.start;
          if (t1 === null || (run.end !== null && run.end > t1)) t1 = run.end;
        }
      }
      if (t1 === null || t1 <= t0) t1 = t0 + 1000;
      const width = Math.max(480, box.clientWidth || 900);
      const plotW = width - LABEL_W - 12;
      const x = (t) => LABEL_W + Math.max(0, Math.min(1, (t - t0) / (t1 - t0))) * plotW;
      const height = AXIS_H + shown.length * ROW_H + 4;
      const svg = s('svg', {className: 'timeline-svg', testid: 'timeline-svg', width, height,
                            viewBox: '0 0 ' + width + ' ' + height, role: 'img',
                            'aria-label': 'Runs of each replica over time'});
      drawAxis(svg, t0, t1, x, width, height);
      shown.forEach((row, i) => svg.appendChild(drawRow(row, i, x, terminal ? t1 : now, t0)));
      for (const m of marks) {
        if (m.time < t0 || m.time > t1) continue;
        const mx = x(m.time);
        svg.appendChild(s('g', {className: 'tl-mark tl-line-' + m.kind, testid: 'timeline-mark',
                                'data-kind': m.kind},
          s('title', null, m.text + ' · ' + clock(m.time)),
          s('line', {x1: mx, x2: mx, y1: AXIS_H - 8, y2: height - 2}),
          m.label ? s('text', {x: mx + 2, y: AXIS_H - 10, className: 'tl-mark-label'}, m.label)
                  : null));
      }
      replaceContent(box, svg);
    }

    function drawAxis(svg, t0, t1, x, width, height) {
      const span = t1 - t0;
      const step = niceStep(span / 6);
      svg.appendChild(s('line', {className: 'tl-axis', x1: LABEL_W, x2: x(t1), y1: AXIS_H - 4,
                                 y2: AXIS_H - 4}));
      for (let d = 0; d <= span + 1; d += step) {
        const tx = x(t0 + d);
        svg.appendChild(s('g', {className: 'tl-tick'},
          s('title', null, clock(t0 + d)),
          s('line', {x1: tx, x2: tx, y1: AXIS_H - 4, y2: height - 2}),
          tx < width - 40 ? s('text', {x: tx + 2, y: 11}, '+' + fmtDurationMs(d)) : null));
      }
    }

    function drawRow(row, i, x, openEnd, t0) {
      const y = AXIS_H + i * ROW_H;
      const label = row.name.length > 18 ? row.name.slice(0, 17) + '…' : row.name;
      const g = s('g', {className: 'tl-row' + (i % 2 ? ' tl-row-alt' : ''),
                        testid: 'timeline-row-' + row.name, 'data-replica': row.name,
                        'data-runs': row.runs.length},
        s('rect', {className: 'tl-row-bg', x: 0, y, width: '100%', height: ROW_H}),
        s('text', {className: 'tl-label', x: 4, y: y + ROW_H / 2 + 4}, s('title', null, row.name),
          label));
      row.runs.forEach((run, n) => {
        const end = run.end === null ? openEnd : run.end;
        const x0 = x(run.start);
        const w = Math.max(MIN_BAR_W, x(end) - x0);
        const rect = s('rect', {className: barClass(run), x: x0, y: y + (ROW_H - BAR_H) / 2,
                                width: w, height: BAR_H, rx: 2,
                                testid: 'timeline-run-' + row.name + '-' + (n + 1),
                                'data-outcome': run.outcome, 'data-class': run.cls || null,
                                'data-node': run.node || null},
          s('title', null, tooltip(row.name, n + 1, run, t0)));
        g.appendChild(rect);
      });
      for (const m of row.marks) {
        const mx = x(m.time);
        g.appendChild(s('g', {className: 'tl-mark tl-line-move', testid: 'timeline-mark',
                              'data-kind': m.kind},
          s('title', null, m.text + ' · ' + clock(m.time)),
          s('path', {d: 'M' + (mx - 4) + ' ' + (y + 1) + 'h8l-4 6z'}),
          s('line', {x1: mx, x2: mx, y1: y + 1, y2: y + ROW_H - 1})));
      }
      return g;
    }

    function tooltip(name, n, run, t0) {
      const lines = [name + ' · run ' + n + (run.attempt ? ' (attempt ' + run.attempt + ')' : '') +
                     (run.node ? ' on ' + run.node : '')];
      lines.push('started ' + clock(run.start) + ' (+' + fmtDurationMs(run.start - t0) + ')');
      if (run.stopAsked !== null) lines.push('stop asked ' + clock(run.stopAsked));
      if (run.end === null) {
        lines.push('running for ' + fmtDurationMs(Date.now() - run.start));
      } else {
        lines.push('ended ' + clock(run.end) + ' after ' + fmtDurationMs(run.end - run.start));
        lines.push(run.outcome + (run.cls ? ' (' + run.cls + ')' : '') +
                   (run.summary ? ': ' + run.summary : ''));
      }
      if (run.reason && run.reason !== run.summary) lines.push(run.reason);
      return lines.join('\n');
    }

    return {
      element,
      update(next) {
        job = next;
        schedule();
      },
      setEvents(next, wasCut) {
        events = next;
        cut = Boolean(wasCut);
        schedule();
      },
    };
  }

  function clock(ms) {
    return new Date(ms).toLocaleString();
  }

  // A tick spacing near `ms` that reads well: 1s, 2s, 5s, 10s, 15s, 30s, 1m, 2m, 5m, ... 1d.
  function niceStep(ms) {
    const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
                   43200, 86400];
    for (const sec of steps) {
      if (sec * 1000 >= ms) return sec * 1000;
    }
    return Math.ceil(ms / 86400000) * 86400000;
  }

  tc.timelinePanel = timelinePanel;
})();
