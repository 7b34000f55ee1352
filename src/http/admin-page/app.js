'use strict';
(function () {
  var TOKEN_KEY = 'shared-sqs-admin-token';
  var REFRESH_MS = 2000;
  var timer = null;
  var peeked = null;

  function $(sel) { return document.querySelector(sel); }
  function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

  function api(method, path, body) {
    var init = { method: method, headers: { authorization: 'Bearer ' + token() } };
    if (body !== undefined) {
      init.headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    return fetch(path, init).then(function (res) {
      return res.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = { message: text }; }
        if (res.status === 401) { logout('The token was refused.'); }
        if (!res.ok) {
          var err = new Error((data && data.message) || ('HTTP ' + res.status));
          err.status = res.status;
          throw err;
        }
        return data;
      });
    });
  }

  function cell(row, text, cls) {
    var td = document.createElement('td');
    td.textContent = text === null || text === undefined ? '' : String(text);
    if (cls) td.className = cls;
    row.appendChild(td);
    return td;
  }

  function button(label, cls, onClick) {
    var b = document.createElement('button');
    b.textContent = label;
    b.className = cls;
    b.addEventListener('click', onClick);
    return b;
  }

  function queuePath(q) {
    return '/admin/queues/' + encodeURIComponent(q.accountId) + '/' + encodeURIComponent(q.region) + '/' + encodeURIComponent(q.name);
  }

  function status(text, isError) {
    var p = $('#status');
    p.textContent = text;
    p.className = isError ? 'error' : '';
  }

  function confirmThen(text, action) {
    var dialog = $('#confirm');
    $('#confirm-text').textContent = text;
    dialog.returnValue = '';
    dialog.addEventListener('close', function onClose() {
      dialog.removeEventListener('close', onClose);
      if (dialog.returnValue === 'ok') action();
    });
    dialog.showModal();
  }

  function renderLeader(l) {
    var badge = $('#leader');
    if (!l.leaderElection) {
      badge.textContent = 'single instance (leader)';
      badge.className = 'badge leader';
    } else {
      badge.textContent = l.state + (l.epoch !== null ? ' (epoch ' + l.epoch + ')' : '') + (l.lock && l.lock.holder ? ' · lock: ' + l.lock.holder : '');
      badge.className = 'badge ' + (l.leading ? 'leader' : 'follower');
    }
  }

  function mib(bytes) {
    return bytes === null ? 'unlimited' : (bytes / 1048576).toFixed(1) + ' MiB';
  }

  function renderMemory(m) {
    var p = $('#memory');
    p.textContent = 'Memory budget: ' + mib(m.usedBytes) + ' of ' + mib(m.budgetBytes) + ' used' +
      (m.refusing ? ' · sends refused until usage is under ' + mib(m.lowWaterBytes) : '');
    p.className = m.refusing ? 'error' : '';
  }

  function renderTenants(list) {
    var tbody = $('#tenants tbody');
    tbody.textContent = '';
    list.forEach(function (t) {
      var tr = document.createElement('tr');
      tr.dataset.tenant = t.name;
      cell(tr, t.name);
      cell(tr, t.accountId);
      cell(tr, t.keys.map(function (k) { return k.accessKeyId; }).join(', '));
      cell(tr, t.queues, 'num');
      cell(tr, mib(t.memoryUsedBytes) + ' of ' + mib(t.memoryLimitBytes) + (t.memoryShare !== null ? ' (share ' + t.memoryShare + ')' : ''), 'num memory');
      tbody.appendChild(tr);
    });
  }

  function renderQueues(list) {
    var tbody = $('#queues tbody');
    tbody.textContent = '';
    list.forEach(function (q) {
      var tr = document.createElement('tr');
      tr.dataset.queue = q.accountId + '/' + q.region + '/' + q.name;
      cell(tr, q.tenant);
      cell(tr, q.region);
      cell(tr, q.name, 'name');
      cell(tr, q.visible, 'num visible');
      cell(tr, q.inflight, 'num inflight');
      cell(tr, q.delayed, 'num delayed');
      cell(tr, mib(q.memoryBytes), 'num memory');
      var actions = cell(tr, '');
      actions.appendChild(button('Peek', 'peek', function () { peek(q); }));
      actions.appendChild(button('Purge', 'purge', function () {
        confirmThen('Purge ' + q.name + ' (' + q.tenant + ')? Its ' + (q.visible + q.inflight + q.delayed) + ' message(s) are deleted for good.', function () {
          api('POST', queuePath(q) + '/purge').then(function (r) {
            status('Purged ' + r.purged + ' message(s) from ' + q.name + '.');
            refresh();
          }, function (e) { status('Purge failed: ' + e.message, true); });
        });
      }));
      if (q.name.length > 0) {
        actions.appendChild(button('Redrive', 'redrive', function () {
          confirmThen('Move the messages of ' + q.name + ' back to their source queues?', function () {
            api('POST', queuePath(q) + '/redrive', {}).then(function (r) {
              status('Redrive of ' + q.name + ' started: ' + r.toMove + ' message(s) to move.');
              refresh();
            }, function (e) { status('Redrive failed: ' + e.message, true); });
          });
        }));
      }
      tbody.appendChild(tr);
    });
    $('#refreshed').textContent = 'updated ' + new Date().toLocaleTimeString();
  }

  function peek(q) {
    peeked = q;
    api('GET', queuePath(q) + '/messages?max=20').then(function (r) {
      $('#peek').hidden = false;
      $('#peek-queue').textContent = q.name;
      $('#peek-total').textContent = r.total + ' message(s) in the queue; the oldest ' + r.messages.length + ' shown, none of them received.';
      var tbody = $('#peek-messages tbody');
      tbody.textContent = '';
      r.messages.forEach(function (m) {
        var tr = document.createElement('tr');
        tr.dataset.messageId = m.messageId;
        cell(tr, m.messageId);
        cell(tr, m.state);
        cell(tr, m.receiveCount, 'num');
        cell(tr, m.sentAt);
        cell(tr, m.body + (m.bodyTruncated ? ' …' : ''), 'body');
        tbody.appendChild(tr);
      });
    }, function (e) { status('Peek failed: ' + e.message, true); });
  }

  function refresh() {
    return Promise.all([
      api('GET', '/admin/leader').then(renderLeader),
      api('GET', '/admin/memory').then(renderMemory),
      api('GET', '/admin/tenants').then(function (r) { renderTenants(r.tenants); }),
      api('GET', '/admin/queues').then(function (r) { renderQueues(r.queues); }),
    ]).catch(function (e) {
      if (e.status !== 401) status('Refresh failed: ' + e.message, true);
    });
  }

  function start() {
    $('#login-panel').hidden = true;
    $('#app').hidden = false;
    $('#logout').hidden = false;
    refresh();
    if (timer === null) timer = setInterval(refresh, REFRESH_MS);
  }

  function logout(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    if (timer !== null) clearInterval(timer);
    timer = null;
    $('#app').hidden = true;
    $('#logout').hidden = true;
    $('#login-panel').hidden = false;
    $('#leader').textContent = 'not logged in';
    $('#leader').className = 'badge';
    $('#login-error').textContent = message || '';
  }

  $('#login-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('#token').value);
    $('#token').value = '';
    api('GET', '/admin/tenants').then(function () {
      $('#login-error').textContent = '';
      start();
    }, function (e) {
      if (e.status !== 401) logout('Login failed: ' + e.message);
    });
  });
  $('#logout').addEventListener('click', function () { logout(''); });
  $('#peek-close').addEventListener('click', function () { $('#peek').hidden = true; peeked = null; });

  if (token() !== '') start();
  window.sharedSqsAdmin = { refresh: refresh, peeked: function () { return peeked; } };
})();
