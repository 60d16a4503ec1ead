// logs.js: the log panel of a trainctl console job page (#/jobs/{id}): pick a replica and an
// attempt, and its log is streamed from trainctld and followed as it is written, starting over
// when the replica runs again. Loaded after app.js, whose helpers it takes from window.trainctl;
// adds window.trainctl.logPanel, which job.js uses.
'use strict';

(function () {
  const tc = window.trainctl;
  const {TERMINAL, h, clear, replaceContent, jobState, replicaState, stream, enc} = tc;

  // The log panel of a job page: pick a replica (and attempt); its log is followed as it grows.
  function logPanel(scope, jobId) {
    const replicaSelect = h('select', {testid: 'log-replica', 'aria-label': 'Replica'});
    const attemptSelect = h('select', {testid: 'log-attempt', 'aria-label': 'Attempt'});
    const status = h('span', {className: 'muted small', testid: 'log-status'}, '');
    const wrapBox = h('input', {type: 'checkbox', checked: true});
    const pre = h('pre', {className: 'log wrap', testid: 'log-view'});
    const element = h('div', {className: 'logs'},
      h('div', {className: 'toolbar'},
        h('label', null, 'Replica ', replicaSelect),
        h('label', null, 'Attempt ', attemptSelect),
        h('label', {className: 'check'}, wrapBox, ' Wrap'),
        status),
      pre);
    wrapBox.addEventListener('change', () => pre.classList.toggle('wrap', wrapBox.checked));

    let job = null;
    let follower = null;     // {controller, replica, attempt, runKey, done}
    let retryTimer = null;

    const currentAttempt = () => (job && job.attempts && job.attempts.length
      ? job.attempts[job.attempts.length - 1].number || 0 : 0);
    const replicaOf = (name) => (job && job.replicas || []).find((r) => r.name === name);
    // What identifies a run of the replica: a new one starts a new log.
    const runKey = (name) => {
      const r = replicaOf(name);
      return currentAttempt() + '/' + (r ? r.restartCount || 0 : 0);
    };

    function setOptions(select, values, labels) {
      const keep = select.value;
      const same = select.options.length === values.length &&
                   values.every((v, i) => select.options[i].value === v);
      if (!same) {
        replaceContent(select, values.map((v, i) => h('option', {value: v, testid: 'log-option-' + v}, labels[i])));
        if (values.includes(keep)) select.value = keep;
      }
    }

    function update(next) {
      job = next;
      const names = (job.replicas || []).map((r) => r.name);
      setOptions(replicaSelect, names, names);
      // '' follows the current attempt, whichever it is; a number stays on that attempt.
      const numbers = (job.attempts || []).map((a) => String(a.number || 0)).reverse();
      setOptions(attemptSelect, [''].concat(numbers.slice(1)),
                 ['current' + (numbers.length ? ' (' + numbers[0] + ')' : '')].concat(numbers.slice(1)));
      if (!names.length) {
        status.textContent = 'waiting for placement';
        return;
      }
      const replica = replicaSelect.value || names[0];
      const attempt = attemptSelect.value ? Number(attemptSelect.value) : currentAttempt();
      const r = replicaOf(replica);
      if (attempt === currentAttempt() && r && !r.node &&
          ['PENDING', 'UNSPECIFIED'].includes(replicaState(r.state))) {
        // Not placed yet: nothing to read.
        if (follower && (follower.replica !== replica || follower.attempt !== attempt)) {
          stop();
          clear(pre);
        }
        status.textContent = 'waiting for ' + replica + ' to start';
        return;
      }
      if (!follower || follower.replica !== replica || follower.attempt !== attempt) {
        start(replica, attempt, false);
      } else if (follower.done) {
        restartIfNewRun(follower);
      }
    }

    // After a run's log ended: when the replica started again, follow the new run's log.
    function restartIfNewRun(f) {
      if (follower === f && f.done && job && f.attempt === currentAttempt() &&
          f.runKey !== runKey(f.replica) && !TERMINAL.has(jobState(job.state))) {
        start(f.replica, f.attempt, true);
      }
    }

    function stop() {
      if (retryTimer !== null) {
        scope.cancelTimer(retryTimer);
        retryTimer = null;
      }
      if (follower) {
        follower.controller.abort();
        scope.release(follower.controller);
        follower = null;
      }
    }

    // Appends log text, keeping the view under MAX_LOG_CHARS by dropping its oldest output.
    const MAX_LOG_CHARS = 2000000;
    let shown = 0;
    function append(text) {
      if (!text) return;
      pre.appendChild(document.createTextNode(text));
      shown += text.length;
      if (shown <= MAX_LOG_CHARS) return;
      let trimmed = false;
      while (shown > MAX_LOG_CHARS * 0.8 && pre.firstChild) {
        const node = pre.firstChild;
        shown -= (node.textContent || '').length;
        pre.removeChild(node);
        trimmed = true;
      }
      if (trimmed) {
        const note = '(earlier output not shown: trainctl logs has all of it)\n';
        pre.insertBefore(document.createTextNode(note), pre.firstChild);
        shown += note.length;
      }
    }

    function start(replica, attempt, continued) {
      stop();
      if (continued) {
        append('\n──── ' + replica + ' started again (attempt/restart ' + runKey(replica) + ') ────\n');
      } else {
        clear(pre);
        shown = 0;
      }
      const f = {controller: scope.controller(), replica, attempt, runKey: runKey(replica), done: false,
                 offset: 0, decoder: new TextDecoder()};
      follower = f;
      follow(f);
    }

    async function follow(f) {
      const attempt = f.attempt;
      const q = new URLSearchParams({offset: String(f.offset), follow: 'true'});
      if (attempt && attempt !== currentAttempt()) q.set('attempt', String(attempt));
      status.textContent = 'following ' + f.replica;
      const path = '/v1/jobs/' + enc(jobId) + '/replicas/' + enc(f.replica) + '/logs?' + q.toString();
      try {
        await stream(path, f.controller.signal, (chunk) => {
          if (follower !== f) return;
          f.offset += chunk.length;
          const atBottom = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 24;
          append(f.decoder.decode(chunk, {stream: true}));
          if (atBottom) pre.scrollTop = pre.scrollHeight;
        });
        if (follower !== f) return;
        append(f.decoder.decode());
        f.done = true;
        status.textContent = f.offset ? 'end of log (' + f.offset + ' bytes)' : 'empty log';
        if (!f.offset) pre.appendChild(h('span', {className: 'muted', testid: 'log-empty'}, '(no output)'));
        restartIfNewRun(f);
      } catch (e) {
        if (follower !== f || e.name === 'AbortError' || scope.closed) return;
        // Not started yet, or the node is unreachable for now: try again while the job lives.
        status.textContent = e.message;
        if (job && !TERMINAL.has(jobState(job.state))) {
          retryTimer = scope.later(2000, () => {
            retryTimer = null;
            if (follower === f) follow(f);
          });
        } else if (!f.offset) {
          replaceContent(pre, h('span', {className: 'muted', testid: 'log-error'}, e.message));
        }
      }
    }

    replicaSelect.addEventListener('change', () => job && update(job));
    attemptSelect.addEventListener('change', () => job && update(job));
    return {element, update};
  }

  tc.logPanel = logPanel;
})();
