// job.js: the #/jobs/{id} view of the trainctl web console: one job, kept live by its watch
// stream (Server-Sent Events, reconnecting until the job is terminal), with its error, spec,
// replicas, the timeline of their runs (timeline.js), attempts, events, a cancel (or, once it
// ended, delete) button and the log panel of logs.js. A job array shows its elements' counts and
// a paged list of its elements instead of runs; an element links to its array. Loaded after
// app.js, jobs.js, logs.js and timeline.js, whose helpers it takes from window.trainctl;
// registers window.trainctl.views.job.
'use strict';

(function () {
  const tc = window.trainctl;
  const {TERMINAL, h, clear, replaceContent, enumName, jobState, replicaState, badge, parseTime,
         fmtDurationMs, age, orDash, exitText, resourcesText, ApiError, api, sse, enc, showError,
         clearError, main, sectionTitle, isArray, arrayCountsText} = tc;

  // Events read for a job page (the newest, oldest first), and the newest of them its table shows.
  const EVENTS_READ = 2000;
  const EVENTS_SHOWN = 500;
  // Elements of an array listed on a page of its job page.
  const ELEMENTS_PAGE = 50;

  // "20 elements (indices 0-19, at most 3 at once)", as `trainctl get` shows an array.
  function arraySizeText(job) {
    const spec = (job.spec && job.spec.array) || {};
    const count = (job.array && job.array.count) || 0;
    const detail = [];
    if (spec.indices) detail.push('indices ' + spec.indices);
    if (spec.parallelism) detail.push('at most ' + spec.parallelism + ' at once');
    return count + (count === 1 ? ' element' : ' elements') +
           (detail.length ? ' (' + detail.join(', ') + ')' : '');
  }

  // --- #/jobs/{id} -------------------------------------------------------------------------

  function jobView(scope, id) {
    let job = null;
    const header = h('div', {className: 'job-header', testid: 'job-header'},
                     h('h2', null, h('span', {className: 'mono'}, id)));
    const errorBox = h('div', {testid: 'job-error-box'});
    const summary = h('div', {testid: 'job-summary'});
    const replicasBox = h('div', {testid: 'job-replicas'});
    const attemptsBox = h('div', {testid: 'job-attempts'});
    const eventsBox = h('div', {testid: 'job-events'}, h('p', {className: 'muted'}, 'Loading events…'));
    const liveBadge = h('span', {className: 'live', testid: 'watch-status'}, 'connecting');
    const logs = tc.logPanel(scope, id);
    const timeline = tc.timelinePanel(scope);
    const crumbs = h('p', {className: 'crumbs'}, h('a', {href: '#/jobs'}, 'Jobs'), ' / ', id);
    const elements = elementsPanel();
    // An array runs nothing itself: its elements take the place of its runs.
    const runsSection = h('div', {testid: 'job-runs'},
                          sectionTitle('Replicas'), replicasBox,
                          sectionTitle('Timeline'), timeline.element,
                          sectionTitle('Attempts'), attemptsBox,
                          sectionTitle('Logs'), logs.element);

    main.appendChild(h('section', {testid: 'job-view'},
      crumbs, header, errorBox,
      h('div', {className: 'columns'},
        h('div', {className: 'col-main'},
          elements.element, runsSection,
          sectionTitle('Events'), eventsBox),
        h('aside', {className: 'col-side'}, sectionTitle('Spec', liveBadge), summary))));

    function render(next) {
      job = next;
      const state = jobState(job.state);
      document.title = (job.displayName || id) + ' · ' + state + ' · trainctl';
      // An element's page leads back to its array.
      if (job.element && job.element.array) {
        replaceContent(crumbs, h('a', {href: '#/jobs'}, 'Jobs'), ' / ',
                       h('a', {href: '#/jobs/' + enc(job.element.array), testid: 'job-crumb-array'},
                         job.element.array), ' / ', id);
      }
      runsSection.hidden = isArray(job);
      elements.update(job);
      replaceContent(header,
        h('h2', null, h('span', {className: 'mono', testid: 'job-id'}, job.id), ' ',
          h('span', {className: 'title', testid: 'job-name'}, job.displayName || '')),
        badge(state, state, 'job-state'),
        job.gangRestarting ? badge('GANG RESTARTING', 'pending', 'job-gang-restarting') : null,
        h('span', {className: 'spacer'}),
        TERMINAL.has(state) ? deleteControl() : cancelControl(state));
      renderError();
      renderSummary();
      renderReplicas();
      renderAttempts();
      logs.update(job);
      timeline.update(job);
    }

    function cancelControl(state) {
      const array = isArray(job);
      return confirmedAction({
        testid: 'job-cancel',
        label: state === 'CANCELLING' ? 'Cancelling…' : array ? 'Cancel array' : 'Cancel job',
        disabled: TERMINAL.has(state) || state === 'CANCELLING',
        question: array ? 'Stop every element and start no more? ' : 'Stop every replica? ',
        yes: 'Yes, cancel',
        run: async () => {
          render(await api('POST', '/v1/jobs/' + enc(id) + ':cancel', {}));
          clearError();
        }});
    }

    // A job that ended can be deleted (DELETE /v1/jobs/{id}); the page then goes back to the list.
    // trainctld refuses while a replica is still stopping, and says so in the banner.
    function deleteControl() {
      const array = isArray(job);
      return confirmedAction({
        testid: 'job-delete', label: array ? 'Delete array' : 'Delete job', disabled: false,
        question: array ? 'Delete the array and its elements, with their attempts and events? ' :
                          'Delete the job, its attempts and events? ',
        yes: 'Yes, delete',
        run: async () => {
          await api('DELETE', '/v1/jobs/' + enc(id));
          location.hash = '#/jobs';
        }});
    }

    // A button that asks `question` before it runs `run`: buttons TESTID, TESTID-confirm and
    // TESTID-abort. An error of `run` shows in the banner and brings the first button back.
    function confirmedAction({testid, label, disabled, question, yes, run}) {
      const box = h('span', {className: 'inline-form'});
      const ask = h('button', {type: 'button', className: 'btn danger', testid, disabled}, label);
      ask.addEventListener('click', () => {
        replaceContent(box, h('span', null, question),
          h('button', {type: 'button', className: 'btn danger', testid: testid + '-confirm',
                       onclick: confirmed}, yes),
          h('button', {type: 'button', className: 'btn ghost', testid: testid + '-abort',
                       onclick: () => replaceContent(box, ask)}, 'No'));
      });
      async function confirmed(ev) {
        ev.target.disabled = true;
        try {
          await run();
        } catch (e) {
          showError(e);
          replaceContent(box, ask);
        }
      }
      box.appendChild(ask);
      return box;
    }

    function renderError() {
      const err = job.error;
      if (!err || (!err.message && !err.reason)) {
        clear(errorBox);
        return;
      }
      replaceContent(errorBox, h('div', {className: 'errorbox', testid: 'job-error'},
        h('div', {className: 'error-head'},
          err.reason ? badge(err.reason, 'failed', 'job-error-reason') : null,
          err.replica ? h('span', null, ' replica ', h('b', null, err.replica)) : null,
          err.node ? h('span', null, ' on ', h('b', null, err.node)) : null),
        h('p', {testid: 'job-error-message'}, err.message || ''),
        (err.consequences || []).length
          ? h('ul', {className: 'consequences'}, err.consequences.map((c) => h('li', null, c))) : null,
        err.outputTail ? h('details', {open: true},
          h('summary', null, 'Last output'),
          h('pre', {className: 'tail', testid: 'job-error-tail'}, err.outputTail)) : null));
    }

    function kv(rows) {
      return h('dl', {className: 'kv'}, rows.filter(Boolean).map(([k, v]) =>
        [h('dt', null, k), h('dd', null, v)]));
    }

    function renderSummary() {
      const spec = job.spec || {};
      const sched = spec.scheduling || {};
      const pools = spec.workerPools || [];
      const labels = Object.entries(spec.labels || {});
      const queue = job.queueStatus;
      const used = job.budgetsUsed || {};
      const arr = isArray(job) ? (job.array || {}) : null;
      const el = job.element;
      replaceContent(
          summary, kv([
            arr ? ['Array', arraySizeText(job)] : null,
            arr ? ['Elements', h('span', {testid: 'job-array-counts'}, arrayCountsText(arr) || '-')] :
                  null,
            arr && arr.heldIndices ? ['Held elements', arr.heldIndices] : null,
            arr && arr.cancelledIndices ? ['Cancelled before start', arr.cancelledIndices] : null,
            el && el.array ?
                [
                  'Element',
                  h('span', {testid: 'job-element'}, String(el.index || 0) + ' of array ',
                    h('a', {href: '#/jobs/' + enc(el.array), testid: 'job-element-array'}, el.array),
                    el.count ? ' (' + el.count + (el.count === 1 ? ' element)' : ' elements)') : '')
                ] :
                null,
            ['Project', orDash(job.project)],
            ['Priority', String(job.priority || 0)],
            job.creator ? ['Creator', job.creator] : null,
            ['Created', age(job.createTime)],
            ['Started', age(job.startTime)],
            job.endTime ? ['Ended', age(job.endTime)] : null,
            job.startTime ?
                [
                  'Runtime',
                  fmtDurationMs((parseTime(job.endTime) || Date.now()) - parseTime(job.startTime))
                ] :
                null,
            jobState(job.state) === 'QUEUED' && job.queueReason ? ['Waiting', job.queueReason] :
                                                                  null,
            queue && queue.position ? ['Queue position', String(queue.position)] : null,
            job.nextAttemptTime ? ['Next attempt', age(job.nextAttemptTime)] : null,
            queue && (queue.preempting || []).length && jobState(job.state) === 'QUEUED' ?
                ['Preempting', h('span', {testid: 'job-preempting'}, queue.preempting.join(', '))] :
                null,
            job.preemption ?
                ['Preempted', h('span', {testid: 'job-preempted'}, preemptionText(job))] :
                null,
            job.preemptions ? ['Preemptions', String(job.preemptions)] : null,
            job.lastCheckpointTime ? ['Last checkpoint', age(job.lastCheckpointTime)] : null,
            [
              'Checkpoint dir',
              h('span', {className: 'mono'}, orDash(job.checkpointDir || spec.checkpointDir))
            ],
            ['Restart policy', enumName(sched.restartPolicy, 'RESTART_POLICY_')],
            sched.restartScope ? ['Restart scope', enumName(sched.restartScope, 'RESTART_SCOPE_')] :
                                 null,
            sched.timeout ? ['Timeout', sched.timeout] : null,
            sched.stopGracePeriod ? ['Stop grace', sched.stopGracePeriod] : null,
            [
              'Budgets used',
              'retries ' + (used.jobRetries || 0) + ', internal ' + (used.internalRetries || 0) +
                  ', capacity ' + (used.capacityRetries || 0) + ', re-dispatches ' +
                  (used.redispatches || 0)
            ],
            job.gangGeneration ? ['Gang generation', String(job.gangGeneration)] : null,
            job.rootCause ?
                [
                  'Root cause',
                  (job.rootCause.replica || '') + ': ' + (job.rootCause.summary || '') +
                      (job.rootCause.failureClass ? ' (' + job.rootCause.failureClass + ')' : '')
                ] :
                null,
            labels.length ?
                [
                  'Labels',
                  h('span', null,
                    labels.map(([k, v]) => h('span', {className: 'tag'}, k + '=' + v)))
                ] :
                null,
          ]),
          h('h3', null, 'Pools'),
          h('div', {testid: 'job-pools'},
            pools.map(
                (p) =>
                    h('div', {className: 'pool', testid: 'pool-' + p.name},
                      h('div', null, h('b', null, p.name || '?'), ' × ' + (p.replicaCount || 0),
                        h('span', {className: 'muted'}, ' · ' + resourcesText(p.resources))),
                      (p.command || p.args) ?
                          h('code', {className: 'cmd'},
                            [].concat(p.command || [], p.args || []).map(shellQuote).join(' ')) :
                          null))));
    }

    // The latest preemption: under way while the job is PENDING or RUNNING, past otherwise.
    function preemptionText(j) {
      const p = j.preemption;
      const by = p.preemptingJob ? 'by ' + p.preemptingJob : 'by its lender';
      const st = jobState(j.state);
      if (st === 'PENDING' || st === 'RUNNING') {
        return [
          by + ' (' + (p.reason || '') + '); replicas checkpoint and stop by ', age(p.deadline, '')
        ];
      }
      return [by + ', attempt ' + (p.attempt || 0) + ' (' + (p.reason || '') + ')'];
    }

    function shellQuote(arg) {
      return /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : "'" + arg.replace(/'/g, "'\\''") + "'";
    }

    function renderReplicas() {
      const replicas = job.replicas || [];
      if (!replicas.length) {
        replaceContent(replicasBox, h('p', {className: 'muted', testid: 'replicas-empty'}, 'Not placed yet.'));
        return;
      }
      replaceContent(
          replicasBox,
          h('table', {className: 'grid', testid: 'replicas-table'},
            h('thead', null,
              h('tr', null,
                [
                  'Name', 'Rank', 'State', 'Node', 'Restarts', 'Step', 'Exit', 'Started', 'Message'
                ].map((t) => h('th', null, t)))),
            h('tbody', null, replicas.map((r) => {
              const st = replicaState(r.state);
              return h(
                  'tr', {testid: 'replica-row-' + r.name, 'data-state': st},
                  h('td', {className: 'mono'}, r.name),
                  h('td', {className: 'num'}, String(r.rank || 0)),
                  h('td', null, badge(st, st, 'replica-state-' + r.name)),
                  h('td', null,
                    r.node ? h('a', {href: '#/nodes', className: 'plain'}, r.node) : '-'),
                  h('td', {
                    className: 'num',
                    title: 'charged: ' + (r.chargedRestarts || 0) + ', moves: ' + (r.moves || 0)
                  },
                    String(r.restartCount || 0)),
                  h('td', {className: 'num', testid: 'replica-step-' + r.name},
                    Number(r.step) > 0 ? String(r.step) : ''),
                  h('td', {className: 'num', testid: 'replica-exit-' + r.name}, exitText(r)),
                  h('td', null, age(r.startTime)),
                  h('td', {className: 'note'}, r.moveReason || r.message || ''));
            }))));
    }

    function renderAttempts() {
      const attempts = job.attempts || [];
      if (!attempts.length) {
        replaceContent(attemptsBox, h('p', {className: 'muted'}, 'No attempt yet.'));
        return;
      }
      replaceContent(attemptsBox, h('table', {className: 'grid', testid: 'attempts-table'},
        h('thead', null, h('tr', null, ['#', 'State', 'Failure class', 'Rule', 'Decision', 'Budgets left',
                                        'Nodes', 'Started', 'Reason'].map((t) => h('th', null, t)))),
        h('tbody', null, attempts.map((a) => {
          const st = jobState(a.state);
          const left = a.budgetsLeft;
          return h('tr', {testid: 'attempt-row-' + (a.number || 0)},
            h('td', {className: 'num'}, String(a.number || 0)),
            h('td', null, badge(st, st)),
            h('td', null, a.failureClass ? badge(a.failureClass, 'class') : '-'),
            h('td', {className: 'mono small'}, orDash(a.matchedRule)),
            h('td', null, orDash(a.decision)),
            h('td', {className: 'small'}, left
              ? 'retries ' + (left.jobRetries || 0) + ', internal ' + (left.internalRetries || 0) +
                ', capacity ' + (left.capacityRetries || 0) + ', re-dispatches ' + (left.redispatches || 0)
              : '-'),
            h('td', {className: 'small'}, (a.nodes || []).join(', ') || '-'),
            h('td', null, age(a.startTime)),
            h('td', {className: 'note'}, [a.reason || '',
              a.replica ? ' (' + a.replica + (a.node ? ' on ' + a.node : '') + ')' : '',
              (a.consequences || []).length ? h('div', {className: 'muted'}, 'then: ' + a.consequences.join('; ')) : null,
              (a.gangRestarts || []).length ? h('div', {className: 'muted'}, 'gang restarts: ' + a.gangRestarts.map(
                (g) => 'gen ' + (g.generation || 0) + (g.cause && g.cause.replica ? ' by ' + g.cause.replica : '') +
                       (g.matchedRule ? ' [' + g.matchedRule + ']' : '')).join('; ')) : null,
              (a.resizes || []).length ? h('div', {className: 'muted'}, 'resizes: ' + a.resizes.map(
                (z) => 'gen ' + (z.generation || 0) + ' ' + z.pool + ' ' + (z.fromReplicas || 0) + ' → ' +
                       (z.toReplicas || 0) + ' (' + (z.replicas || []).join(', ') + ')').join('; ')) : null]));
        }))));
    }

    // An array's elements (GET /v1/jobs?array=ID), newest first, after one row for those not
    // started yet ("<id>-[7-19]", which has no page of its own); paged with the server's page
    // tokens, and reloaded when the array changes, at most once a second. Hidden for other jobs.
    function elementsPanel() {
      const pages = [''];
      let pageIndex = 0;
      let nextToken = '';
      let lastKey = null;
      let due = false;
      let busy = false;
      const counts = h('p', {testid: 'job-elements-counts'}, '');
      const body = h('div', {testid: 'job-elements'}, h('p', {className: 'muted'}, 'Loading elements…'));
      const prevBtn = h('button', {type: 'button', className: 'btn small', testid: 'elements-prev',
                                   disabled: true}, '‹ Newer');
      const nextBtn = h('button', {type: 'button', className: 'btn small', testid: 'elements-next',
                                   disabled: true}, 'Older ›');
      const pageLabel = h('span', {className: 'muted', testid: 'elements-page'}, '');
      const element = h('div', {testid: 'job-elements-section', hidden: true},
                        sectionTitle('Elements'), counts, body,
                        h('div', {className: 'pager'}, prevBtn, pageLabel, nextBtn));

      async function load() {
        if (busy) {
          due = true;
          return;
        }
        busy = true;
        const q = new URLSearchParams();
        q.set('array', id);
        q.set('pageSize', String(ELEMENTS_PAGE));
        q.set('view', 'JOB_VIEW_BASIC');
        if (pages[pageIndex]) q.set('pageToken', pages[pageIndex]);
        const c = scope.controller();
        try {
          const resp = await api('GET', '/v1/jobs?' + q.toString(), undefined, c.signal);
          if (scope.closed) return;
          const key = JSON.stringify(resp.jobs || []);
          if (key !== lastKey) renderRows(resp.jobs || []);
          lastKey = key;
          nextToken = resp.nextPageToken || '';
          prevBtn.disabled = pageIndex === 0;
          nextBtn.disabled = !nextToken;
          pageLabel.textContent = 'page ' + (pageIndex + 1);
        } catch (e) {
          if (!scope.closed && e.name !== 'AbortError') {
            lastKey = null;
            replaceContent(body, h('p', {className: 'error-inline', testid: 'elements-error'}, e.message));
          }
        } finally {
          scope.release(c);
          scope.later(1000, () => {
            busy = false;
            if (due) {
              due = false;
              load();
            }
          });
        }
      }

      function renderRows(rows) {
        if (!rows.length) {
          replaceContent(body, h('p', {className: 'muted', testid: 'elements-empty'}, 'No elements.'));
          return;
        }
        replaceContent(body, h('table', {className: 'grid', testid: 'elements-table'},
          h('thead', null, h('tr', null, ['Element', 'Name', 'State', 'Age', 'Replicas'].map((t) => h('th', null, t)))),
          h('tbody', null, rows.map((e) => {
            const st = jobState(e.state);
            const replicas = e.replicas || [];
            const running = replicas.filter((r) => replicaState(r.state) === 'RUNNING').length;
            const notStarted = /-\[[^\]]*\]$/.test(e.id || '');
            return h('tr', {testid: 'element-row-' + e.id, 'data-state': st},
              h('td', {className: 'mono'}, notStarted ? e.id :
                h('a', {href: '#/jobs/' + enc(e.id), testid: 'element-link-' + e.id}, e.id)),
              h('td', null, orDash(e.displayName)),
              h('td', null, badge(st, st, 'element-state-' + e.id),
                e.queueReason && st === 'QUEUED' ? h('div', {className: 'note'}, e.queueReason) : null),
              h('td', null, age(e.createTime, '')),
              h('td', {className: 'num'}, notStarted ? '-' : running + '/' + replicas.length));
          }))));
      }

      prevBtn.addEventListener('click', () => {
        if (pageIndex > 0) {
          pageIndex--;
          load();
        }
      });
      nextBtn.addEventListener('click', () => {
        if (!nextToken) return;
        pages.length = pageIndex + 1;
        pages.push(nextToken);
        pageIndex++;
        load();
      });

      // With every read of the job: shown, and its counts and list brought up to date, for an array.
      function update(j) {
        element.hidden = !isArray(j);
        if (element.hidden) return;
        counts.textContent = arraySizeText(j) + ': ' + (arrayCountsText(j.array) || 'no counts yet');
        load();
      }
      return {element, update};
    }

    // Events: reloaded when the job changes, at most once a second. The timeline reads more of
    // them than the table shows.
    let eventsDue = false;
    let eventsBusy = false;
    async function loadEvents() {
      if (eventsBusy) {
        eventsDue = true;
        return;
      }
      eventsBusy = true;
      const c = scope.controller();
      try {
        const resp = await api('GET', '/v1/events?jobId=' + enc(id) + '&limit=' + EVENTS_READ,
                               undefined, c.signal);
        if (scope.closed) return;
        const events = resp.events || [];
        timeline.setEvents(events, events.length >= EVENTS_READ);
        renderEvents(events.slice(-EVENTS_SHOWN));
      } catch (e) {
        if (!scope.closed && e.name !== 'AbortError') {
          replaceContent(eventsBox, h('p', {className: 'error-inline', testid: 'events-error'}, e.message));
        }
      } finally {
        scope.release(c);
        scope.later(1000, () => {
          eventsBusy = false;
          if (eventsDue) {
            eventsDue = false;
            loadEvents();
          }
        });
      }
    }

    function renderEvents(events) {
      if (!events.length) {
        replaceContent(eventsBox, h('p', {className: 'muted', testid: 'events-empty'}, 'No events.'));
        return;
      }
      replaceContent(eventsBox, h('table', {className: 'grid', testid: 'events-table'},
        h('thead', null, h('tr', null, ['Time', 'Type', 'Attempt', 'Replica', 'Node', 'Actor', 'Reason']
          .map((t) => h('th', null, t)))),
        h('tbody', null, events.map((e) => h('tr', {testid: 'event-row', 'data-type': e.type || ''},
          h('td', {className: 'nowrap'}, age(e.time)),
          h('td', null, h('span', {className: 'etype'}, e.type || '')),
          h('td', {className: 'num'}, e.attempt ? String(e.attempt) : ''),
          h('td', {className: 'mono'}, e.replica || ''),
          h('td', null, e.node || ''),
          h('td', null, e.actor || ''),
          h('td', {className: 'note'}, e.reason || ''))))));
    }

    // The watch stream: the job now and after every change; reconnects until it is terminal.
    let watchBackoff = 1000;
    async function watch() {
      const c = scope.controller();
      let terminal = false;
      try {
        liveBadge.textContent = 'live';
        liveBadge.className = 'live on';
        await sse('/v1/jobs/' + enc(id) + ':watch', c.signal, (data) => {
          let next;
          try {
            next = JSON.parse(data);
          } catch (e) {
            return;
          }
          watchBackoff = 1000;
          if (scope.closed) return;
          clearError();
          render(next);
          loadEvents();
          terminal = TERMINAL.has(jobState(next.state));
        });
      } catch (e) {
        if (scope.closed || e.name === 'AbortError') return;
        if (e instanceof ApiError && (e.status === 404 || e.status === 401 || e.status === 403)) {
          showError(e);
          liveBadge.textContent = 'stopped';
          liveBadge.className = 'live';
          return;
        }
      } finally {
        scope.release(c);
      }
      if (scope.closed) return;
      if (terminal || (job && TERMINAL.has(jobState(job.state)))) {
        liveBadge.textContent = 'final';
        liveBadge.className = 'live';
        loadEvents();
        return;
      }
      liveBadge.textContent = 'reconnecting';
      liveBadge.className = 'live';
      scope.later(watchBackoff, watch);
      watchBackoff = Math.min(watchBackoff * 2, 10000);
    }

    (async () => {
      const c = scope.controller();
      try {
        render(await api('GET', '/v1/jobs/' + enc(id), undefined, c.signal));
        loadEvents();
        if (!TERMINAL.has(jobState(job.state))) {
          watch();
        } else {
          liveBadge.textContent = 'final';
        }
      } catch (e) {
        if (scope.closed || e.name === 'AbortError') return;
        showError(e);
        liveBadge.textContent = 'error';
        replaceContent(header, h('h2', null, h('span', {className: 'mono'}, id)),
                       h('span', {className: 'muted', testid: 'job-load-error'}, e.message));
      } finally {
        scope.release(c);
      }
    })();
  }

  tc.views.job = jobView;
})();
