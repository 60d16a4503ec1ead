// app.js: the shared core of the trainctl web console. A single-page app over trainctld's REST
// API (the protobuf JSON mapping of proto/trainctl/v1/job.proto), routed by the URL hash:
//
//   #/jobs          jobs, filtered by state and project, paged, refreshed every few seconds
//   #/jobs/{id}     one job, kept live by its watch stream, with its replicas, attempts, events
//                   and each replica's log, followed as it is written
//   #/queue         queued jobs in admission order with what blocks each one
//   #/nodes         nodes, with cordon, uncordon and drain
//   #/projects      projects: quotas and what they use
//   #/usage         what each project used over time, from the hourly usage records
//
// This file holds what every view shares (DOM helpers, formatting, the API client with its
// Server-Sent Events reader, the error banner and the token bar) and the router. The views live
// in their own files, loaded after this one by index.html: jobs.js (#/jobs), logs.js (the log
// panel of a job page), timeline.js (the runs of a job page's replicas over time), job.js
// (#/jobs/{id}), cluster.js (#/queue, #/nodes, #/projects) and usage.js (#/usage).
// They share one global object, window.trainctl: this file puts its helpers there, each view
// file registers its view in window.trainctl.views, and the first route runs once the document
// (and so every script) has loaded.
//
// Every piece of server text reaches the page through textContent or attributes, never as
// markup. Elements that tests look for carry data-testid attributes. When trainctld requires
// authentication the console asks for a bearer token once (on the first 401), keeps it in
// localStorage and sends it as "Authorization: Bearer ..." on every call, the watch and log
// streams included: those are read with fetch() streams, as EventSource cannot send headers.
'use strict';

(function () {
  const tc = window.trainctl = window.trainctl || {};
  // Each view file adds its view here: views.<name>(scope, ...) renders into <main>.
  const views = tc.views = tc.views || {};
  const TOKEN_KEY = 'trainctl.console.token';
  const JOBS_REFRESH_MS = 3000;
  const VIEW_REFRESH_MS = 5000;
  const JOB_STATES = ['QUEUED', 'PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLING',
                      'CANCELLED'];
  const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

  // --- DOM helpers --------------------------------------------------------------------------

  // h('tag', {attrs}, child...): an element. Strings become text nodes; null, undefined and
  // false children are skipped; arrays are flattened. "on<event>" attributes take functions,
  // "style" an object of style properties.
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    if (attrs) {
      for (const [key, value] of Object.entries(attrs)) {
        if (value === null || value === undefined || value === false) continue;
        if (key.startsWith('on') && typeof value === 'function') {
          el.addEventListener(key.slice(2), value);
        } else if (key === 'className') {
          el.className = value;
        } else if (key === 'style') {
          // Through the CSSOM: trainctld's Content-Security-Policy refuses style attributes.
          Object.assign(el.style, value);
        } else if (key === 'testid') {
          el.setAttribute('data-testid', value);
        } else if (key === 'value') {
          el.value = value;
        } else if (key === 'checked' || key === 'disabled' || key === 'selected') {
          el[key] = Boolean(value);
        } else {
          el.setAttribute(key, value === true ? '' : String(value));
        }
      }
    }
    appendChildren(el, children);
    return el;
  }

  function appendChildren(el, children) {
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      if (Array.isArray(child)) {
        appendChildren(el, child);
      } else if (child instanceof Node) {
        el.appendChild(child);
      } else {
        el.appendChild(document.createTextNode(String(child)));
      }
    }
  }

  function clear(el) {
    while (el.firstChild) el.removeChild(el.firstChild);
    return el;
  }

  function replaceContent(el, ...children) {
    clear(el);
    appendChildren(el, children);
    return el;
  }

  // --- Formatting -------------------------------------------------------------------------

  // "JOB_STATE_RUNNING" -> "RUNNING"; the protobuf JSON mapping omits a zero enum.
  function enumName(value, prefix) {
    if (!value) return 'UNSPECIFIED';
    return String(value).startsWith(prefix) ? String(value).slice(prefix.length) : String(value);
  }
  const jobState = (s) => enumName(s, 'JOB_STATE_');
  const replicaState = (s) => enumName(s, 'REPLICA_STATE_');
  const nodeState = (s) => enumName(s, 'NODE_STATE_');
  const nodeHealth = (s) => enumName(s, 'NODE_HEALTH_');

  function badge(text, kind, testid) {
    return h('span', {className: 'badge badge-' + kind.toLowerCase().replace(/[^a-z0-9]+/g, '-'),
                      testid}, text);
  }

  function num(value) {
    // int64 fields arrive as strings.
    if (value === undefined || value === null || value === '') return 0;
    const n = Number(value);
    return Number.isFinite(n) ? n : 0;
  }

  function fmtNumber(n) {
    if (!Number.isFinite(n)) return '-';
    return Number.isInteger(n) ? String(n) : String(Math.round(n * 100) / 100);
  }

  function fmtMemory(mb) {
    mb = num(mb);
    if (mb >= 1024 * 1024) return fmtNumber(mb / (1024 * 1024)) + ' TiB';
    if (mb >= 1024) return fmtNumber(mb / 1024) + ' GiB';
    return fmtNumber(mb) + ' MiB';
  }

  function parseTime(ts) {
    if (!ts) return null;
    const ms = Date.parse(ts);
    return Number.isFinite(ms) && ms > 0 ? ms : null;
  }

  function fmtDurationMs(ms) {
    const s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return s + 's';
    const m = Math.floor(s / 60);
    if (m < 60) return m + 'm' + (s % 60 ? (s % 60) + 's' : '');
    const hr = Math.floor(m / 60);
    if (hr < 48) return hr + 'h' + (m % 60 ? (m % 60) + 'm' : '');
    return Math.floor(hr / 24) + 'd' + (hr % 24 ? (hr % 24) + 'h' : '');
  }

  // A relative age ("3m ago"), with the absolute time in the title attribute.
  function age(ts, suffix) {
    const ms = parseTime(ts);
    if (ms === null) return h('span', {className: 'muted'}, '-');
    suffix = suffix === undefined ? ' ago' : suffix;
    return h('time', {datetime: ts, 'data-suffix': suffix,
                      title: new Date(ms).toLocaleString() + ' (' + ts + ')'}, ageText(ms, suffix));
  }

  function ageText(ms, suffix) {
    const delta = Date.now() - ms;
    return delta >= 0 ? fmtDurationMs(delta) + suffix : 'in ' + fmtDurationMs(-delta);
  }

  // Ages on the page count on between reloads (views re-render only when their data changed).
  setInterval(() => {
    for (const el of document.querySelectorAll('time[data-suffix]')) {
      const ms = parseTime(el.getAttribute('datetime'));
      if (ms !== null) el.textContent = ageText(ms, el.getAttribute('data-suffix'));
    }
  }, 1000);

  function absTime(ts) {
    const ms = parseTime(ts);
    if (ms === null) return h('span', {className: 'muted'}, '-');
    return h('time', {datetime: ts, title: ts}, new Date(ms).toLocaleString());
  }

  function orDash(v) {
    return v === undefined || v === null || v === '' ? '-' : String(v);
  }

  function exitText(r) {
    if (r.signal !== undefined && r.signal !== null && r.signal !== 0) {
      return 'signal ' + r.signal + (r.oomKilled ? ' (OOM)' : '');
    }
    if (r.exitCode !== undefined && r.exitCode !== null) {
      return String(r.exitCode) + (r.oomKilled ? ' (OOM)' : '');
    }
    return r.oomKilled ? 'OOM' : '-';
  }

  function resourcesText(res) {
    res = res || {};
    const parts = [];
    if (num(res.cpu)) parts.push(fmtNumber(num(res.cpu)) + ' cpu');
    if (num(res.memoryMb)) parts.push(fmtMemory(res.memoryMb));
    if (num(res.gpus)) parts.push(num(res.gpus) + ' gpu');
    return parts.length ? parts.join(', ') : 'none';
  }

  // --- API ---------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  function token() {
    try {
      return localStorage.getItem(TOKEN_KEY) || '';
    } catch (e) {
      return '';
    }
  }

  function headers(extra) {
    const out = Object.assign({Accept: 'application/json'}, extra || {});
    const t = token();
    if (t) out.Authorization = 'Bearer ' + t;
    return out;
  }

  async function errorFrom(resp) {
    let message = resp.status + ' ' + resp.statusText;
    let code = 0;
    try {
      const text = await resp.text();
      try {
        const body = JSON.parse(text);
        if (body && typeof body.message === 'string' && body.message) message = body.message;
        if (body && typeof body.code === 'number') code = body.code;
      } catch (e) {
        if (text.trim()) message = text.trim().slice(0, 500);
      }
    } catch (e) { /* keep the status line */ }
    if (resp.status === 401) showAuthBar(true);
    return new ApiError(resp.status, code, message);
  }

  async function api(method, path, body, signal) {
    // trainctld serves a POST, PUT, PATCH or DELETE only as application/json, an empty body
    // included: a form or a fetch() of another site cannot send that type without asking first.
    const changes = method !== 'GET' && method !== 'HEAD';
    const init = {method, headers: headers(changes ? {'Content-Type': 'application/json'} : {}),
                  signal};
    if (body !== undefined) init.body = JSON.stringify(body);
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      throw new ApiError(0, 14, 'trainctld is unreachable: ' + e.message);
    }
    if (!resp.ok) throw await errorFrom(resp);
    const text = await resp.text();
    return text ? JSON.parse(text) : {};
  }

  // A streamed GET: calls onChunk(Uint8Array) for each piece of the body until it ends.
  async function stream(path, signal, onChunk) {
    const resp = await fetch(path, {headers: headers({Accept: '*/*'}), signal});
    if (!resp.ok) throw await errorFrom(resp);
    if (!resp.body) {
      onChunk(new Uint8Array(await resp.arrayBuffer()));
      return;
    }
    const reader = resp.body.getReader();
    for (;;) {
      const {done, value} = await reader.read();
      if (done) return;
      if (value && value.length) onChunk(value);
    }
  }

  // Server-Sent Events over fetch: calls onEvent(data) for every event's data field.
  async function sse(path, signal, onEvent) {
    const decoder = new TextDecoder();
    let buffer = '';
    const flush = (final) => {
      buffer = buffer.replace(/\r\n?/g, '\n');
      let idx;
      while ((idx = buffer.indexOf('\n\n')) >= 0 || (final && buffer.trim())) {
        let block;
        if (idx >= 0) {
          block = buffer.slice(0, idx);
          buffer = buffer.slice(idx + 2);
        } else {
          block = buffer;
          buffer = '';
        }
        const data = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
        }
        if (data.length) onEvent(data.join('\n'));
      }
    };
    await stream(path, signal, (chunk) => {
      buffer += decoder.decode(chunk, {stream: true});
      flush(false);
    });
    buffer += decoder.decode();
    flush(true);
  }

  const enc = encodeURIComponent;

  // --- Banner and token ---------------------------------------------------------------------

  const banner = document.getElementById('banner');
  const bannerText = document.getElementById('banner-text');
  const authBar = document.getElementById('auth-bar');
  const authInput = document.getElementById('auth-token');

  function showError(err) {
    if (err && err.name === 'AbortError') return;
    let text = err && err.message ? err.message : String(err);
    if (err instanceof ApiError && err.status === 401) {
      text = 'Authentication required: ' + text;
    } else if (err instanceof ApiError && err.status === 403) {
      text = 'Permission denied: ' + text;
    }
    bannerText.textContent = text;
    banner.hidden = false;
  }

  function clearError() {
    banner.hidden = true;
    bannerText.textContent = '';
  }

  function showAuthBar(show) {
    const wasHidden = authBar.hidden;
    authBar.hidden = !show;
    if (show && wasHidden) authInput.focus();
  }

  document.getElementById('banner-close').addEventListener('click', clearError);
  document.getElementById('token-toggle').addEventListener('click', () => showAuthBar(authBar.hidden));
  authBar.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const value = authInput.value.trim();
    try {
      if (value) localStorage.setItem(TOKEN_KEY, value);
    } catch (e) { /* private mode: the token lasts as long as the page */ }
    authInput.value = '';
    showAuthBar(false);
    clearError();
    route();
  });
  document.getElementById('auth-clear').addEventListener('click', () => {
    try {
      localStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* nothing stored */ }
    authInput.value = '';
    route();
  });

  // --- Router ------------------------------------------------------------------------------

  const main = document.getElementById('main');
  // What the current view started: timers and abort controllers, ended when the view changes.
  let viewScope = null;

  class Scope {
    constructor() {
      this.controllers = new Set();
      this.timers = new Set();
      this.closed = false;
    }
    controller() {
      const c = new AbortController();
      if (this.closed) c.abort();
      this.controllers.add(c);
      return c;
    }
    release(c) {
      this.controllers.delete(c);
    }
    every(ms, fn) {
      const id = setInterval(fn, ms);
      this.timers.add(id);
      return id;
    }
    later(ms, fn) {
      const id = setTimeout(() => {
        this.timers.delete(id);
        if (!this.closed) fn();
      }, ms);
      this.timers.add(id);
      return id;
    }
    cancelTimer(id) {
      clearInterval(id);
      clearTimeout(id);
      this.timers.delete(id);
    }
    close() {
      this.closed = true;
      for (const c of this.controllers) c.abort();
      for (const id of this.timers) {
        clearInterval(id);
        clearTimeout(id);
      }
      this.controllers.clear();
      this.timers.clear();
    }
  }

  function route() {
    if (viewScope) viewScope.close();
    viewScope = new Scope();
    clearError();
    const hash = location.hash.replace(/^#\/?/, '');
    const [pathPart, queryPart] = hash.split('?');
    const parts = pathPart.split('/').filter(Boolean).map((p) => {
      try {
        return decodeURIComponent(p);
      } catch (e) {
        return p;
      }
    });
    const params = new URLSearchParams(queryPart || '');
    const section = parts[0] || 'jobs';
    for (const a of document.querySelectorAll('nav a')) {
      a.classList.toggle('active', a.dataset.route === section);
    }
    clear(main);
    try {
      if (section === 'jobs' && parts.length > 1) {
        document.title = parts[1] + ' · trainctl';
        views.job(viewScope, parts[1]);
      } else if (section === 'jobs') {
        document.title = 'Jobs · trainctl';
        views.jobs(viewScope, params);
      } else if (section === 'queue') {
        document.title = 'Queue · trainctl';
        views.queue(viewScope, params);
      } else if (section === 'nodes') {
        document.title = 'Nodes · trainctl';
        views.nodes(viewScope);
      } else if (section === 'projects') {
        document.title = 'Projects · trainctl';
        views.projects(viewScope);
      } else if (section === 'usage') {
        document.title = 'Usage · trainctl';
        views.usage(viewScope, params);
      } else {
        main.appendChild(h('p', {className: 'empty', testid: 'not-found'},
                           'No such page: #/' + hash + '. ', h('a', {href: '#/jobs'}, 'Jobs')));
      }
    } catch (e) {
      showError(e);
    }
  }

  // Runs load() now and every `ms` while `enabled()` says so; a slow load is never overlapped.
  function poll(scope, ms, load, enabled) {
    let running = false;
    const tick = async () => {
      if (running || scope.closed || (enabled && !enabled())) return;
      running = true;
      try {
        await load();
      } finally {
        running = false;
      }
    };
    scope.every(ms, tick);
    return tick;
  }

  function sectionTitle(text, ...extra) {
    return h('div', {className: 'section-head'}, h('h2', null, text), ...extra);
  }

  // --- Shared with the view files ------------------------------------------------------------

  Object.assign(tc, {
    JOBS_REFRESH_MS, VIEW_REFRESH_MS, JOB_STATES, TERMINAL,
    h, clear, replaceContent,
    enumName, jobState, replicaState, nodeState, nodeHealth, badge, num, fmtNumber, fmtMemory,
    parseTime, fmtDurationMs, age, absTime, orDash, exitText, resourcesText,
    ApiError, api, stream, sse, enc,
    showError, clearError,
    main, poll, sectionTitle,
  });

  // --- Start -------------------------------------------------------------------------------

  // The view files load after this one: route once all of them have registered their views.
  function start() {
    window.addEventListener('hashchange', route);
    if (!location.hash || location.hash === '#' || location.hash === '#/') {
      history.replaceState(null, '', '#/jobs');
    }
    route();
  }
  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start);
  } else {
    start();
  }
})();
