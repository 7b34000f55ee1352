/**
 * The admin page's script (a module: strict, loaded after the document is parsed). It keeps the
 * admin token in sessionStorage (this tab only) and sends it as a bearer token with every call to
 * the admin API; a 401 logs out.
 *
 * Every 2 s it reloads the leader status, the memory budget, the tenants and the queues with their
 * history (the server samples every 5 s, src/http/admin-history.ts), and the open queue's oldest
 * messages, and redraws the tables and charts. The queue open in the detail panel is named by the location hash (#queue=account/region/
 * name), so the dead-letter links are plain links. The send form is never redrawn: what is typed
 * in it stays.
 *
 * Everything the server sends is put in the page as text (textContent), never as HTML.
 */

const TOKEN_KEY = 'shared-sqs-admin-token';
const REFRESH_MS = 2000;
/** The server samples every 5 s: the histories are asked for no more often than that. */
const HISTORY_MS = 5000;
const PEEK_MAX = 20;
/** The charts' time axis: what the samples span, at least 2 and at most 10 minutes. */
const MIN_WINDOW_MS = 2 * 60 * 1000;
const MAX_WINDOW_MS = 10 * 60 * 1000;
const SVG = 'http://www.w3.org/2000/svg';

const state = {
  timer: null,
  /** The last listing: queues by "account/region/name", and their keys by ARN. */
  queues: new Map(),
  byArn: new Map(),
  tenants: [],
  /** The key of the queue open in the detail panel, or null, and its history sample by sample. */
  selected: null,
  detailHistory: null,
  /** When the histories were last loaded (Date.now()). */
  historyAt: 0,
};

const $ = (sel) => document.querySelector(sel);
const token = () => sessionStorage.getItem(TOKEN_KEY) ?? '';

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(method, path, body) {
  const init = { method, headers: { authorization: `Bearer ${token()}` } };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let data;
  try {
    data = text === '' ? null : JSON.parse(text);
  } catch {
    data = { message: text };
  }
  if (res.status === 401) logout('The token was refused.');
  if (!res.ok) throw new ApiError(res.status, data?.message ?? `HTTP ${res.status}`);
  return data;
}

// ---- small builders -------------------------------------------------------------------------

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') node.className = v;
    else if (k === 'data') Object.assign(node.dataset, v);
    else node[k] = v;
  }
  for (const c of children) node.append(c);
  return node;
}

function cell(row, text, cls = '') {
  const td = el('td', { class: cls, textContent: text === null || text === undefined ? '' : String(text) });
  row.append(td);
  return td;
}

function button(label, cls, onClick) {
  const b = el('button', { class: cls, textContent: label, type: 'button' });
  b.addEventListener('click', onClick);
  return b;
}

const keyOf = (q) => `${q.accountId}/${q.region}/${q.name}`;
const queuePath = (q) =>
  `/admin/queues/${encodeURIComponent(q.accountId)}/${encodeURIComponent(q.region)}/${encodeURIComponent(q.name)}`;

/** A link that opens a queue in the detail panel: by ARN, plain text when the queue is not listed. */
function queueLink(arn) {
  const key = state.byArn.get(arn);
  const name = arn.slice(arn.lastIndexOf(':') + 1);
  if (key === undefined) return el('span', { textContent: name, title: arn });
  return el('a', { href: `#queue=${key}`, textContent: name, title: arn, class: 'queue-link' });
}

function mib(bytes) {
  return bytes === null ? 'unlimited' : `${(bytes / 1048576).toFixed(1)} MiB`;
}

function age(seconds) {
  if (seconds === null) return '–';
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86400) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86400).toFixed(1)} d`;
}

function status(text, isError = false) {
  const p = $('#status');
  p.textContent = text;
  p.className = isError ? 'error' : 'ok';
}

function confirmThen(text, action) {
  const dialog = $('#confirm');
  $('#confirm-text').textContent = text;
  dialog.returnValue = '';
  dialog.addEventListener(
    'close',
    () => {
      if (dialog.returnValue === 'ok') action();
    },
    { once: true },
  );
  dialog.showModal();
}

// ---- charts ---------------------------------------------------------------------------------

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

/** Per-second rates of a per-interval count series. */
const perSecond = (h, series) => h[series].map((n) => n / h.intervalSeconds);

function windowOf(h) {
  const span = (h.sent.length - 1) * h.intervalSeconds * 1000;
  return Math.min(MAX_WINDOW_MS, Math.max(MIN_WINDOW_MS, span));
}

/** x of each sample on a `width` wide time axis that ends at the newest sample. */
function xs(h, width) {
  const span = windowOf(h);
  const last = h.sent.length - 1;
  return h.sent.map((_, i) => ((span - (last - i) * h.intervalSeconds * 1000) / span) * width);
}

function points(x, ys, max, height, pad) {
  return ys.map((y, i) => `${x[i].toFixed(1)},${(height - pad - (y / max) * (height - 2 * pad)).toFixed(1)}`);
}

/**
 * A chart of `series` (each {values, cls}) over the last 10 minutes: lines, or stacked areas.
 * `labels`: the y-axis maximum and the time marks, for the detail panel's larger charts.
 */
function chart(h, series, options) {
  const { width, height, stacked, labels, title } = options;
  const root = svg('svg', {
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    class: `chart-svg${labels ? ' large' : ''}`,
    role: 'img',
  });
  const caption = svg('title', {});
  caption.textContent = title;
  root.append(caption);
  const left = labels ? 36 : 0;
  const plotW = width - left;
  const pad = 2;
  // The larger charts keep a line below for the time marks.
  const plotH = labels ? height - 16 : height;
  const g = svg('g', { transform: `translate(${left},0)` });
  root.append(g);
  if (h === null || h.sent.length === 0) {
    const t = svg('text', { x: plotW / 2, y: plotH / 2 + 4, 'text-anchor': 'middle', class: 'no-data' });
    t.textContent = h === null ? 'not sampled yet' : 'no samples';
    g.append(t);
    return root;
  }
  if (h.sent.length === 1) {
    // One sample is drawn over its interval, or a line of no width would not show.
    return chart(
      widen(h),
      series.map((s) => ({ ...s, values: [s.values[0], s.values[0]] })),
      options,
    );
  }
  const x = xs(h, plotW);
  const bottom = plotH - pad;
  let max = 0;
  if (stacked) {
    for (let i = 0; i < h.sent.length; i++)
      max = Math.max(
        max,
        series.reduce((s, v) => s + v.values[i], 0),
      );
  } else {
    for (const s of series) max = Math.max(max, ...s.values);
  }
  max = niceMax(max);
  if (labels) {
    for (const frac of [0, 0.5, 1]) {
      const y = bottom - frac * (plotH - 2 * pad);
      g.append(svg('line', { x1: 0, x2: plotW, y1: y, y2: y, class: 'grid' }));
      const t = svg('text', { x: -4, y: y + 4, 'text-anchor': 'end', class: 'axis' });
      t.textContent = formatNumber(max * frac);
      g.append(t);
    }
    const minutes = Math.round(windowOf(h) / 60000);
    for (const [at, text, anchor] of [
      [0, `−${minutes} min`, 'start'],
      [plotW, 'now', 'end'],
    ]) {
      const t = svg('text', { x: at, y: plotH + 12, 'text-anchor': anchor, class: 'axis' });
      t.textContent = text;
      g.append(t);
    }
  } else {
    g.append(svg('line', { x1: 0, x2: plotW, y1: bottom, y2: bottom, class: 'grid' }));
  }
  if (stacked) {
    let base = h.sent.map(() => 0);
    for (const s of series) {
      const top = base.map((b, i) => b + s.values[i]);
      const upper = points(x, top, max, plotH, pad);
      const lower = points(x, base, max, plotH, pad).reverse();
      g.append(svg('polygon', { points: [...upper, ...lower].join(' '), class: `area ${s.cls}` }));
      base = top;
    }
  } else {
    for (const s of series) {
      g.append(
        svg('polyline', { points: points(x, s.values, max, plotH, pad).join(' '), class: `line ${s.cls}` }),
      );
    }
  }
  return root;
}

/** The history with its one sample twice, one interval apart. */
function widen(h) {
  const out = { ...h };
  for (const k of ['sent', 'received', 'deleted', 'visible', 'inflight', 'delayed'])
    out[k] = [h[k][0], h[k][0]];
  return out;
}

function niceMax(max) {
  if (max <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 2.5, 5, 10]) if (max <= m * p) return m * p;
  return 10 * p;
}

function formatNumber(n) {
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e4) return `${Math.round(n / 1e3)}k`;
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

const depthSeries = (h) => [
  { values: h === null ? [] : h.visible, cls: 'visible' },
  { values: h === null ? [] : h.inflight, cls: 'inflight' },
  { values: h === null ? [] : h.delayed, cls: 'delayed' },
];
const rateSeries = (h) => [
  { values: h === null ? [] : perSecond(h, 'sent'), cls: 'sent' },
  { values: h === null ? [] : perSecond(h, 'received'), cls: 'received' },
  { values: h === null ? [] : perSecond(h, 'deleted'), cls: 'deleted' },
];

function lastRates(h) {
  if (h === null || h.sent.length === 0) return '';
  const i = h.sent.length - 1;
  return ['sent', 'received', 'deleted'].map((s) => formatNumber(h[s][i] / h.intervalSeconds)).join(' / ');
}

// ---- rendering ------------------------------------------------------------------------------

function renderLeader(l) {
  const badge = $('#leader');
  if (!l.leaderElection) {
    badge.textContent = 'single instance (leader)';
    badge.className = 'badge leader';
  } else {
    const epoch = l.epoch !== null ? ` (epoch ${l.epoch})` : '';
    const lock = l.lock?.holder ? ` · lock: ${l.lock.holder}` : '';
    badge.textContent = `${l.state}${epoch}${lock}`;
    badge.className = `badge ${l.leading ? 'leader' : 'follower'}`;
  }
}

function renderMemory(m) {
  const p = $('#memory');
  p.textContent =
    `Memory budget: ${mib(m.usedBytes)} of ${mib(m.budgetBytes)} used` +
    (m.refusing ? ` · sends refused until usage is under ${mib(m.lowWaterBytes)}` : '');
  p.className = m.refusing ? 'refusing' : '';
}

function renderTenants(list) {
  state.tenants = list;
  const tbody = $('#tenants tbody');
  tbody.textContent = '';
  for (const t of list) {
    const tr = el('tr', { data: { tenant: t.name } });
    cell(tr, t.name);
    cell(tr, t.accountId, 'mono');
    cell(tr, t.keys.map((k) => k.accessKeyId).join(', '), 'mono');
    cell(tr, t.queues, 'num');
    const share = t.memoryShare !== null ? ` (share ${t.memoryShare})` : '';
    cell(tr, `${mib(t.memoryUsedBytes)} of ${mib(t.memoryLimitBytes)}${share}`, 'num memory');
    tbody.append(tr);
  }
  $('#tenants-empty').hidden = list.length > 0;
}

function renderQueues(list) {
  state.queues = new Map(list.map((q) => [keyOf(q), q]));
  state.byArn = new Map(list.map((q) => [q.arn, keyOf(q)]));
  const filter = $('#filter').value.trim();
  const tbody = $('#queues tbody');
  tbody.textContent = '';
  for (const q of list) {
    if (filter !== '' && !q.name.includes(filter)) continue;
    const key = keyOf(q);
    const tr = el('tr', { data: { queue: key }, class: key === state.selected ? 'selected' : '' });
    const name = cell(tr, '', 'name');
    name.append(el('a', { href: `#queue=${key}`, textContent: q.name, class: 'queue-link' }));
    if (q.fifo) name.append(el('span', { class: 'tag', textContent: 'FIFO' }));
    if (q.deadLetterSources.length > 0) name.append(el('span', { class: 'tag dlq', textContent: 'DLQ' }));
    cell(tr, q.tenant);
    cell(tr, q.region);
    cell(tr, q.visible, 'num visible');
    cell(tr, q.inflight, 'num inflight');
    cell(tr, q.delayed, 'num delayed');
    cell(tr, age(q.oldestMessageAgeSeconds), 'num oldest');
    cell(tr, '', 'spark depth').append(
      chart(q.history, depthSeries(q.history), {
        width: 120,
        height: 28,
        stacked: true,
        title: `${q.name}: depth`,
      }),
    );
    const rates = cell(tr, '', 'spark rates');
    rates.append(
      chart(q.history, rateSeries(q.history), {
        width: 120,
        height: 28,
        title: `${q.name}: messages per second`,
      }),
      el('span', {
        class: 'rate-now',
        textContent: lastRates(q.history),
        title: `sent / received / deleted per second, in the last ${q.history?.intervalSeconds ?? 0} s`,
      }),
    );
    const dl = cell(tr, '', 'dead-letter');
    if (q.deadLetterTarget !== null) dl.append('→ ', queueLink(q.deadLetterTarget));
    if (q.deadLetterSources.length > 0) {
      dl.append('← ');
      q.deadLetterSources.forEach((arn, i) => dl.append(...(i > 0 ? [', '] : []), queueLink(arn)));
    }
    cell(tr, mib(q.memoryBytes), 'num memory');
    const actions = cell(tr, '', 'actions');
    actions.append(button('Purge', 'purge', () => purge(q)));
    // Only a dead-letter queue can be redriven (StartMessageMoveTask's rule).
    if (q.deadLetterSources.length > 0) actions.append(button('Redrive', 'redrive', () => redrive(q)));
    tbody.append(tr);
  }
  $('#queues-empty').hidden = list.length > 0;
  $('#refreshed').textContent = `updated ${new Date().toLocaleTimeString()}`;
  renderDetail();
}

function renderDetail() {
  const q = state.selected === null ? undefined : state.queues.get(state.selected);
  const panel = $('#detail');
  if (q === undefined) {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  panel.dataset.queue = keyOf(q);
  panel.classList.toggle('fifo', q.fifo);
  $('#detail-title').textContent = `${q.name} · ${q.tenant} · ${q.region}`;
  const meta = $('#detail-meta');
  meta.textContent = '';
  const item = (label, ...value) => meta.append(el('dt', { textContent: label }), el('dd', {}, ...value));
  item('ARN', q.arn);
  if (q.url !== null) item('URL', q.url);
  item(
    'Oldest message',
    q.oldestMessageAgeSeconds === null ? 'none' : `${age(q.oldestMessageAgeSeconds)} old`,
  );
  if (q.deadLetterTarget !== null) item('Dead-letter queue', queueLink(q.deadLetterTarget));
  if (q.deadLetterSources.length > 0) {
    const links = [];
    q.deadLetterSources.forEach((arn, i) => links.push(...(i > 0 ? [', '] : []), queueLink(arn)));
    item('Dead-letter queue of', ...links);
  }
  // The listing's history has a point every 20 s; the queue's own, every 5 s, once loaded.
  const h = state.detailHistory ?? q.history;
  $('#chart-depth').replaceChildren(
    chart(h, depthSeries(h), {
      width: 520,
      height: 150,
      stacked: true,
      labels: true,
      title: `${q.name}: depth over the last 10 minutes`,
    }),
  );
  $('#chart-rates').replaceChildren(
    chart(h, rateSeries(h), {
      width: 520,
      height: 150,
      labels: true,
      title: `${q.name}: messages per second over the last 10 minutes`,
    }),
  );
}

/** Loads the open queue's oldest messages and its history sample by sample. */
async function peek() {
  const q = state.queues.get(state.selected);
  if (q === undefined) return;
  const [detail, r] = await Promise.all([
    api('GET', queuePath(q)),
    api('GET', `${queuePath(q)}/messages?max=${PEEK_MAX}`),
  ]);
  if (state.selected !== keyOf(q)) return;
  state.detailHistory = detail.history;
  renderDetail();
  $('#peek-total').textContent =
    `${r.total} message(s) in the queue; the oldest ${r.messages.length} shown, none of them received.`;
  const tbody = $('#peek-messages tbody');
  tbody.textContent = '';
  for (const m of r.messages) {
    const tr = el('tr', { data: { messageId: m.messageId } });
    cell(tr, m.messageId, 'mono');
    cell(tr, m.state === 'inflight' ? 'in flight' : m.state, `state ${m.state}`);
    cell(tr, m.receiveCount, 'num');
    cell(tr, new Date(m.sentAt).toLocaleTimeString(), 'sent-at').title = m.sentAt;
    const body = cell(tr, m.body + (m.bodyTruncated ? ' …' : ''), 'body');
    const attrs = Object.entries(m.attributes);
    if (attrs.length > 0 || m.groupId !== null) {
      const extra = attrs.map(([k, v]) => `${k}=${v.StringValue ?? v.BinaryValue ?? ''}`);
      if (m.groupId !== null) extra.unshift(`group ${m.groupId}`);
      body.append(el('div', { class: 'attrs', textContent: extra.join(' · ') }));
    }
    cell(tr, '', 'actions').append(button('Delete', 'delete-message danger-text', () => deleteMessage(q, m)));
    tbody.append(tr);
  }
}

// ---- actions --------------------------------------------------------------------------------

function purge(q) {
  const n = q.visible + q.inflight + q.delayed;
  confirmThen(`Purge ${q.name} (${q.tenant})? Its ${n} message(s) are deleted for good.`, async () => {
    try {
      const r = await api('POST', `${queuePath(q)}/purge`);
      status(`Purged ${r.purged} message(s) from ${q.name}.`);
      await refresh();
    } catch (e) {
      status(`Purge failed: ${e.message}`, true);
    }
  });
}

function redrive(q) {
  confirmThen(`Move the messages of ${q.name} back to their source queues?`, async () => {
    try {
      const r = await api('POST', `${queuePath(q)}/redrive`, {});
      status(`Redrive of ${q.name} started: ${r.toMove} message(s) to move.`);
      await refresh();
    } catch (e) {
      status(`Redrive failed: ${e.message}`, true);
    }
  });
}

function deleteMessage(q, m) {
  confirmThen(`Delete message ${m.messageId} from ${q.name}? It is gone for good.`, async () => {
    try {
      await api('DELETE', `${queuePath(q)}/messages/${encodeURIComponent(m.messageId)}`);
      status(`Deleted message ${m.messageId} from ${q.name}.`);
      await refresh();
    } catch (e) {
      status(`Delete failed: ${e.message}`, true);
    }
  });
}

function addAttributeRow() {
  const row = el(
    'div',
    { class: 'attribute' },
    el('input', { class: 'attr-name', placeholder: 'name', ariaLabel: 'Attribute name' }),
    el(
      'select',
      { class: 'attr-type', ariaLabel: 'Attribute type' },
      ...['String', 'Number', 'Binary'].map((t) => el('option', { value: t, textContent: t })),
    ),
    el('input', { class: 'attr-value', placeholder: 'value (Binary: base64)', ariaLabel: 'Attribute value' }),
  );
  row.append(button('×', 'remove', () => row.remove()));
  $('#send-attributes').append(row);
}

async function send(ev) {
  ev.preventDefault();
  const q = state.queues.get(state.selected);
  if (q === undefined) return;
  const input = { body: $('#send-body').value };
  if (q.fifo) {
    if ($('#send-group').value !== '') input.groupId = $('#send-group').value;
    if ($('#send-dedup').value !== '') input.deduplicationId = $('#send-dedup').value;
  } else if ($('#send-delay').value !== '') {
    input.delaySeconds = Number($('#send-delay').value);
  }
  const attributes = {};
  for (const row of document.querySelectorAll('#send-attributes .attribute')) {
    const name = row.querySelector('.attr-name').value.trim();
    if (name === '') continue;
    const type = row.querySelector('.attr-type').value;
    const value = row.querySelector('.attr-value').value;
    attributes[name] =
      type === 'Binary' ? { DataType: type, BinaryValue: value } : { DataType: type, StringValue: value };
  }
  if (Object.keys(attributes).length > 0) input.attributes = attributes;
  try {
    const r = await api('POST', `${queuePath(q)}/messages`, input);
    status(
      r.duplicate
        ? `Not stored: a duplicate of message ${r.messageId} (same deduplication id within 5 minutes).`
        : `Sent message ${r.messageId} to ${q.name}.`,
    );
    $('#send-body').value = '';
    $('#send-dedup').value = '';
    await refresh();
  } catch (e) {
    status(`Send failed: ${e.message}`, true);
  }
}

function openCreate() {
  const tenant = $('#create-tenant');
  tenant.replaceChildren(
    el('option', { value: '', textContent: '(default account)' }),
    ...state.tenants.map((t) => el('option', { value: t.name, textContent: `${t.name} (${t.accountId})` })),
  );
  const dlq = $('#create-dlq');
  dlq.replaceChildren(
    el('option', { value: '', textContent: '(none)' }),
    ...[...state.queues.values()].map((q) =>
      el('option', { value: q.arn, textContent: `${q.name} (${q.tenant}, ${q.region})` }),
    ),
  );
  $('#create-form').reset();
  $('#create-error').textContent = '';
  $('#create-dialog').showModal();
}

async function create(ev) {
  ev.preventDefault();
  let name = $('#create-name').value.trim();
  const fifo = $('#create-fifo').checked || name.endsWith('.fifo');
  if (fifo && !name.endsWith('.fifo')) name += '.fifo';
  const attributes = {};
  if (fifo) attributes.FifoQueue = 'true';
  if (fifo && $('#create-content-dedup').checked) attributes.ContentBasedDeduplication = 'true';
  if ($('#create-visibility').value !== '') attributes.VisibilityTimeout = $('#create-visibility').value;
  if ($('#create-delay').value !== '') attributes.DelaySeconds = $('#create-delay').value;
  if ($('#create-dlq').value !== '') {
    attributes.RedrivePolicy = JSON.stringify({
      deadLetterTargetArn: $('#create-dlq').value,
      maxReceiveCount: Number($('#create-max-receives').value || '5'),
    });
  }
  const input = { name, attributes };
  if ($('#create-tenant').value !== '') input.tenant = $('#create-tenant').value;
  if ($('#create-region').value.trim() !== '') input.region = $('#create-region').value.trim();
  try {
    const q = await api('POST', '/admin/queues', input);
    $('#create-dialog').close();
    status(`Created ${q.name} (${q.tenant}, ${q.region}).`);
    location.hash = `queue=${keyOf(q)}`;
    await refresh();
  } catch (e) {
    $('#create-error').textContent = e.message;
  }
}

/** Opens the queue the location hash names, if any. */
function select() {
  const m = /^#queue=(.+)$/.exec(location.hash);
  const key = m === null ? null : decodeURIComponent(m[1]);
  if (key === state.selected) return;
  state.selected = key;
  state.detailHistory = null;
  for (const tr of document.querySelectorAll('#queues tbody tr')) {
    tr.classList.toggle('selected', tr.dataset.queue === key);
  }
  $('#peek-messages tbody').textContent = '';
  $('#peek-total').textContent = '';
  renderDetail();
  if (key !== null && state.queues.has(key)) {
    $('#detail').scrollIntoView({ block: 'nearest' });
    peek().catch((e) => status(`Peek failed: ${e.message}`, true));
  }
}

// ---- refresh, log in and out ------------------------------------------------------------------

async function refresh() {
  const withHistory = Date.now() - state.historyAt >= HISTORY_MS;
  try {
    const [leader, memory, tenants, queues] = await Promise.all([
      api('GET', '/admin/leader'),
      api('GET', '/admin/memory'),
      api('GET', '/admin/tenants'),
      api('GET', `/admin/queues${withHistory ? '?history=true' : ''}`),
    ]);
    if (withHistory) state.historyAt = Date.now();
    else for (const q of queues.queues) q.history = state.queues.get(keyOf(q))?.history ?? null;
    renderLeader(leader);
    renderMemory(memory);
    renderTenants(tenants.tenants);
    renderQueues(queues.queues);
    if (state.selected !== null) await peek();
  } catch (e) {
    if (e.status !== 401) status(`Refresh failed: ${e.message}`, true);
  }
}

function start() {
  $('#login-panel').hidden = true;
  $('#app').hidden = false;
  $('#logout').hidden = false;
  void refresh().then(select);
  state.timer ??= setInterval(refresh, REFRESH_MS);
}

function logout(message = '') {
  sessionStorage.removeItem(TOKEN_KEY);
  clearInterval(state.timer);
  state.timer = null;
  $('#app').hidden = true;
  $('#logout').hidden = true;
  $('#login-panel').hidden = false;
  $('#leader').textContent = 'not logged in';
  $('#leader').className = 'badge';
  $('#memory').textContent = '';
  $('#login-error').textContent = message;
}

$('#login-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $('#token').value);
  $('#token').value = '';
  try {
    await api('GET', '/admin/tenants');
    $('#login-error').textContent = '';
    start();
  } catch (e) {
    if (e.status !== 401) logout(`Login failed: ${e.message}`);
  }
});
$('#logout').addEventListener('click', () => logout());
$('#filter').addEventListener('input', () => renderQueues([...state.queues.values()]));
$('#detail-close').addEventListener('click', () => {
  history.replaceState(null, '', location.pathname);
  select();
});
$('#send-form').addEventListener('submit', send);
$('#send-add-attribute').addEventListener('click', addAttributeRow);
$('#create-open').addEventListener('click', openCreate);
$('#create-form').addEventListener('submit', create);
$('#create-cancel').addEventListener('click', () => $('#create-dialog').close());
window.addEventListener('hashchange', select);

if (token() !== '') start();
window.sharedSqsAdmin = { refresh, peek };
