/**
 * The admin API on the control plane (docs/admin.md; OpenAPI at /admin/openapi.json): tenants
 * and their keys, queues across tenants, peek, purge, redrive, delete, and (admin-ha.ts) the
 * leader. The page's files are in admin-page/, served as they are.
 *
 * Each route's JSON schemas (admin-schemas.ts) check its input before the handler runs and are the
 * OpenAPI document; handlers check only what a schema cannot say (a tenant that exists, a region
 * name, the values SendMessage and CreateQueue check).
 *
 * Every /admin route but the page and the OpenAPI description needs `Authorization: Bearer
 * <SHARED_SQS_ADMIN_TOKEN>`, checked before a body is read (admin-auth.ts).
 *
 * Changes go through the same store and write-through path as the SQS API's: a reply comes only
 * after `commit()` resolved (the change is in Redis). An instance that is not serving (a follower,
 * or a store being reloaded) answers 503 for tenants and queues: its store is not the live one.
 */
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { newAccessKeyId, newAccountId, newSecretAccessKey } from '../auth/keys.js';
import { isRegionName } from '../auth/sigv4.js';
import { LOW_WATER } from '../core/budget.js';
import { memoryOnly, type Durability } from '../core/durability.js';
import { CoreError } from '../core/errors.js';
import type { Message, MessageAttributes, MessageAttributeValue } from '../core/message.js';
import { DEFAULT_REGION, type Queue } from '../core/queue.js';
import type { QueueStore } from '../core/store.js';
import { TenantError, type Tenant } from '../core/tenants.js';
import { checkBudget, prepareSend, type SendEntry } from '../sqs/actions/send.js';
import { checkTags } from '../sqs/actions/tags.js';
import { SqsError } from '../sqs/errors.js';
import { queueUrlOf, type RequestContext, type SqsServices } from '../sqs/service.js';
import type { ActivePassive } from '../ha/active.js';
import { adminAuth } from './admin-auth.js';
import { fromOthers, toQueueOwner, type AdminRoute } from './admin-route.js';
import { registerAdminHa } from './admin-ha.js';
import { registerAdminShards, type ShardsAdmin } from './admin-shards.js';
import { History, SAMPLE_MS, type MessageTotals } from './admin-history.js';
import { openApiDocument } from './admin-openapi.js';
import * as schemas from './admin-schemas.js';
import { adminSchemaScope } from './schema-compilers.js';

export interface AdminOptions {
  /** Undefined: the admin API is closed (403 from adminAuth). */
  readonly adminToken: string | undefined;
  /** For the leader routes (admin-ha.ts); undefined: no leader election. */
  readonly ha?: ActivePassive | undefined;
  /** For the shard routes (admin-shards.ts); undefined: not --active-active. */
  readonly shards?: ShardsAdmin | undefined;
  /** The live store and its runners (getters: they change on reload). */
  readonly services: SqsServices;
  /** The data plane's per-queue message counters, which the page's charts sample (admin-history.ts). */
  readonly messageTotals: MessageTotals;
  /**
   * Not serving: no state is changed or shown (not the leader, reloading); a change is answered
   * once it is durable (src/core/durability.ts). Absent: memory only.
   */
  readonly durability?: Durability | undefined;
  /** scheme://host[:port] of the data plane for queue URLs; undefined: URLs are left out. */
  readonly baseUrl?: string | undefined;
  readonly defaultAccountId: string;
  /** The server's region (--region), whose queue URLs carry no region. */
  readonly defaultRegion?: string | undefined;
  /** --active-active: where a queue's calls run, and who else holds queues (admin-route.ts). */
  readonly route?: AdminRoute | undefined;
}

/**
 * The page's files (index.html, style.css, app.js): read from beside this module, in src/ under
 * tsx and in dist/ where the build copies them (scripts/copy-lua.mjs).
 */
const PAGE_DIR = new URL('./admin-page/', import.meta.url);

/** The listing's history merges this many samples into one point (20 s). */
const LISTED_SAMPLES_MERGED = 4;

/** Peek cuts bodies to this many characters (and returns at most admin-schemas.ts' PEEK_MAX messages). */
export const PEEK_BODY_CHARS = 64 * 1024;

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
  ) {
    super(message);
  }
}

type QueueParams = { accountId: string; region: string; name: string };

export interface AdminHandle {
  /** Takes one sample of the charts now, as the 5-second timer does (for tests). */
  sample(): void;
}

/**
 * Adds every /admin route (the leader's too, admin-ha.ts) in a scope of their own (fastify plugin),
 * whose error handler turns their errors into `{error, message}` JSON and passes everything else
 * to the control plane's, and samples the charts every 5 s until the control plane closes.
 */
export function registerAdmin(root: FastifyInstance, opts: AdminOptions): AdminHandle {
  const history = new History(opts.messageTotals);
  const sample = (): void => {
    if ((opts.durability ?? memoryOnly).serving)
      history.sample(opts.services.store, opts.services.clock.now());
  };
  const timer = setInterval(sample, SAMPLE_MS);
  timer.unref();
  root.addHook('onClose', (_app, done) => {
    clearInterval(timer);
    done();
  });
  void root.register((app, _pluginOpts, done) => {
    // Every route of this scope, the leader's included, as the OpenAPI document describes them.
    const registered: RouteOptions[] = [];
    app.addHook('onRoute', (route) => {
      registered.push(route);
    });
    adminSchemaScope(app, (err) =>
      err instanceof HttpError
        ? { status: err.status, body: { error: err.error, message: err.message } }
        : undefined,
    );
    registerAdminHa(app, { adminToken: opts.adminToken, ha: opts.ha });
    registerAdminShards(app, { adminToken: opts.adminToken, shards: opts.shards });
    routes(app, opts, history, registered);
    done();
  });
  return { sample };
}

function routes(
  app: FastifyInstance,
  opts: AdminOptions,
  history: History,
  registered: readonly RouteOptions[],
): void {
  const onRequest = adminAuth(opts.adminToken);
  const durability = opts.durability ?? memoryOnly;
  const store = (): QueueStore => {
    if (!durability.serving) {
      throw new HttpError(
        503,
        'NotServing',
        'this instance is not serving (not the leader, or reloading); ask the active one',
      );
    }
    return opts.services.store;
  };
  const durable = (): Promise<void> => durability.commit();
  const now = (): number => opts.services.clock.now();
  const atOwner = toQueueOwner(opts.route, (req) => req.params as QueueParams);
  const createdAtOwner = toQueueOwner(opts.route, (req) => {
    const body = req.body as schemas.CreateQueueBody;
    const tenant = body.tenant ?? undefined;
    // A tenant named here and unknown: the handler answers it, here.
    const accountId =
      tenant === undefined
        ? (body.accountId ?? opts.defaultAccountId)
        : store().tenants.get(tenant)?.accountId;
    if (accountId === undefined) return undefined;
    return { accountId, region: body.region ?? opts.defaultRegion ?? DEFAULT_REGION, name: body.name };
  });

  // ---- public: the page and the description --------------------------------------------------
  const page = (file: string, type: string) => {
    const text = readFileSync(new URL(file, PAGE_DIR), 'utf8');
    return (_req: FastifyRequest, reply: FastifyReply) => reply.type(`${type}; charset=utf-8`).send(text);
  };
  const index = page('index.html', 'text/html');
  app.get('/admin', index);
  app.get('/admin/', index);
  app.get('/admin/app.js', page('app.js', 'text/javascript'));
  app.get('/admin/style.css', page('style.css', 'text/css'));
  let document: object | undefined;
  app.get('/admin/openapi.json', (_req, reply) => reply.send((document ??= openApiDocument(registered))));

  // ---- tenants ------------------------------------------------------------------------------
  app.get('/admin/tenants', { onRequest, schema: schemas.LIST_TENANTS }, (_req, reply) => {
    const s = store();
    return reply.send({ tenants: s.tenants.list().map((t) => tenantView(s, t)) });
  });

  app.post<{ Body: schemas.CreateTenantBody }>(
    '/admin/tenants',
    { onRequest, schema: schemas.CREATE_TENANT },
    async (req, reply) => {
      const s = store();
      const { name } = req.body;
      const accountId = req.body.accountId ?? newAccountId((id) => s.tenants.byAccountId(id) !== undefined);
      const key = { accessKeyId: newAccessKeyId(), secretAccessKey: newSecretAccessKey(), createdAt: now() };
      const tenant = tenantCall(() => s.tenants.create(name, accountId, [key], now()));
      await durable();
      return reply.code(201).send({ ...tenantView(s, tenant), newKey: secretView(key) });
    },
  );

  app.get<{ Params: { name: string } }>(
    '/admin/tenants/:name',
    { onRequest, schema: schemas.GET_TENANT },
    (req, reply) => {
      const s = store();
      return reply.send(tenantView(s, requireTenant(s, req.params.name)));
    },
  );

  app.post<{ Params: { name: string }; Body: schemas.RotateKeysBody }>(
    '/admin/tenants/:name/keys',
    { onRequest, schema: schemas.ROTATE_KEYS },
    async (req, reply) => {
      const s = store();
      const tenant = requireTenant(s, req.params.name);
      const replace = req.body.replace ?? false;
      const key = { accessKeyId: newAccessKeyId(), secretAccessKey: newSecretAccessKey(), createdAt: now() };
      tenantCall(() => s.tenants.addKey(tenant, key, replace));
      await durable();
      return reply.code(201).send({ ...tenantView(s, tenant), newKey: secretView(key) });
    },
  );

  app.put<{ Params: { name: string }; Body: schemas.MemoryShareBody }>(
    '/admin/tenants/:name/memory-share',
    { onRequest, schema: schemas.SET_MEMORY_SHARE },
    async (req, reply) => {
      const s = store();
      const tenant = requireTenant(s, req.params.name);
      tenantCall(() => s.tenants.setMemoryShare(tenant, req.body.memoryShare ?? undefined));
      await durable();
      return reply.send(tenantView(s, tenant));
    },
  );

  app.get('/admin/memory', { onRequest, schema: schemas.GET_MEMORY }, (_req, reply) => {
    const s = store();
    const b = s.budget;
    return reply.send({
      budgetBytes: b.limit,
      usedBytes: b.used,
      lowWaterBytes: Math.floor(b.limit * LOW_WATER),
      refusing: b.refusing(),
      tenants: [...b.usage()].map(([accountId, used, limit]) => ({
        tenant: s.tenants.byAccountId(accountId)?.name ?? null,
        accountId,
        usedBytes: used,
        limitBytes: limit,
        refusing: b.refusing(accountId),
      })),
    });
  });

  app.delete<{ Params: { name: string; accessKeyId: string } }>(
    '/admin/tenants/:name/keys/:accessKeyId',
    { onRequest, schema: schemas.DELETE_KEY },
    async (req, reply) => {
      const s = store();
      const tenant = requireTenant(s, req.params.name);
      tenantCall(() => s.tenants.removeKey(tenant, req.params.accessKeyId));
      await durable();
      return reply.send(tenantView(s, tenant));
    },
  );

  app.delete<{ Params: { name: string }; Querystring: schemas.DeleteTenantQuery }>(
    '/admin/tenants/:name',
    { onRequest, schema: schemas.DELETE_TENANT },
    async (req, reply) => {
      const s = store();
      const tenant = requireTenant(s, req.params.name);
      const queues = queuesOf(s, tenant.accountId);
      if (queues.length > 0 && req.query.deleteQueues !== 'true') {
        throw new HttpError(
          409,
          'TenantHasQueues',
          `tenant ${tenant.name} has ${queues.length} queue(s): delete them first, or pass ?deleteQueues=true`,
        );
      }
      for (const q of queues) s.delete(q);
      s.tenants.delete(tenant);
      await durable();
      return reply.send({ deleted: tenant.name, queuesDeleted: queues.length });
    },
  );

  // ---- queues -------------------------------------------------------------------------------
  app.get<{ Querystring: schemas.ListQueuesQuery }>(
    '/admin/queues',
    { onRequest, schema: schemas.LIST_QUEUES },
    async (req, reply) => {
      const s = store();
      const t = now();
      let accountId = req.query.accountId;
      if (req.query.tenant !== undefined) accountId = requireTenant(s, req.query.tenant).accountId;
      const prefix = req.query.prefix ?? '';
      const withHistory = req.query.history === 'true';
      // Dead-letter sources of every queue in one pass, not one scan of the store per queue.
      const sources = new Map<string, string[]>();
      for (const q of s.all()) {
        const target = q.redrive?.deadLetterTargetArn;
        if (target !== undefined) sources.set(target, [...(sources.get(target) ?? []), q.arn]);
      }
      const out = [];
      for (const q of s.all()) {
        if (accountId !== undefined && q.accountId !== accountId) continue;
        if (!q.name.startsWith(prefix)) continue;
        out.push({
          ...queueSummary(s, q, t, sources.get(q.arn) ?? []),
          // Every 4 samples as one: the page's small charts need no more, and the listing stays small.
          ...(withHistory ? { history: history.of(q, LISTED_SAMPLES_MERGED) ?? null } : {}),
        });
      }
      // Under --active-active the other members' queues too; a queue in the middle of a move may be
      // listed by its old and its new owner at once.
      const listed = new Set(out.map((q) => q.arn));
      for (const answer of await fromOthers(opts.route, req)) {
        if (answer.status !== 200) {
          throw new HttpError(
            503,
            'NotServing',
            `a member could not list its queues (${answer.status}); try again`,
          );
        }
        for (const q of (JSON.parse(answer.body) as { queues: typeof out }).queues) {
          if (!listed.has(q.arn)) out.push(q);
          listed.add(q.arn);
        }
      }
      out.sort(
        (a, b) => compare(a.tenant, b.tenant) || compare(a.region, b.region) || compare(a.name, b.name),
      );
      return reply.send({ queues: out });
    },
  );

  app.get<{ Params: QueueParams }>(
    '/admin/queues/:accountId/:region/:name',
    { onRequest, preHandler: atOwner, schema: schemas.GET_QUEUE },
    (req, reply) => {
      const s = store();
      const q = requireQueue(s, req.params);
      const t = now();
      return reply.send({
        ...queueSummary(
          s,
          q,
          t,
          s.deadLetterSources(q).map((src) => src.arn),
        ),
        attributes: q.attributes,
        tags: q.tags,
        redrivePolicy: q.redrive,
        history: history.of(q) ?? null,
      });
    },
  );

  app.post<{ Body: schemas.CreateQueueBody }>(
    '/admin/queues',
    { onRequest, preHandler: createdAtOwner, schema: schemas.CREATE_QUEUE },
    async (req, reply) => {
      const s = store();
      const body = req.body;
      const name = body.name;
      let accountId = body.accountId ?? undefined;
      if (body.tenant !== undefined && body.tenant !== null) {
        if (accountId !== undefined)
          throw new HttpError(400, 'BadRequest', 'give tenant or accountId, not both');
        accountId = requireTenant(s, body.tenant).accountId;
      }
      accountId ??= opts.defaultAccountId;
      const region = body.region ?? opts.defaultRegion ?? DEFAULT_REGION;
      if (!isRegionName(region)) throw new HttpError(400, 'BadRequest', `${region} is not a region name`);
      const attributes = textMap(body.attributes);
      const tags = textMap(body.tags);
      const { queue, created } = sqsCall(() => {
        checkTags(tags);
        return s.create({ accountId, region, name }, attributes, tags);
      });
      await durable();
      return reply.code(created ? 201 : 200).send(queueSummary(s, queue, now(), []));
    },
  );

  app.get<{ Params: QueueParams; Querystring: schemas.PeekQuery }>(
    '/admin/queues/:accountId/:region/:name/messages',
    { onRequest, preHandler: atOwner, schema: schemas.PEEK },
    (req, reply) => {
      const s = store();
      const q = requireQueue(s, req.params);
      const t = now();
      return reply.send({ messages: q.peek(req.query.max).map((m) => messageView(m, t)), total: q.size });
    },
  );

  app.post<{ Params: QueueParams; Body: schemas.SendBody }>(
    '/admin/queues/:accountId/:region/:name/messages',
    { onRequest, preHandler: atOwner, schema: schemas.SEND },
    async (req, reply) => {
      const s = store();
      const q = requireQueue(s, req.params);
      const entry = sendEntry(req.body);
      // The checks, the memory budget and the store of SendMessage, as for a caller of the
      // queue's own account.
      const ctx: RequestContext = {
        requestId: randomUUID(),
        accountId: q.accountId,
        region: q.region,
        defaultRegion: opts.defaultRegion ?? DEFAULT_REGION,
        baseUrl: opts.baseUrl ?? '',
        senderId: q.accountId,
        onAbort: () => undefined,
      };
      const sent = sqsCall(() => {
        const { message, size } = prepareSend(q, ctx, entry);
        checkBudget(opts.services, q, [size]);
        return { r: q.sendMessage(message, now()), md5OfBody: message.md5OfBody };
      });
      await durable();
      // A FIFO send whose deduplication id was seen in the last 5 minutes stores nothing (200).
      return reply.code(sent.r.message === undefined ? 200 : 201).send({
        messageId: sent.r.messageId,
        md5OfBody: sent.md5OfBody,
        sequenceNumber: sent.r.sequenceNumber ?? null,
        duplicate: sent.r.message === undefined,
      });
    },
  );

  app.delete<{ Params: QueueParams & { messageId: string } }>(
    '/admin/queues/:accountId/:region/:name/messages/:messageId',
    { onRequest, preHandler: atOwner, schema: schemas.DELETE_MESSAGE },
    async (req, reply) => {
      const s = store();
      const q = requireQueue(s, req.params);
      // No receipt handle here: the message is found by id, walking the queue in send order (an
      // operator's action, not the data plane's).
      const t = now();
      let found = q.peek(1)[0] ?? null;
      while (found !== null && found.id !== req.params.messageId) found = found.next;
      if (found === null) {
        throw new HttpError(404, 'NotFound', `no message ${req.params.messageId} in ${q.name}`);
      }
      q.takeOut(found, t);
      await durable();
      return reply.send({ deleted: found.id });
    },
  );

  app.post<{ Params: QueueParams }>(
    '/admin/queues/:accountId/:region/:name/purge',
    { onRequest, preHandler: atOwner, schema: schemas.PURGE },
    async (req, reply) => {
      const s = store();
      const q = requireQueue(s, req.params);
      const before = q.size;
      coreCall(() => q.purge(now(), s.purgeCooldownMs));
      await durable();
      return reply.send({ purged: before });
    },
  );

  app.post<{ Params: QueueParams; Body: schemas.RedriveBody }>(
    '/admin/queues/:accountId/:region/:name/redrive',
    { onRequest, preHandler: atOwner, schema: schemas.REDRIVE },
    async (req, reply) => {
      const s = store();
      const q = requireQueue(s, req.params);
      const destinationArn = req.body.destinationArn ?? undefined;
      const rate = req.body.maxNumberOfMessagesPerSecond;
      // The same move task as StartMessageMoveTask: back to each message's source queue, or to the
      // destination given.
      const task = coreCall(() => s.startMoveTask(q.accountId, q.arn, destinationArn, rate, q.region));
      opts.services.mover.start(task);
      await durable();
      return reply.code(202).send({
        taskHandle: task.handle,
        status: task.status,
        toMove: task.toMove,
        sourceArn: task.sourceArn,
        destinationArn: task.destinationArn ?? null,
      });
    },
  );

  app.delete<{ Params: QueueParams }>(
    '/admin/queues/:accountId/:region/:name',
    { onRequest, preHandler: atOwner, schema: schemas.DELETE_QUEUE },
    async (req, reply) => {
      const s = store();
      const q = requireQueue(s, req.params);
      s.delete(q);
      await durable();
      return reply.send({ deleted: q.arn });
    },
  );

  function queueSummary(s: QueueStore, q: Queue, t: number, deadLetterSources: string[]) {
    const counts = q.counts(t);
    const oldest = q.peek(1)[0];
    return {
      tenant:
        s.tenants.byAccountId(q.accountId)?.name ??
        (q.accountId === opts.defaultAccountId ? '(default)' : q.accountId),
      accountId: q.accountId,
      region: q.region,
      name: q.name,
      arn: q.arn,
      url:
        opts.baseUrl === undefined ? null : queueUrlOf(opts.baseUrl, q, opts.defaultRegion ?? DEFAULT_REGION),
      fifo: q.fifo,
      visible: counts.visible,
      inflight: counts.inflight,
      delayed: counts.delayed,
      memoryBytes: q.bytes,
      createdAt: new Date(q.createdAt).toISOString(),
      deadLetterTarget: q.redrive?.deadLetterTargetArn ?? null,
      deadLetterSources,
      oldestMessageAgeSeconds:
        oldest === undefined ? null : Math.max(0, Math.floor((t - oldest.sentAt) / 1000)),
    };
  }
}

function tenantView(s: QueueStore, t: Tenant) {
  return {
    name: t.name,
    accountId: t.accountId,
    createdAt: new Date(t.createdAt).toISOString(),
    keys: t.keys.map((k) => ({ accessKeyId: k.accessKeyId, createdAt: new Date(k.createdAt).toISOString() })),
    queues: queuesOf(s, t.accountId).length,
    memoryShare: t.memoryShare ?? null,
    memoryUsedBytes: s.budget.usedBy(t.accountId),
    memoryLimitBytes: s.budget.limitOf(t.accountId),
  };
}

function secretView(k: { accessKeyId: string; secretAccessKey: string; createdAt: number }) {
  return {
    accessKeyId: k.accessKeyId,
    secretAccessKey: k.secretAccessKey,
    createdAt: new Date(k.createdAt).toISOString(),
  };
}

function messageView(m: Message, now: number) {
  // A deadline that passed is shown as what the next operation will make of it.
  const state = (m.state === 'delayed' || m.state === 'inflight') && m.heapKey <= now ? 'visible' : m.state;
  return {
    messageId: m.id,
    state,
    visibleAt: state === 'visible' ? null : new Date(m.heapKey).toISOString(),
    sentAt: new Date(m.sentAt).toISOString(),
    receiveCount: m.receiveCount,
    body: m.body.length > PEEK_BODY_CHARS ? m.body.slice(0, PEEK_BODY_CHARS) : m.body,
    bodyTruncated: m.body.length > PEEK_BODY_CHARS,
    md5OfBody: m.md5OfBody,
    attributes: m.attributes ?? {},
    groupId: m.groupId ?? null,
    deduplicationId: m.deduplicationId ?? null,
    sequenceNumber: m.sequenceNumber ?? null,
    deadLetterSourceArn: m.deadLetterSourceArn ?? null,
  };
}

function queuesOf(s: QueueStore, accountId: string): Queue[] {
  const out: Queue[] = [];
  for (const q of s.all()) if (q.accountId === accountId) out.push(q);
  return out;
}

function requireTenant(s: QueueStore, name: string): Tenant {
  const t = s.tenants.get(name);
  if (t === undefined) throw new HttpError(404, 'NotFound', `no tenant named ${name}`);
  return t;
}

function requireQueue(s: QueueStore, p: QueueParams): Queue {
  const q = s.get(p.accountId, p.name, p.region);
  if (q === undefined)
    throw new HttpError(404, 'NotFound', `no queue ${p.name} in account ${p.accountId}, ${p.region}`);
  return q;
}

function tenantCall<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof TenantError) {
      const status = e.code === 'exists' ? 409 : e.code === 'not-found' ? 404 : 400;
      throw new HttpError(
        status,
        e.code === 'exists' ? 'Conflict' : e.code === 'not-found' ? 'NotFound' : 'BadRequest',
        e.message,
      );
    }
    throw e;
  }
}

function coreCall<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof CoreError) throw new HttpError(statusOf(e.code), e.code, e.message);
    throw e;
  }
}

/** coreCall for what goes through the SQS actions' checks too; their errors keep their SQS names. */
function sqsCall<T>(fn: () => T): T {
  try {
    return coreCall(fn);
  } catch (e) {
    if (e instanceof SqsError) throw new HttpError(statusOf(e.errorName), e.errorName, e.message);
    throw e;
  }
}

function statusOf(code: string): number {
  switch (code) {
    case 'PurgeQueueInProgress':
    case 'QueueNameExists':
    case 'QueueDeletedRecently':
      return 409;
    case 'ResourceNotFoundException':
    case 'QueueDoesNotExist':
      return 404;
    // Over the memory budget (SQS answers it 403, which this API keeps for a closed API).
    case 'RequestThrottled':
      return 429;
    default:
      return 400;
  }
}

/**
 * The send's JSON (`body`, `attributes` as peek shows them, `groupId`, `deduplicationId`,
 * `delaySeconds`; its shape checked by schemas.SEND) as a SendMessage entry, whose values
 * prepareSend checks as for SendMessage.
 */
function sendEntry(o: schemas.SendBody): SendEntry {
  const entry: SendEntry = { MessageBody: o.body };
  if (o.groupId !== undefined && o.groupId !== null) entry.MessageGroupId = o.groupId;
  if (o.deduplicationId !== undefined && o.deduplicationId !== null)
    entry.MessageDeduplicationId = o.deduplicationId;
  if (o.delaySeconds !== undefined && o.delaySeconds !== null) entry.DelaySeconds = o.delaySeconds;
  if (o.attributes !== undefined && o.attributes !== null) {
    const out: MessageAttributes = {};
    for (const [name, a] of Object.entries(o.attributes)) {
      const value: MessageAttributeValue = { DataType: a.DataType };
      if (a.StringValue !== undefined && a.StringValue !== null) value.StringValue = a.StringValue;
      if (a.BinaryValue !== undefined && a.BinaryValue !== null) value.BinaryValue = a.BinaryValue;
      // Defined, not assigned: `__proto__` is a valid attribute name.
      Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
    }
    entry.MessageAttributes = out;
  }
  return entry;
}

/** Attributes or tags as CreateQueue takes them: numbers and booleans as their text, as --config does. */
function textMap(
  map: Readonly<Record<string, string | number | boolean>> | null | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(map ?? {})) {
    Object.defineProperty(out, k, { value: String(x), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
