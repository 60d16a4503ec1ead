// cluster.js: the cluster-wide views of the trainctl web console: #/queue (queued jobs in
// admission order with what blocks each one), #/nodes (nodes, with cordon, uncordon and drain)
// and #/projects (quotas, what each project uses, and a quota editor). Each refreshes every few
// seconds. Loaded after app.js, whose helpers it takes from window.trainctl; registers
// window.trainctl.views.queue, .nodes and .projects.
'use strict';

(function () {
  const tc = window.trainctl;
  const {VIEW_REFRESH_MS, h, enumName, nodeState, nodeHealth, badge, num, fmtNumber, fmtMemory, age,
         orDash, resourcesText, replaceContent, api, enc, showError, clearError, main, poll,
         sectionTitle} = tc;

  // --- #/queue -----------------------------------------------------------------------------

  function queueView(scope, params) {
    const projectInput = h('input', {type: 'search', placeholder: 'project', testid: 'queue-project-filter',
                                     'aria-label': 'Project', value: params.get('project') || '', spellcheck: 'false'});
    const body = h('div', {testid: 'queue-body'}, h('p', {className: 'muted'}, 'Loading…'));
    let lastKey = null;
    const updated = h('span', {className: 'muted small'}, '');
    main.appendChild(h('section', {testid: 'queue-view'},
      sectionTitle('Queue', h('div', {className: 'toolbar'},
        h('label', null, 'Project ', projectInput),
        h('button', {type: 'button', className: 'btn small', testid: 'queue-refresh', onclick: () => load()}, 'Refresh'),
        updated)),
      h('p', {className: 'muted small'}, 'Queued jobs in admission order, with everything that keeps each one waiting.'),
      body));

    async function load() {
      const q = new URLSearchParams();
      if (projectInput.value.trim()) q.set('project', projectInput.value.trim());
      const c = scope.controller();
      try {
        const resp = await api('GET', '/v1/queue' + (q.toString() ? '?' + q : ''), undefined, c.signal);
        if (scope.closed) return;
        clearError();
        const key = JSON.stringify(resp.jobs || []);
        if (key !== lastKey) render(resp.jobs || []);
        lastKey = key;
        updated.textContent = 'updated ' + new Date().toLocaleTimeString();
      } catch (e) {
        if (!scope.closed) showError(e);
      } finally {
        scope.release(c);
      }
    }

    function render(jobs) {
      if (!jobs.length) {
        replaceContent(body, h('p', {className: 'empty', testid: 'queue-empty'}, 'No job is waiting.'));
        return;
      }
      replaceContent(body, h('table', {className: 'grid', testid: 'queue-table'},
        h('thead', null, h('tr', null, ['#', 'Job', 'Project', 'Priority', 'Waiting', 'Ahead', 'Blockers']
          .map((t) => h('th', null, t)))),
        h('tbody', null, jobs.map((job, i) => {
          const qs = job.queueStatus || {};
          const blockers = qs.blockers || [];
          const ahead = qs.jobsAheadCount || 0;
          return h('tr', {testid: 'queue-row-' + job.id},
            h('td', {className: 'num', testid: 'queue-position-' + job.id,
                     title: 'position in its project; row ' + (i + 1) + ' overall'}, String(qs.position || i + 1)),
            h('td', null, h('a', {href: '#/jobs/' + enc(job.id), className: 'mono'}, job.id),
              h('div', {className: 'note'}, job.displayName || '')),
            h('td', null, orDash(job.project)),
            h('td', {className: 'num'}, String(job.priority || 0)),
            h('td', null, age(job.queueTime || job.createTime, '')),
            h('td', {className: 'small'}, ahead ? String(ahead) : '0',
              (qs.jobsAhead || []).length ? h('div', {className: 'muted'}, qs.jobsAhead.map((a, k) =>
                [k ? ', ' : '', h('a', {href: '#/jobs/' + enc(a), className: 'mono plain'}, a)])) : null),
            h('td', null, blockers.length
              ? h('ul', {className: 'blockers'}, blockers.map((b) => h('li', {testid: 'blocker'},
                  badge(b.kind || '?', 'blocker'), ' ', b.message || (b.resource || ''))))
              : h('span', {className: 'muted'}, job.queueReason || 'about to be admitted')));
        }))));
    }

    let typing = null;
    projectInput.addEventListener('input', () => {
      if (typing !== null) scope.cancelTimer(typing);
      typing = scope.later(400, load);
    });
    load();
    poll(scope, VIEW_REFRESH_MS, load);
  }

  // --- #/nodes -----------------------------------------------------------------------------

  function nodesView(scope) {
    // The open cordon/drain form, if any: refreshes wait while it is open.
    let form = null;   // {name, kind}
    let nodes = [];
    let lastKey = null;
    const body = h('div', {testid: 'nodes-body'}, h('p', {className: 'muted'}, 'Loading…'));
    const updated = h('span', {className: 'muted small'}, '');
    main.appendChild(h('section', {testid: 'nodes-view'},
      sectionTitle('Nodes', h('div', {className: 'toolbar'},
        h('button', {type: 'button', className: 'btn small', testid: 'nodes-refresh', onclick: () => load()}, 'Refresh'),
        updated)),
      body));

    async function load() {
      const c = scope.controller();
      try {
        const resp = await api('GET', '/v1/nodes', undefined, c.signal);
        if (scope.closed) return;
        const key = JSON.stringify(resp.nodes || []);
        nodes = resp.nodes || [];
        if (!form && key !== lastKey) render();
        if (!form) lastKey = key;
        updated.textContent = 'updated ' + new Date().toLocaleTimeString();
      } catch (e) {
        if (!scope.closed) showError(e);
      } finally {
        scope.release(c);
      }
    }

    function usage(node, key, fmt) {
      const alloc = num((node.allocatable || {})[key]);
      const free = num((node.free || {})[key]);
      const cap = num((node.capacity || {})[key]);
      if (!alloc && !cap) return h('span', {className: 'muted'}, '-');
      const pct = alloc ? Math.round(100 * (alloc - free) / alloc) : 0;
      return h('div', {className: 'usage', title: 'capacity ' + fmt(cap) + ', allocatable ' + fmt(alloc) +
                                                  ', free ' + fmt(free)},
        h('span', null, fmt(free) + ' free / ' + fmt(alloc)),
        h('span', {className: 'bar'}, h('span', {className: 'fill', style: {width: Math.min(100, Math.max(0, pct)) + '%'}})));
    }

    function render() {
      if (!nodes.length) {
        replaceContent(body, h('p', {className: 'empty', testid: 'nodes-empty'},
                               'No node has registered. Start trainctl-agent on a host.'));
        return;
      }
      replaceContent(body, h('table', {className: 'grid', testid: 'nodes-table'},
        h('thead', null, h('tr', null, ['Name', 'State', 'Health', 'CPU', 'Memory', 'GPUs', 'Replicas',
                                        'Heartbeat', 'Actions'].map((t) => h('th', null, t)))),
        h('tbody', null, nodes.map((n) => {
          const st = nodeState(n.state);
          const health = nodeHealth(n.health);
          return [
            h('tr', {testid: 'node-row-' + n.name, 'data-state': st},
              h('td', null, h('b', {className: 'mono'}, n.name),
                h('div', {className: 'note'}, [n.address || '', n.agentVersion ? ' · ' + n.agentVersion : ''].join('')),
                n.connected ? null : h('div', null, badge('DISCONNECTED', 'lost'))),
              h('td', null, badge(st, 'node-' + st, 'node-state-' + n.name),
                n.flapping ? badge('FLAPPING', 'failed') : null,
                n.stateReason ? h('div', {className: 'note', testid: 'node-reason-' + n.name}, n.stateReason) : null,
                n.stateTime ? h('div', {className: 'note'}, 'since ', age(n.stateTime)) : null,
                n.maintenance ? h('div', {className: 'note', testid: 'node-maintenance-' + n.name},
                  'maintenance ' + n.maintenance.startTime + ' for ' + n.maintenance.duration +
                  ' (' + n.maintenance.reason + ')') : null),
              h('td', null, badge(health, 'health-' + health, 'node-health-' + n.name),
                n.healthDescription ? h('div', {className: 'note'}, n.healthDescription) : null),
              h('td', null, usage(n, 'cpu', fmtNumber)),
              h('td', null, usage(n, 'memoryMb', fmtMemory)),
              h('td', null, usage(n, 'gpus', fmtNumber)),
              h('td', {className: 'num', testid: 'node-replicas-' + n.name}, String(n.replicas || 0)),
              h('td', null, age(n.lastHeartbeatTime)),
              h('td', {className: 'actions'}, actions(n))),
            form && form.name === n.name ? formRow(n) : null,
          ];
        }))));
      const input = body.querySelector('input[data-focus]');
      if (input) input.focus();
    }

    function actions(n) {
      const held = n.cordoned || ['CORDONED', 'DRAINING'].includes(nodeState(n.state)) || n.flapping;
      return [
        h('button', {type: 'button', className: 'btn small', testid: 'cordon-' + n.name,
                     onclick: () => openForm(n.name, 'cordon')}, 'Cordon'),
        h('button', {type: 'button', className: 'btn small', testid: 'drain-' + n.name,
                     onclick: () => openForm(n.name, 'drain')}, 'Drain'),
        h('button', {type: 'button', className: 'btn small' + (held ? ' primary' : ''),
                     testid: 'uncordon-' + n.name, onclick: (ev) => act(ev.target, n.name, 'uncordon', {})},
          'Uncordon'),
      ];
    }

    function openForm(name, kind) {
      form = {name, kind};
      render();
    }

    function closeForm() {
      form = null;
      render();
    }

    function formRow(n) {
      const name = n.name;
      const kind = form.kind;
      const reason = h('input', {type: 'text', size: 40, maxlength: 1024, 'data-focus': '1',
                                 testid: kind + '-reason-' + name,
                                 placeholder: kind === 'drain' ? 'reason (required), e.g. kernel upgrade'
                                                               : 'reason, e.g. bad fan'});
      const deadline = kind === 'drain'
        ? h('input', {type: 'text', size: 8, testid: 'drain-deadline-' + name, placeholder: 'e.g. 30s',
                      title: 'How long each replica gets between SIGTERM and SIGKILL; empty: the job\'s stopGracePeriod'})
        : null;
      const msg = h('span', {className: 'error-inline', testid: kind + '-error-' + name});
      const confirm = h('button', {type: 'submit', className: 'btn ' + (kind === 'drain' ? 'danger' : 'primary'),
                                   testid: kind + '-confirm-' + name}, kind === 'drain' ? 'Drain' : 'Cordon');
      const f = h('form', {className: 'inline-form', testid: kind + '-form-' + name},
        h('span', null, kind === 'drain'
          ? 'Drain ' + name + ': no new work, and its replicas move to other nodes. '
          : 'Cordon ' + name + ': no new work; its replicas keep running. '),
        h('label', null, 'Reason ', reason),
        deadline ? h('label', null, 'Deadline ', deadline) : null,
        confirm,
        h('button', {type: 'button', className: 'btn ghost', testid: kind + '-cancel-' + name, onclick: closeForm}, 'Cancel'),
        msg);
      f.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        const text = reason.value.trim();
        if (kind === 'drain' && !text) {
          msg.textContent = 'A reason is required.';
          reason.focus();
          return;
        }
        const payload = {reason: text};
        if (deadline && deadline.value.trim()) {
          let d = deadline.value.trim();
          if (/^\d+(\.\d+)?$/.test(d)) d += 's';
          payload.deadline = d;
        }
        confirm.disabled = true;
        msg.textContent = '';
        try {
          await api('POST', '/v1/nodes/' + enc(name) + ':' + kind, payload);
          clearError();
          form = null;
          await load();
          render();
        } catch (e) {
          confirm.disabled = false;
          msg.textContent = e.message;
          if (e.status === 401) showError(e);
        }
      });
      return h('tr', {className: 'form-row', testid: 'node-form-' + name},
               h('td', {colspan: 9}, f));
    }

    async function act(button, name, verb, payload) {
      button.disabled = true;
      try {
        await api('POST', '/v1/nodes/' + enc(name) + ':' + verb, payload);
        clearError();
        await load();
      } catch (e) {
        showError(e);
      } finally {
        button.disabled = false;
      }
    }

    load();
    poll(scope, VIEW_REFRESH_MS, load);
  }

  // --- #/projects --------------------------------------------------------------------------

  function projectsView(scope) {
    let projects = [];
    let editing = null;   // project name whose quota form is open
    let lastKey = null;
    const body = h('div', {testid: 'projects-body'}, h('p', {className: 'muted'}, 'Loading…'));
    const updated = h('span', {className: 'muted small'}, '');
    main.appendChild(h('section', {testid: 'projects-view'},
      sectionTitle('Projects', h('div', {className: 'toolbar'},
        h('button', {type: 'button', className: 'btn small', testid: 'projects-refresh', onclick: () => load()}, 'Refresh'),
        updated)),
      body));

    async function load() {
      const c = scope.controller();
      try {
        const resp = await api('GET', '/v1/projects', undefined, c.signal);
        if (scope.closed) return;
        clearError();
        const key = JSON.stringify(resp.projects || []);
        projects = resp.projects || [];
        if (!editing && key !== lastKey) render();
        if (!editing) lastKey = key;
        updated.textContent = 'updated ' + new Date().toLocaleTimeString();
      } catch (e) {
        if (!scope.closed) showError(e);
      } finally {
        scope.release(c);
      }
    }

    const has = (v) => v !== undefined && v !== null && v !== '';

    function limitCell(used, limit, fmt, testid) {
      const u = num(used);
      if (!has(limit)) {
        return h('td', {testid}, fmt(u) + ' / ', h('span', {className: 'muted', title: 'no limit'}, '∞'));
      }
      const l = num(limit);
      const over = l > 0 && u > l;
      const pct = l > 0 ? Math.round(100 * u / l) : (u > 0 ? 100 : 0);
      return h('td', {testid},
        h('div', {className: 'usage' + (over ? ' over' : '')},
          h('span', null, fmt(u) + ' / ' + fmt(l)),
          h('span', {className: 'bar'}, h('span', {className: 'fill', style: {width: Math.min(100, pct) + '%'}}))));
    }

    function render() {
      if (!projects.length) {
        replaceContent(body, h('p', {className: 'empty', testid: 'projects-empty'}, 'No project has a quota or a job yet.'));
        return;
      }
      replaceContent(body, h('table', {className: 'grid', testid: 'projects-table'},
        h('thead', null, h('tr', null, ['Project', 'GPUs', 'CPU', 'Memory', 'Running jobs', 'Queued', 'Cohort',
                                        'Borrowed', 'Queueing', ''].map((t) => h('th', null, t)))),
        h('tbody', null, projects.map((p) => {
          const q = p.quota || {};
          const use = p.inUse || {};
          const borrowed = p.borrowed || {};
          return [
            h('tr', {testid: 'project-row-' + p.name},
              h('td', null, h('b', null, p.name), p.defaultQuota ? h('div', {className: 'note'}, 'default quota') : null,
                q.runAsUser ? h('div', {className: 'note'}, 'runs as ' + q.runAsUser)
                  : p.replicaUid ? h('div', {className: 'note'}, 'uid ' + p.replicaUid) : null),
              limitCell(use.gpus, q.gpus, fmtNumber, 'project-gpus-' + p.name),
              limitCell(use.cpu, q.cpu, fmtNumber, 'project-cpu-' + p.name),
              limitCell(use.memoryMb, q.memoryMb, fmtMemory, 'project-memory-' + p.name),
              limitCell(p.runningJobs, q.maxRunningJobs, fmtNumber, 'project-running-' + p.name),
              h('td', {className: 'num'}, p.queuedJobs
                ? h('a', {href: '#/queue?project=' + enc(p.name)}, String(p.queuedJobs)) : '0'),
              h('td', null, orDash(q.cohort)),
              h('td', {className: 'small'}, q.cohort ? resourcesText(borrowed) : '-'),
              h('td', {className: 'small'}, enumName(q.queueingStrategy, 'QUEUEING_STRATEGY_').replace('UNSPECIFIED', 'STRICT_FIFO'),
                q.starvationLimit ? h('div', {className: 'note'}, 'starvation ' + q.starvationLimit) : null),
              h('td', null, h('button', {type: 'button', className: 'btn small', testid: 'quota-edit-' + p.name,
                                         onclick: () => { editing = p.name; render(); }}, 'Edit quota'))),
            editing === p.name ? quotaForm(p) : null,
          ];
        }))));
    }

    function quotaForm(p) {
      const q = p.quota || {};
      const field = (key, label, placeholder) => {
        const input = h('input', {type: 'text', size: 8, testid: 'quota-' + key + '-' + p.name, placeholder,
                                  value: has(q[key]) ? String(q[key]) : ''});
        return {key, input, label: h('label', null, label + ' ', input)};
      };
      const fields = [field('gpus', 'GPUs', '∞'), field('cpu', 'CPU', '∞'), field('memoryMb', 'Memory MiB', '∞'),
                      field('maxRunningJobs', 'Running jobs', '∞'), field('cohort', 'Cohort', 'none')];
      const msg = h('span', {className: 'error-inline', testid: 'quota-error-' + p.name});
      const f = h('form', {className: 'inline-form', testid: 'quota-form-' + p.name},
        fields.map((x) => x.label),
        h('button', {type: 'submit', className: 'btn primary', testid: 'quota-save-' + p.name}, 'Save'),
        h('button', {type: 'button', className: 'btn ghost', onclick: () => { editing = null; render(); }}, 'Cancel'),
        h('span', {className: 'muted small'}, 'Empty: unlimited.'),
        msg);
      f.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        // The PUT replaces the quota: start from the current one so fields not shown here stay.
        const next = Object.assign({}, q, {project: p.name});
        for (const x of fields) {
          const v = x.input.value.trim();
          if (x.key === 'cohort') {
            if (v) next.cohort = v; else delete next.cohort;
            continue;
          }
          if (!v) {
            delete next[x.key];
            continue;
          }
          const n = Number(v);
          if (!Number.isFinite(n) || n < 0) {
            msg.textContent = x.key + ': not a number';
            return;
          }
          next[x.key] = x.key === 'memoryMb' ? String(Math.round(n)) : n;
        }
        try {
          await api('PUT', '/v1/projects/' + enc(p.name) + '/quota', next);
          editing = null;
          await load();
          render();
        } catch (e) {
          msg.textContent = e.message;
        }
      });
      return h('tr', {className: 'form-row'}, h('td', {colspan: 10}, f));
    }

    load();
    poll(scope, VIEW_REFRESH_MS, load);
  }

  tc.views.queue = queueView;
  tc.views.nodes = nodesView;
  tc.views.projects = projectsView;
})();
