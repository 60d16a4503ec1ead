// job.js: the #/jobs/{id} view of the trainctl web console: one job, kept live by its watch
// stream (Server-Sent Events, reconnecting until the job is terminal), with its error, spec,
// replicas, the timeline of their runs (timeline.js), attempts, events, a cancel (or, once it
// ended, delete) button and the log panel of logs.js. Loaded after app.js, logs.js and
// timeline.js, whose helpers it takes from window.trainctl; registers window.trainctl.views.job.
'use strict';

(function () {
  const tc = window.trainctl;
  const {TERMINAL, h, clear, replaceContent, enumName, jobState, replicaState, badge, parseTime,
         fmtDurationMs, age, orDash, exitText, resourcesText, ApiError, api, sse, enc, showError,
         clearError, main, sectionTitle} = tc;

  // Events read for a job page (the newest, oldest first), and the newest of them its table shows.
  const EVENTS_READ = 2000;
  const EVENTS_SHOWN = 500;

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

    main.appendChild(h('section', {testid: 'job-view'},
      h('p', {className: 'crumbs'}, h('a', {href: '#/jobs'}, 'Jobs'), ' / ', id),
      header, errorBox,
      h('div', {className: 'columns'},
        h('div', {className: 'col-main'},
          sectionTitle('Replicas'), replicasBox,
          sectionTitle('Timeline'), timeline.element,
          sectionTitle('Attempts'), attemptsBox,
          sectionTitle('Logs'), logs.element,
          sectionTitle('Events'), eventsBox),
        h('aside', {className: 'col-side'}, sectionTitle('Spec', liveBadge), summary))));

    function render(next) {
      job = next;
      const state = jobState(job.state);
      document.title = (job.displayName || id) + ' · ' + state + ' · trainctl';
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
      return confirmedAction({
        testid: 'job-cancel', label: state === 'CANCELLING' ? 'Cancelling…' : 'Cancel job',
        disabled: TERMINAL.has(state) || state === 'CANCELLING',
        question: 'Stop every replica? ', yes: 'Yes, cancel',
        run: async () => {
          render(await api('POST', '/v1/jobs/' + enc(id) + ':cancel', {}));
          clearError();
        }});
    }

    // A job that ended can be deleted (DELETE /v1/jobs/{id}); the page then goes back to the list.
    // trainctld refuses while a replica is still stopping, and says so in the banner.
    function deleteControl() {
      return confirmedAction({
        testid: 'job-delete', label: 'Delete job', disabled: false,
        question: 'Delete the job, its attempts and events? ', yes: 'Yes, delete',
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
      replaceContent(
          summary, kv([
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
