/**
 * The admin page: plain HTML, CSS and JavaScript, no framework and no build step, served by the
 * control plane at /admin (admin.ts). Kept as strings in this module so that `tsc` carries them to
 * dist/ with the rest (the package ships dist/ only).
 *
 * The page asks for the admin token, keeps it in sessionStorage (this tab only) and sends it as a
 * bearer token with every call to the admin API. It shows the leader status, the tenants, and the
 * queues with their visible / in-flight / delayed counts, refreshed every 2 s; a queue can be
 * peeked into, purged and redriven, the last two after a confirmation.
 *
 * The script avoids template literals, so it can sit inside this file's own.
 */

export const ADMIN_INDEX_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>shared-sqs admin</title>
<link rel="stylesheet" href="/admin/style.css">
</head>
<body>
<header>
  <h1>shared-sqs</h1>
  <span id="leader" class="badge">not logged in</span>
  <button id="logout" hidden>Log out</button>
</header>
<main>
  <section id="login-panel">
    <h2>Log in</h2>
    <form id="login-form">
      <label>Admin token <input id="token" type="password" autocomplete="off" required></label>
      <button id="login" type="submit">Log in</button>
    </form>
    <p id="login-error" class="error" role="alert"></p>
  </section>
  <section id="app" hidden>
    <p id="status" role="status"></p>
    <p id="memory"></p>
    <h2>Tenants</h2>
    <table id="tenants">
      <thead><tr><th>Name</th><th>Account</th><th>Keys</th><th>Queues</th><th>Memory</th></tr></thead>
      <tbody></tbody>
    </table>
    <h2>Queues <small id="refreshed"></small></h2>
    <table id="queues">
      <thead><tr><th>Tenant</th><th>Region</th><th>Queue</th><th>Visible</th><th>In flight</th><th>Delayed</th><th>Memory</th><th></th></tr></thead>
      <tbody></tbody>
    </table>
    <section id="peek" hidden>
      <h2>Messages in <span id="peek-queue"></span> <button id="peek-close">Close</button></h2>
      <p id="peek-total"></p>
      <table id="peek-messages">
        <thead><tr><th>Message id</th><th>State</th><th>Receives</th><th>Sent</th><th>Body</th></tr></thead>
        <tbody></tbody>
      </table>
    </section>
  </section>
</main>
<dialog id="confirm">
  <form method="dialog">
    <p id="confirm-text"></p>
    <menu>
      <button id="confirm-cancel" value="cancel">Cancel</button>
      <button id="confirm-ok" value="ok" class="danger">Confirm</button>
    </menu>
  </form>
</dialog>
<script src="/admin/app.js"></script>
</body>
</html>
`;

export const ADMIN_STYLE_CSS = `body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #222; }
header { display: flex; gap: 1em; align-items: center; padding: .5em 1em; background: #232f3e; color: #fff; }
header h1 { font-size: 1.2em; margin: 0; }
main { padding: 1em; }
.badge { padding: .1em .6em; border-radius: 1em; background: #555; }
.badge.leader { background: #1d8102; }
.badge.follower { background: #d13212; }
table { border-collapse: collapse; margin-bottom: 1.5em; min-width: 40em; }
th, td { border-bottom: 1px solid #ddd; padding: .3em .7em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.body { max-width: 40em; overflow-wrap: anywhere; font-family: ui-monospace, monospace; }
.error { color: #d13212; }
button.danger { background: #d13212; color: #fff; border: 0; padding: .3em .8em; }
small { color: #666; font-weight: normal; }
`;

export const ADMIN_APP_JS = `'use strict';
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
`;
