/**
 * The admin API's JSON schemas, its one source: each /admin route (admin.ts, admin-ha.ts) gives
 * its body, params, querystring and responses here as fastify's route `schema`; fastify checks
 * requests with them (schema-compilers.ts) and GET /admin/openapi.json is written from the routes
 * (admin-openapi.ts). test/unit/admin-api.test.ts compares the document with the registered
 * routes, schema by schema, and checks the routes' answers against their documented responses.
 *
 * A field that is not required may also be null, taken as absent (as it always was here).
 */
import type { FastifySchema } from 'fastify';

/** The route schema keys this API uses, beside fastify's own. */
export interface AdminRouteSchema extends FastifySchema {
  readonly operationId: string;
  readonly summary: string;
}

// ---- shared schemas, the document's components ---------------------------------------------

/** An object of these properties, each required: every field of an answer is always there. */
function all(properties: Record<string, object>, extra: Record<string, unknown> = {}): object {
  return { type: 'object', ...extra, required: Object.keys(properties), properties };
}

const iso = { type: 'string', format: 'date-time' } as const;
const strings = { type: 'array', items: { type: 'string' } } as const;
const integers = { type: 'array', items: { type: 'integer' } } as const;

export const ERROR = all({ error: { type: 'string' }, message: { type: 'string' } });

const KEY = all({ accessKeyId: { type: 'string' }, createdAt: iso });

const NEW_KEY = all(
  { accessKeyId: { type: 'string' }, secretAccessKey: { type: 'string' }, createdAt: iso },
  { description: 'Shown once: the secret is not retrievable later.' },
);

export const TENANT = all({
  name: { type: 'string' },
  accountId: { type: 'string' },
  createdAt: iso,
  keys: { type: 'array', items: KEY },
  queues: { type: 'integer', description: 'How many queues the account has' },
  memoryShare: {
    type: ['number', 'null'],
    description: 'Its share of the memory budget (--max-memory), in (0, 1]; null: none of its own',
  },
  memoryUsedBytes: { type: 'integer', description: 'What its queues count against the budget' },
  memoryLimitBytes: {
    type: ['integer', 'null'],
    description: 'Its share of the budget in bytes, or the budget; null: no budget',
  },
});

export const TENANT_WITH_NEW_KEY = {
  allOf: [TENANT, { type: 'object', required: ['newKey'], properties: { newKey: NEW_KEY } }],
} as const;

export const QUEUE_SUMMARY = all({
  tenant: { type: 'string', description: "Tenant name; '(default)' or the account id without one" },
  accountId: { type: 'string' },
  region: { type: 'string' },
  name: { type: 'string' },
  arn: { type: 'string' },
  url: { type: ['string', 'null'] },
  fifo: { type: 'boolean' },
  visible: { type: 'integer' },
  inflight: { type: 'integer' },
  delayed: { type: 'integer' },
  memoryBytes: { type: 'integer', description: 'What its messages count against the memory budget' },
  createdAt: iso,
  deadLetterTarget: { type: ['string', 'null'], description: 'ARN of its dead-letter queue' },
  deadLetterSources: {
    ...strings,
    description: 'ARNs of the queues whose dead-letter queue it is (only those can be redriven)',
  },
  oldestMessageAgeSeconds: {
    type: ['integer', 'null'],
    description: 'Since the oldest message in the queue (any state) was sent; null when empty',
  },
});

export const HISTORY = all(
  {
    intervalSeconds: { type: 'integer' },
    end: { type: 'integer', description: 'When the newest sample was taken, ms since the epoch' },
    sent: integers,
    received: integers,
    deleted: integers,
    visible: integers,
    inflight: integers,
    delayed: integers,
  },
  {
    type: ['object', 'null'],
    description:
      'The last 10 minutes in samples every intervalSeconds (5; 20 in the listing, where 4 samples are merged), oldest first ' +
      '(null: not sampled yet, or beyond the 1,000 queues charted). ' +
      'sent / received / deleted: messages in the interval before each sample, through the SQS API; ' +
      'visible / inflight / delayed: the depth at the sample.',
  },
);

export const SENT = all({
  messageId: { type: 'string' },
  md5OfBody: { type: 'string' },
  sequenceNumber: { type: ['string', 'null'] },
  duplicate: { type: 'boolean' },
});

export const MESSAGE = all({
  messageId: { type: 'string' },
  state: { enum: ['visible', 'inflight', 'delayed'] },
  visibleAt: { type: ['string', 'null'], format: 'date-time' },
  sentAt: iso,
  receiveCount: { type: 'integer' },
  body: { type: 'string' },
  bodyTruncated: { type: 'boolean' },
  md5OfBody: { type: 'string' },
  attributes: { type: 'object' },
  groupId: { type: ['string', 'null'] },
  deduplicationId: { type: ['string', 'null'] },
  sequenceNumber: { type: ['string', 'null'] },
  deadLetterSourceArn: { type: ['string', 'null'] },
});

/** Named in the document's components and referred to from the operations. */
export const COMPONENTS: Record<string, object> = {
  Error: ERROR,
  Key: KEY,
  NewKey: NEW_KEY,
  Tenant: TENANT,
  QueueSummary: QUEUE_SUMMARY,
  History: HISTORY,
  Sent: SENT,
  Message: MESSAGE,
};

// ---- pieces of route schemas -----------------------------------------------------------------

/** A response: its description and its JSON schema (fastify's and OpenAPI's `content` shape). */
export function answer(description: string, schema: object): object {
  return { description, content: { 'application/json': { schema } } };
}

/** The answers every protected route may give. */
export const FAILURES = {
  '401': answer('Missing, wrong, empty or malformed admin token', ERROR),
  '403': answer('The admin API is closed (no SHARED_SQS_ADMIN_TOKEN set)', ERROR),
  '503': answer('This instance is not serving (not the leader, or reloading)', ERROR),
};
const NOT_FOUND = { '404': answer('No such tenant, queue or key', ERROR) };
/** For the routes with input but no 400 of their own. */
const BAD_INPUT = { '400': answer('A path, query or body its schema refuses', ERROR) };

const string = { type: 'string' } as const;
/** An optional string: null is taken as absent. */
const optionalString = { type: ['string', 'null'] } as const;
const ACCOUNT_ID = '^\\d{12}$';
/** As src/core/tenants.ts checks a tenant's name. */
const TENANT_NAME = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$';
/** Standard base64, padded. */
export const BASE64 = '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$';

function object(properties: Record<string, object>, required: string[] = []): object {
  return { type: 'object', ...(required.length > 0 ? { required } : {}), properties };
}

const TENANT_PARAMS = object({ name: string }, ['name']);
const QUEUE_PARAMS = object(
  { accountId: { type: 'string', pattern: ACCOUNT_ID }, region: string, name: string },
  ['accountId', 'region', 'name'],
);
const deleted = (description: string, schema: object) =>
  answer(description, object({ deleted: { type: 'string' }, ...schema }));

// ---- tenants -----------------------------------------------------------------------------------

export const LIST_TENANTS: AdminRouteSchema = {
  operationId: 'listTenants',
  summary: 'List tenants (no secrets)',
  response: {
    '200': answer('Tenants', all({ tenants: { type: 'array', items: TENANT } })),
    ...FAILURES,
  },
};

export interface CreateTenantBody {
  readonly name: string;
  readonly accountId?: string | null;
}
export const CREATE_TENANT: AdminRouteSchema = {
  operationId: 'createTenant',
  summary: 'Create a tenant with a generated key pair',
  body: object(
    {
      name: { type: 'string', pattern: TENANT_NAME },
      accountId: { type: ['string', 'null'], pattern: ACCOUNT_ID, description: 'Generated when absent' },
    },
    ['name'],
  ),
  response: {
    '201': answer('Created; `newKey` holds the only copy of the secret', TENANT_WITH_NEW_KEY),
    '400': answer('Bad name or account id', ERROR),
    '409': answer('The name or the account id is taken', ERROR),
    ...FAILURES,
  },
};

export const GET_TENANT: AdminRouteSchema = {
  operationId: 'getTenant',
  summary: 'One tenant',
  params: TENANT_PARAMS,
  response: { '200': answer('The tenant', TENANT), ...NOT_FOUND, ...FAILURES },
};

export interface DeleteTenantQuery {
  readonly deleteQueues?: 'true' | 'false';
}
export const DELETE_TENANT: AdminRouteSchema = {
  operationId: 'deleteTenant',
  summary: 'Delete a tenant and its keys (and, with deleteQueues=true, its queues)',
  params: TENANT_PARAMS,
  querystring: object({ deleteQueues: { type: 'string', enum: ['true', 'false'] } }),
  response: {
    '200': deleted('Deleted', { queuesDeleted: { type: 'integer' } }),
    '409': answer('The tenant has queues and deleteQueues is not true', ERROR),
    ...BAD_INPUT,
    ...NOT_FOUND,
    ...FAILURES,
  },
};

export interface RotateKeysBody {
  readonly replace?: boolean | null;
}
export const ROTATE_KEYS: AdminRouteSchema = {
  operationId: 'rotateTenantKeys',
  summary: 'Add a generated key pair; with replace=true the other keys stop working at once',
  params: TENANT_PARAMS,
  body: object({ replace: { type: ['boolean', 'null'], default: false } }),
  response: {
    '201': answer('The tenant and the new key (secret shown once)', TENANT_WITH_NEW_KEY),
    ...BAD_INPUT,
    ...NOT_FOUND,
    ...FAILURES,
  },
};

export const DELETE_KEY: AdminRouteSchema = {
  operationId: 'deleteTenantKey',
  summary: 'Remove one key (a tenant keeps at least one)',
  params: object({ name: string, accessKeyId: string }, ['name', 'accessKeyId']),
  response: {
    '200': answer('The tenant', TENANT),
    '400': answer('It is the last key', ERROR),
    ...NOT_FOUND,
    ...FAILURES,
  },
};

export interface MemoryShareBody {
  readonly memoryShare: number | null;
}
export const SET_MEMORY_SHARE: AdminRouteSchema = {
  operationId: 'setTenantMemoryShare',
  summary:
    "Set the tenant's share of the memory budget (a fraction in (0, 1]), or clear it with null; " +
    'a --config file that gives one sets it again at the next load',
  params: TENANT_PARAMS,
  body: object({ memoryShare: { type: ['number', 'null'], exclusiveMinimum: 0, maximum: 1 } }, [
    'memoryShare',
  ]),
  response: {
    '200': answer('The tenant', TENANT),
    '400': answer('A share out of (0, 1]', ERROR),
    ...NOT_FOUND,
    ...FAILURES,
  },
};

export const GET_MEMORY: AdminRouteSchema = {
  operationId: 'getMemory',
  summary: 'The memory budget, its usage, and each tenant (account) with its usage and limit',
  response: {
    '200': answer(
      'The budget',
      all({
        budgetBytes: { type: ['integer', 'null'], description: 'null: no budget' },
        usedBytes: { type: 'integer' },
        lowWaterBytes: {
          type: ['integer', 'null'],
          description: 'Refused sends are taken again below this; null: no budget',
        },
        refusing: { type: 'boolean' },
        tenants: {
          type: 'array',
          items: all({
            tenant: { type: ['string', 'null'] },
            accountId: { type: 'string' },
            usedBytes: { type: 'integer' },
            limitBytes: { type: ['integer', 'null'] },
            refusing: { type: 'boolean' },
          }),
        },
      }),
    ),
    ...FAILURES,
  },
};

// ---- queues ------------------------------------------------------------------------------------

export interface ListQueuesQuery {
  readonly tenant?: string;
  readonly accountId?: string;
  readonly prefix?: string;
  readonly history?: 'true' | 'false';
}
export const LIST_QUEUES: AdminRouteSchema = {
  operationId: 'listQueues',
  summary: 'Queues of every tenant with their depths',
  querystring: object({
    tenant: string,
    accountId: string,
    prefix: string,
    history: {
      type: 'string',
      enum: ['true', 'false'],
      description: 'true: each queue with its history (the charts of the admin page)',
    },
  }),
  response: {
    '200': answer(
      'Queues',
      all({
        queues: {
          type: 'array',
          items: { allOf: [QUEUE_SUMMARY, object({ history: HISTORY })] },
        },
      }),
    ),
    ...BAD_INPUT,
    ...NOT_FOUND,
    ...FAILURES,
  },
};

/** CreateQueue's attribute and tag values: numbers and booleans are taken as their text. */
const textMap = (description?: string) => ({
  type: ['object', 'null'],
  additionalProperties: { type: ['string', 'number', 'boolean'] },
  ...(description === undefined ? {} : { description }),
});

export interface CreateQueueBody {
  readonly name: string;
  readonly tenant?: string | null;
  readonly accountId?: string | null;
  readonly region?: string | null;
  readonly attributes?: Record<string, string | number | boolean> | null;
  readonly tags?: Record<string, string | number | boolean> | null;
}
export const CREATE_QUEUE: AdminRouteSchema = {
  operationId: 'createQueue',
  summary: 'Create a queue (as CreateQueue: the same one again is 200, other attributes 409)',
  body: object(
    {
      name: { type: 'string', description: 'A FIFO queue ends in .fifo and has FifoQueue: true' },
      tenant: { ...optionalString, description: "A tenant's name, for its account" },
      accountId: { ...optionalString, pattern: ACCOUNT_ID, description: 'Default: --account-id' },
      region: { ...optionalString, description: 'Default: --region' },
      attributes: textMap("CreateQueue's attributes (VisibilityTimeout, FifoQueue, RedrivePolicy, ...)"),
      tags: textMap(),
    },
    ['name'],
  ),
  response: {
    '201': answer('Created', QUEUE_SUMMARY),
    '200': answer('It existed with these attributes', QUEUE_SUMMARY),
    '400': answer('A bad name, attribute, tag, account or region', ERROR),
    '409': answer('It exists with other attributes, or was deleted less than 60 s ago', ERROR),
    ...NOT_FOUND,
    ...FAILURES,
  },
};

export const GET_QUEUE: AdminRouteSchema = {
  operationId: 'getQueue',
  summary: 'A queue with its attributes, tags, depths and dead-letter sources',
  params: QUEUE_PARAMS,
  response: {
    '200': answer('The queue', {
      allOf: [
        QUEUE_SUMMARY,
        object(
          {
            attributes: { type: 'object' },
            tags: { type: 'object' },
            redrivePolicy: { type: ['object', 'null'] },
            history: HISTORY,
          },
          ['attributes', 'tags', 'history'],
        ),
      ],
    }),
    ...BAD_INPUT,
    ...NOT_FOUND,
    ...FAILURES,
  },
};

export const DELETE_QUEUE: AdminRouteSchema = {
  operationId: 'deleteQueue',
  summary: 'Delete a queue and its messages',
  params: QUEUE_PARAMS,
  response: { '200': deleted('Deleted', {}), ...BAD_INPUT, ...NOT_FOUND, ...FAILURES },
};

/** Peek returns at most this many messages. */
const PEEK_MAX = 100;

export interface PeekQuery {
  readonly max: number;
}
export const PEEK: AdminRouteSchema = {
  operationId: 'peekMessages',
  summary: 'The oldest messages, in any state, without receiving them or changing their visibility',
  params: QUEUE_PARAMS,
  querystring: object({ max: { type: 'integer', minimum: 1, maximum: PEEK_MAX, default: 10 } }),
  response: {
    '200': answer(
      'Messages in send order',
      object({ messages: { type: 'array', items: MESSAGE }, total: { type: 'integer' } }, [
        'messages',
        'total',
      ]),
    ),
    '400': answer('Bad max', ERROR),
    ...NOT_FOUND,
    ...FAILURES,
  },
};

export interface SendBody {
  readonly body: string;
  readonly attributes?: Record<
    string,
    { DataType: string; StringValue?: string | null; BinaryValue?: string | null }
  > | null;
  readonly groupId?: string | null;
  readonly deduplicationId?: string | null;
  readonly delaySeconds?: number | null;
}
export const SEND: AdminRouteSchema = {
  operationId: 'sendMessage',
  summary: 'Send a message, with the checks and the memory budget of SendMessage',
  params: QUEUE_PARAMS,
  body: object(
    {
      body: string,
      attributes: {
        type: ['object', 'null'],
        description: 'Message attributes as peek shows them',
        additionalProperties: object(
          {
            DataType: { type: 'string', description: 'String, Number or Binary, with an optional .suffix' },
            StringValue: optionalString,
            BinaryValue: { ...optionalString, pattern: BASE64, contentEncoding: 'base64' },
          },
          ['DataType'],
        ),
      },
      groupId: { ...optionalString, description: 'MessageGroupId: required by FIFO queues' },
      deduplicationId: { ...optionalString, description: 'MessageDeduplicationId (FIFO)' },
      delaySeconds: { type: ['integer', 'null'], minimum: 0, maximum: 900, description: 'Standard queues' },
    },
    ['body'],
  ),
  response: {
    '201': answer('Stored', SENT),
    '200': answer('A FIFO duplicate (same deduplication id within 5 minutes): nothing stored', SENT),
    '400': answer("SendMessage's errors (names as in SQS), or a bad shape", ERROR),
    '429': answer('RequestThrottled: over the memory budget, or the tenant share of it', ERROR),
    ...NOT_FOUND,
    ...FAILURES,
  },
};

export const DELETE_MESSAGE: AdminRouteSchema = {
  operationId: 'deleteMessage',
  summary: 'Delete one message, in whatever state, by its id (no receipt handle needed)',
  params: object(
    { accountId: { type: 'string', pattern: ACCOUNT_ID }, region: string, name: string, messageId: string },
    ['accountId', 'region', 'name', 'messageId'],
  ),
  response: { '200': deleted('Deleted', {}), ...BAD_INPUT, ...NOT_FOUND, ...FAILURES },
};

export const PURGE: AdminRouteSchema = {
  operationId: 'purgeQueue',
  summary: 'Delete every message (as PurgeQueue: once per 60 s)',
  params: QUEUE_PARAMS,
  response: {
    '200': answer('Purged', all({ purged: { type: 'integer' } })),
    ...BAD_INPUT,
    '409': answer('Purged less than 60 s ago', ERROR),
    ...NOT_FOUND,
    ...FAILURES,
  },
};

export interface RedriveBody {
  readonly destinationArn?: string | null;
  readonly maxNumberOfMessagesPerSecond?: number;
}
export const REDRIVE: AdminRouteSchema = {
  operationId: 'redriveQueue',
  summary: "Move a dead-letter queue's messages back to their source queues (a message move task)",
  params: QUEUE_PARAMS,
  body: object({
    destinationArn: { ...optionalString, description: 'Instead of each message’s source queue' },
    maxNumberOfMessagesPerSecond: { type: 'integer', minimum: 1, maximum: 500 },
  }),
  response: {
    '202': answer(
      'Started',
      all({
        taskHandle: { type: 'string' },
        status: { type: 'string' },
        toMove: { type: 'integer' },
        sourceArn: { type: 'string' },
        destinationArn: { type: ['string', 'null'] },
      }),
    ),
    '400': answer('Not a dead-letter queue, a task already runs, or a bad destination', ERROR),
    ...NOT_FOUND,
    ...FAILURES,
  },
};

// ---- the leader (admin-ha.ts) ------------------------------------------------------------------

export const GET_LEADER: AdminRouteSchema = {
  operationId: 'getLeader',
  summary: "This instance's leader-election state and the lock as Redis has it",
  response: { '200': answer('Leader status', { type: 'object' }), ...FAILURES },
};

export const STEP_DOWN: AdminRouteSchema = {
  operationId: 'stepDown',
  summary: 'Planned switchover: this leader drains, releases the lock and sits out one TTL',
  response: {
    '200': answer('Stepped down', { type: 'object' }),
    '409': answer('Not the leader, or no leader election', ERROR),
    ...FAILURES,
  },
};

// ---- the shards of --active-active (admin-shards.ts) -----------------------------------------

const SHARD_ROW = all({
  shard: { type: 'integer' },
  owner: { type: ['string', 'null'], description: 'The member the shard map names' },
  pinnedTo: { type: ['string', 'null'], description: 'The member an admin move pinned it to' },
  here: {
    type: ['object', 'null'],
    description: "This instance's hold of the shard: taking, serving or giving, and its lease's epoch",
  },
  queues: { type: 'integer', description: 'Queues in the shard, as the catalog lists them' },
  bytes: { type: ['integer', 'null'], description: 'Their bytes in memory, where held here' },
});

export const GET_SHARDS: AdminRouteSchema = {
  operationId: 'getShards',
  summary: 'The members, the shard map, and each shard as this instance sees it (--active-active)',
  response: {
    '200': answer(
      'Without --active-active only `activeActive: false`',
      object(
        {
          activeActive: { type: 'boolean' },
          instanceId: string,
          coordinator: { type: 'boolean' },
          mapVersion: { type: 'integer' },
          members: {
            type: 'array',
            items: all({ id: string, address: string, startedAt: iso }),
          },
          shards: { type: 'array', items: SHARD_ROW },
        },
        ['activeActive'],
      ),
    ),
    ...FAILURES,
  },
};

export const MOVE_SHARD: AdminRouteSchema = {
  operationId: 'moveShard',
  summary: 'Moves a shard to a live member and pins it there (--active-active)',
  params: object({ shard: { type: 'integer', minimum: 0, maximum: 255 } }, ['shard']),
  body: object({ to: { type: 'string', minLength: 1 } }, ['to']),
  response: {
    '202': answer('The coordinator moves it', all({ shard: { type: 'integer' }, pinnedTo: string })),
    ...BAD_INPUT,
    '404': answer('No such live member', ERROR),
    '409': answer('Not --active-active', ERROR),
    ...FAILURES,
  },
};

export const DRAIN_SHARDS: AdminRouteSchema = {
  operationId: 'drainShards',
  summary: 'This instance leaves and gives every shard away, and goes on routing (--active-active)',
  response: {
    '200': answer('Drained', all({ drained: { type: 'boolean' }, shardsGiven: { type: 'integer' } })),
    '409': answer('Not --active-active', ERROR),
    ...FAILURES,
  },
};
