// jobs.js: the #/jobs view of the trainctl web console: jobs filtered by state and project, paged
// with the server's page tokens and refreshed every few seconds while auto-refresh is on. The
// filter outlives the view, so coming back to #/jobs keeps it. Loaded after app.js, whose helpers
// it takes from window.trainctl; registers window.trainctl.views.jobs, and the job-array helpers
// job.js shares (isArray, arrayCountsText).
'use strict';

(function () {
  const tc = window.trainctl;
  const {JOBS_REFRESH_MS, JOB_STATES, h, clear, jobState, replicaState, badge, age, orDash, api,
         enc, showError, clearError, main, poll, sectionTitle} = tc;

  // --- Job arrays ------------------------------------------------------------------------
  // A job array (spec.array) runs no replicas itself: its elements are jobs "<array id>-<index>",
  // and Job.array counts them by state, as `trainctl list` shows them.

  function isArray(job) {
    return Boolean(job.array || (job.spec && job.spec.array && !job.element));
  }

  // "7 waiting (2 held), 3 running, 10 succeeded": the non-zero counts, in state order. The JSON
  // mapping leaves zero counts out.
  function arrayCountsText(a) {
    a = a || {};
    const parts = [];
    if (a.waiting) parts.push(a.waiting + ' waiting' + (a.held ? ' (' + a.held + ' held)' : ''));
    for (const key of ['queued', 'pending', 'running', 'cancelling', 'succeeded', 'failed', 'cancelled']) {
      if (a[key]) parts.push(a[key] + ' ' + key);
    }
    return parts.join(', ');
  }

  Object.assign(tc, {isArray, arrayCountsText});

  // --- #/jobs ------------------------------------------------------------------------------

  const jobsFilter = {state: '', project: '', auto: true};

  function jobsView(scope, params) {
    if (params.has('state')) jobsFilter.state = params.get('state');
    if (params.has('project')) jobsFilter.project = params.get('project');
    // Page tokens of the pages before this one; the first page's token is ''.
    const pages = [''];
    let pageIndex = 0;
    let nextToken = '';
    let loadSeq = 0;   // only the latest load renders
    let lastKey = null;

    const stateSelect = h('select', {testid: 'jobs-state-filter', 'aria-label': 'State'},
                          h('option', {value: ''}, 'All states'),
                          h('option', {value: 'active'}, 'Active (not finished)'),
                          JOB_STATES.map((s) => h('option', {value: s}, s)));
    stateSelect.value = jobsFilter.state;
    const projectInput = h('input', {type: 'search', placeholder: 'project', testid: 'jobs-project-filter',
                                     'aria-label': 'Project', value: jobsFilter.project, spellcheck: 'false'});
    const autoBox = h('input', {type: 'checkbox', testid: 'jobs-autorefresh', checked: jobsFilter.auto});
    const prevBtn = h('button', {type: 'button', className: 'btn small', testid: 'jobs-prev'}, '‹ Newer');
    const nextBtn = h('button', {type: 'button', className: 'btn small', testid: 'jobs-next'}, 'Older ›');
    const pageLabel = h('span', {className: 'muted', testid: 'jobs-page'}, '');
    const updated = h('span', {className: 'muted small', testid: 'jobs-updated'}, '');
    const tbody = h('tbody', {testid: 'jobs-body'});
    const table = h('table', {className: 'grid', testid: 'jobs-table'},
                    h('thead', null, h('tr', null, h('th', null, 'ID'), h('th', null, 'Name'),
                                       h('th', null, 'Project'), h('th', null, 'State'),
                                       h('th', null, 'Age'), h('th', {title: 'running / total'}, 'Replicas'))),
                    tbody);

    main.appendChild(h('section', {testid: 'jobs-view'},
      sectionTitle('Jobs',
        h('div', {className: 'toolbar'},
          h('label', null, 'State ', stateSelect),
          h('label', null, 'Project ', projectInput),
          h('label', {className: 'check'}, autoBox, ' Auto-refresh'),
          h('button', {type: 'button', className: 'btn small', testid: 'jobs-refresh',
                       onclick: () => load()}, 'Refresh'),
          updated)),
      table,
      h('div', {className: 'pager'}, prevBtn, pageLabel, nextBtn)));

    async function load() {
      const q = new URLSearchParams();
      q.set('pageSize', '50');
      // Without commands, env and attempt history: what a listing needs, refreshed every few seconds.
      q.set('view', 'JOB_VIEW_BASIC');
      if (pages[pageIndex]) q.set('pageToken', pages[pageIndex]);
      if (jobsFilter.state === 'active') {
        for (const s of ['QUEUED', 'PENDING', 'RUNNING', 'CANCELLING']) q.append('states', 'JOB_STATE_' + s);
      } else if (jobsFilter.state) {
        q.append('states', 'JOB_STATE_' + jobsFilter.state);
      }
      if (jobsFilter.project.trim()) q.set('project', jobsFilter.project.trim());
      const c = scope.controller();
      const seq = ++loadSeq;
      try {
        const resp = await api('GET', '/v1/jobs?' + q.toString(), undefined, c.signal);
        if (scope.closed || seq !== loadSeq) return;
        clearError();
        // Unchanged data is not rebuilt, so a row stays the same element while it is looked at.
        const key = JSON.stringify(resp.jobs || []);
        if (key !== lastKey) render(resp.jobs || []);
        lastKey = key;
        nextToken = resp.nextPageToken || '';
        prevBtn.disabled = pageIndex === 0;
        nextBtn.disabled = !nextToken;
        pageLabel.textContent = 'page ' + (pageIndex + 1);
        updated.textContent = 'updated ' + new Date().toLocaleTimeString();
      } catch (e) {
        if (!scope.closed && seq === loadSeq) showError(e);
      } finally {
        scope.release(c);
      }
    }

    function render(jobs) {
      clear(tbody);
      if (!jobs.length) {
        tbody.appendChild(h('tr', {testid: 'jobs-empty'},
                            h('td', {colspan: 6, className: 'empty'}, 'No jobs match.')));
        return;
      }
      for (const job of jobs) {
        const state = jobState(job.state);
        const replicas = job.replicas || [];
        const running = replicas.filter((r) => replicaState(r.state) === 'RUNNING').length;
        const href = '#/jobs/' + enc(job.id);
        // An array: its elements' counts next to its state, and no replicas of its own.
        const array = isArray(job);
        const counts = array ? arrayCountsText(job.array) : '';
        tbody.appendChild(h('tr', {testid: 'job-row-' + job.id, 'data-state': state},
          h('td', {className: 'mono'}, h('a', {href, testid: 'job-link-' + job.id}, job.id)),
          h('td', null, h('a', {href, className: 'plain'}, orDash(job.displayName))),
          h('td', null, orDash(job.project)),
          h('td', null, badge(state, state, 'job-state-' + job.id),
            counts ? h('span', {className: 'note', testid: 'job-array-' + job.id}, ' ' + counts) : null,
            job.queueReason && state === 'QUEUED' ? h('div', {className: 'note'}, job.queueReason) : null),
          h('td', null, age(job.createTime, '')),
          h('td', {className: 'num'}, array ? '-' : running + '/' + replicas.length)));
      }
    }

    const restart = () => {
      pages.length = 1;
      pageIndex = 0;
      load();
    };
    stateSelect.addEventListener('change', () => {
      jobsFilter.state = stateSelect.value;
      restart();
    });
    let typing = null;
    projectInput.addEventListener('input', () => {
      jobsFilter.project = projectInput.value;
      if (typing !== null) scope.cancelTimer(typing);
      typing = scope.later(400, restart);
    });
    autoBox.addEventListener('change', () => {
      jobsFilter.auto = autoBox.checked;
    });
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
    load();
    poll(scope, JOBS_REFRESH_MS, load, () => jobsFilter.auto);
  }

  tc.views.jobs = jobsView;
})();
