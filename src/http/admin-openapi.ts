/**
 * The admin API's OpenAPI 3.1 description, served at GET /admin/openapi.json (a stable path:
 * tools may fetch it). test/unit/admin-api.test.ts checks that every route the control plane
 * registers under /admin is described here, and nothing more.
 */

const error = { $ref: '#/components/schemas/Error' };
const json = (schema: object) => ({ 'application/json': { schema } });
const ok = (description: string, schema: object) => ({ description, content: json(schema) });
const failures = {
  '401': ok('Missing, wrong, empty or malformed admin token', error),
  '403': ok('The admin API is closed (no SHARED_SQS_ADMIN_TOKEN set)', error),
  '503': ok('This instance is not serving (not the leader, or reloading)', error),
};
const notFound = { '404': ok('No such tenant, queue or key', error) };
const queuePath = [
  { name: 'accountId', in: 'path', required: true, schema: { type: 'string', pattern: '^\\d{12}$' } },
  { name: 'region', in: 'path', required: true, schema: { type: 'string' } },
  { name: 'name', in: 'path', required: true, schema: { type: 'string' } },
];
const tenantName = [{ name: 'name', in: 'path', required: true, schema: { type: 'string' } }];

export const ADMIN_OPENAPI = {
  openapi: '3.1.0',
  info: {
    title: 'shared-sqs admin API',
    version: '1',
    description:
      'Operators: tenants and their keys, queues across tenants and their recent activity, create, send, ' +
      'peek, delete a message, purge, redrive, delete, and the ' +
      'leader. Every operation needs `Authorization: Bearer <SHARED_SQS_ADMIN_TOKEN>`. Changes are ' +
      'durable (in Redis, when configured) before the reply. See docs/admin.md.',
  },
  servers: [{ url: '/' }],
  security: [{ bearer: [] }],
  components: {
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    schemas: {
      Error: {
        type: 'object',
        required: ['error', 'message'],
        properties: { error: { type: 'string' }, message: { type: 'string' } },
      },
      Key: {
        type: 'object',
        properties: { accessKeyId: { type: 'string' }, createdAt: { type: 'string', format: 'date-time' } },
      },
      NewKey: {
        type: 'object',
        description: 'Shown once: the secret is not retrievable later.',
        properties: {
          accessKeyId: { type: 'string' },
          secretAccessKey: { type: 'string' },
          createdAt: { type: 'string', format: 'date-time' },
        },
      },
      Tenant: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          accountId: { type: 'string' },
          createdAt: { type: 'string', format: 'date-time' },
          keys: { type: 'array', items: { $ref: '#/components/schemas/Key' } },
          queues: { type: 'integer', description: 'How many queues the account has' },
          memoryShare: {
            type: ['number', 'null'],
            description: 'Its share of the memory budget (--max-memory), in (0, 1]; null: none of its own',
          },
          memoryUsedBytes: { type: 'integer', description: 'What its queues count against the budget' },
          memoryLimitBytes: {
            type: 'integer',
            description: 'Its share of the budget in bytes, or the budget',
          },
        },
      },
      QueueSummary: {
        type: 'object',
        properties: {
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
          createdAt: { type: 'string', format: 'date-time' },
          deadLetterTarget: { type: ['string', 'null'], description: 'ARN of its dead-letter queue' },
          deadLetterSources: {
            type: 'array',
            items: { type: 'string' },
            description: 'ARNs of the queues whose dead-letter queue it is (only those can be redriven)',
          },
          oldestMessageAgeSeconds: {
            type: ['integer', 'null'],
            description: 'Since the oldest message in the queue (any state) was sent; null when empty',
          },
        },
      },
      History: {
        type: ['object', 'null'],
        description:
          'The last 10 minutes in samples every intervalSeconds (5; 20 in the listing, where 4 samples are merged), oldest first ' +
          '(null: not sampled yet, or beyond the 1,000 queues charted). ' +
          'sent / received / deleted: messages in the interval before each sample, through the SQS API; ' +
          'visible / inflight / delayed: the depth at the sample.',
        properties: {
          intervalSeconds: { type: 'integer' },
          end: { type: 'integer', description: 'When the newest sample was taken, ms since the epoch' },
          sent: { type: 'array', items: { type: 'integer' } },
          received: { type: 'array', items: { type: 'integer' } },
          deleted: { type: 'array', items: { type: 'integer' } },
          visible: { type: 'array', items: { type: 'integer' } },
          inflight: { type: 'array', items: { type: 'integer' } },
          delayed: { type: 'array', items: { type: 'integer' } },
        },
      },
      Sent: {
        type: 'object',
        properties: {
          messageId: { type: 'string' },
          md5OfBody: { type: 'string' },
          sequenceNumber: { type: ['string', 'null'] },
          duplicate: { type: 'boolean' },
        },
      },
      Message: {
        type: 'object',
        properties: {
          messageId: { type: 'string' },
          state: { enum: ['visible', 'inflight', 'delayed'] },
          visibleAt: { type: ['string', 'null'], format: 'date-time' },
          sentAt: { type: 'string', format: 'date-time' },
          receiveCount: { type: 'integer' },
          body: { type: 'string' },
          bodyTruncated: { type: 'boolean' },
          md5OfBody: { type: 'string' },
          attributes: { type: 'object' },
          groupId: { type: ['string', 'null'] },
          deduplicationId: { type: ['string', 'null'] },
          sequenceNumber: { type: ['string', 'null'] },
          deadLetterSourceArn: { type: ['string', 'null'] },
        },
      },
    },
  },
  paths: {
    '/admin/tenants': {
      get: {
        operationId: 'listTenants',
        summary: 'List tenants (no secrets)',
        responses: {
          '200': ok('Tenants', {
            type: 'object',
            properties: { tenants: { type: 'array', items: { $ref: '#/components/schemas/Tenant' } } },
          }),
          ...failures,
        },
      },
      post: {
        operationId: 'createTenant',
        summary: 'Create a tenant with a generated key pair',
        requestBody: {
          required: true,
          content: json({
            type: 'object',
            required: ['name'],
            properties: {
              name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$' },
              accountId: { type: 'string', pattern: '^\\d{12}$', description: 'Generated when absent' },
            },
          }),
        },
        responses: {
          '201': ok('Created; `newKey` holds the only copy of the secret', {
            allOf: [
              { $ref: '#/components/schemas/Tenant' },
              { type: 'object', properties: { newKey: { $ref: '#/components/schemas/NewKey' } } },
            ],
          }),
          '400': ok('Bad name or account id', error),
          '409': ok('The name or the account id is taken', error),
          ...failures,
        },
      },
    },
    '/admin/tenants/{name}': {
      parameters: tenantName,
      get: {
        operationId: 'getTenant',
        summary: 'One tenant',
        responses: {
          '200': ok('The tenant', { $ref: '#/components/schemas/Tenant' }),
          ...notFound,
          ...failures,
        },
      },
      delete: {
        operationId: 'deleteTenant',
        summary: 'Delete a tenant and its keys (and, with deleteQueues=true, its queues)',
        parameters: [
          { name: 'deleteQueues', in: 'query', schema: { type: 'string', enum: ['true', 'false'] } },
        ],
        responses: {
          '200': ok('Deleted', {
            type: 'object',
            properties: { deleted: { type: 'string' }, queuesDeleted: { type: 'integer' } },
          }),
          '409': ok('The tenant has queues and deleteQueues is not true', error),
          ...notFound,
          ...failures,
        },
      },
    },
    '/admin/tenants/{name}/keys': {
      parameters: tenantName,
      post: {
        operationId: 'rotateTenantKeys',
        summary: 'Add a generated key pair; with replace=true the other keys stop working at once',
        requestBody: {
          required: false,
          content: json({ type: 'object', properties: { replace: { type: 'boolean', default: false } } }),
        },
        responses: {
          '201': ok('The tenant and the new key (secret shown once)', {
            allOf: [
              { $ref: '#/components/schemas/Tenant' },
              { type: 'object', properties: { newKey: { $ref: '#/components/schemas/NewKey' } } },
            ],
          }),
          ...notFound,
          ...failures,
        },
      },
    },
    '/admin/tenants/{name}/memory-share': {
      parameters: tenantName,
      put: {
        operationId: 'setTenantMemoryShare',
        summary:
          "Set the tenant's share of the memory budget (a fraction in (0, 1]), or clear it with null; " +
          'a --config file that gives one sets it again at the next load',
        requestBody: {
          required: true,
          content: json({
            type: 'object',
            required: ['memoryShare'],
            properties: { memoryShare: { type: ['number', 'null'], exclusiveMinimum: 0, maximum: 1 } },
          }),
        },
        responses: {
          '200': ok('The tenant', { $ref: '#/components/schemas/Tenant' }),
          ...notFound,
          ...failures,
        },
      },
    },
    '/admin/memory': {
      get: {
        operationId: 'getMemory',
        summary: 'The memory budget, its usage, and each tenant (account) with its usage and limit',
        responses: {
          '200': ok('The budget', {
            type: 'object',
            properties: {
              budgetBytes: { type: 'integer' },
              usedBytes: { type: 'integer' },
              lowWaterBytes: { type: 'integer', description: 'Refused sends are taken again below this' },
              refusing: { type: 'boolean' },
              tenants: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    tenant: { type: ['string', 'null'] },
                    accountId: { type: 'string' },
                    usedBytes: { type: 'integer' },
                    limitBytes: { type: 'integer' },
                    refusing: { type: 'boolean' },
                  },
                },
              },
            },
          }),
          ...failures,
        },
      },
    },
    '/admin/tenants/{name}/keys/{accessKeyId}': {
      parameters: [
        ...tenantName,
        { name: 'accessKeyId', in: 'path', required: true, schema: { type: 'string' } },
      ],
      delete: {
        operationId: 'deleteTenantKey',
        summary: 'Remove one key (a tenant keeps at least one)',
        responses: {
          '200': ok('The tenant', { $ref: '#/components/schemas/Tenant' }),
          '400': ok('It is the last key', error),
          ...notFound,
          ...failures,
        },
      },
    },
    '/admin/queues': {
      get: {
        operationId: 'listQueues',
        summary: 'Queues of every tenant with their depths',
        parameters: [
          { name: 'tenant', in: 'query', schema: { type: 'string' } },
          { name: 'accountId', in: 'query', schema: { type: 'string' } },
          { name: 'prefix', in: 'query', schema: { type: 'string' } },
          {
            name: 'history',
            in: 'query',
            description: 'true: each queue with its history (the charts of the admin page)',
            schema: { type: 'string', enum: ['true', 'false'] },
          },
        ],
        responses: {
          '200': ok('Queues', {
            type: 'object',
            properties: {
              queues: {
                type: 'array',
                items: {
                  allOf: [
                    { $ref: '#/components/schemas/QueueSummary' },
                    { type: 'object', properties: { history: { $ref: '#/components/schemas/History' } } },
                  ],
                },
              },
            },
          }),
          ...notFound,
          ...failures,
        },
      },
      post: {
        operationId: 'createQueue',
        summary: 'Create a queue (as CreateQueue: the same one again is 200, other attributes 409)',
        requestBody: {
          required: true,
          content: json({
            type: 'object',
            required: ['name'],
            properties: {
              name: { type: 'string', description: 'A FIFO queue ends in .fifo and has FifoQueue: true' },
              tenant: { type: 'string', description: "A tenant's name, for its account" },
              accountId: { type: 'string', pattern: '^\\d{12}$', description: 'Default: --account-id' },
              region: { type: 'string', description: 'Default: --region' },
              attributes: {
                type: 'object',
                additionalProperties: { type: ['string', 'number', 'boolean'] },
                description: "CreateQueue's attributes (VisibilityTimeout, FifoQueue, RedrivePolicy, ...)",
              },
              tags: { type: 'object', additionalProperties: { type: 'string' } },
            },
          }),
        },
        responses: {
          '201': ok('Created', { $ref: '#/components/schemas/QueueSummary' }),
          '200': ok('It existed with these attributes', { $ref: '#/components/schemas/QueueSummary' }),
          '400': ok('A bad name, attribute, tag, account or region', error),
          '409': ok('It exists with other attributes, or was deleted less than 60 s ago', error),
          ...notFound,
          ...failures,
        },
      },
    },
    '/admin/queues/{accountId}/{region}/{name}': {
      parameters: queuePath,
      get: {
        operationId: 'getQueue',
        summary: 'A queue with its attributes, tags, depths and dead-letter sources',
        responses: {
          '200': ok('The queue', {
            allOf: [
              { $ref: '#/components/schemas/QueueSummary' },
              {
                type: 'object',
                properties: {
                  attributes: { type: 'object' },
                  tags: { type: 'object' },
                  redrivePolicy: { type: ['object', 'null'] },
                  history: { $ref: '#/components/schemas/History' },
                },
              },
            ],
          }),
          ...notFound,
          ...failures,
        },
      },
      delete: {
        operationId: 'deleteQueue',
        summary: 'Delete a queue and its messages',
        responses: {
          '200': ok('Deleted', { type: 'object', properties: { deleted: { type: 'string' } } }),
          ...notFound,
          ...failures,
        },
      },
    },
    '/admin/queues/{accountId}/{region}/{name}/messages': {
      parameters: queuePath,
      get: {
        operationId: 'peekMessages',
        summary: 'The oldest messages, in any state, without receiving them or changing their visibility',
        parameters: [
          { name: 'max', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 10 } },
        ],
        responses: {
          '200': ok('Messages in send order', {
            type: 'object',
            properties: {
              messages: { type: 'array', items: { $ref: '#/components/schemas/Message' } },
              total: { type: 'integer' },
            },
          }),
          '400': ok('Bad max', error),
          ...notFound,
          ...failures,
        },
      },
      post: {
        operationId: 'sendMessage',
        summary: 'Send a message, with the checks and the memory budget of SendMessage',
        requestBody: {
          required: true,
          content: json({
            type: 'object',
            required: ['body'],
            properties: {
              body: { type: 'string' },
              attributes: {
                type: 'object',
                description: 'Message attributes as peek shows them',
                additionalProperties: {
                  type: 'object',
                  required: ['DataType'],
                  properties: {
                    DataType: {
                      type: 'string',
                      description: 'String, Number or Binary, with an optional .suffix',
                    },
                    StringValue: { type: 'string' },
                    BinaryValue: { type: 'string', contentEncoding: 'base64' },
                  },
                },
              },
              groupId: { type: 'string', description: 'MessageGroupId: required by FIFO queues' },
              deduplicationId: { type: 'string', description: 'MessageDeduplicationId (FIFO)' },
              delaySeconds: { type: 'integer', minimum: 0, maximum: 900, description: 'Standard queues' },
            },
          }),
        },
        responses: {
          '201': ok('Stored', { $ref: '#/components/schemas/Sent' }),
          '200': ok('A FIFO duplicate (same deduplication id within 5 minutes): nothing stored', {
            $ref: '#/components/schemas/Sent',
          }),
          '400': ok("SendMessage's errors (names as in SQS), or a bad shape", error),
          '429': ok('RequestThrottled: over the memory budget, or the tenant share of it', error),
          ...notFound,
          ...failures,
        },
      },
    },
    '/admin/queues/{accountId}/{region}/{name}/messages/{messageId}': {
      parameters: [
        ...queuePath,
        { name: 'messageId', in: 'path', required: true, schema: { type: 'string' } },
      ],
      delete: {
        operationId: 'deleteMessage',
        summary: 'Delete one message, in whatever state, by its id (no receipt handle needed)',
        responses: {
          '200': ok('Deleted', { type: 'object', properties: { deleted: { type: 'string' } } }),
          ...notFound,
          ...failures,
        },
      },
    },
    '/admin/queues/{accountId}/{region}/{name}/purge': {
      parameters: queuePath,
      post: {
        operationId: 'purgeQueue',
        summary: 'Delete every message (as PurgeQueue: once per 60 s)',
        responses: {
          '200': ok('Purged', { type: 'object', properties: { purged: { type: 'integer' } } }),
          '409': ok('Purged less than 60 s ago', error),
          ...notFound,
          ...failures,
        },
      },
    },
    '/admin/queues/{accountId}/{region}/{name}/redrive': {
      parameters: queuePath,
      post: {
        operationId: 'redriveQueue',
        summary: "Move a dead-letter queue's messages back to their source queues (a message move task)",
        requestBody: {
          required: false,
          content: json({
            type: 'object',
            properties: {
              destinationArn: { type: 'string', description: 'Instead of each message’s source queue' },
              maxNumberOfMessagesPerSecond: { type: 'integer', minimum: 1, maximum: 500 },
            },
          }),
        },
        responses: {
          '202': ok('Started', {
            type: 'object',
            properties: {
              taskHandle: { type: 'string' },
              status: { type: 'string' },
              toMove: { type: 'integer' },
              sourceArn: { type: 'string' },
              destinationArn: { type: ['string', 'null'] },
            },
          }),
          '400': ok('Not a dead-letter queue, a task already runs, or a bad destination', error),
          ...notFound,
          ...failures,
        },
      },
    },
    '/admin/leader': {
      get: {
        operationId: 'getLeader',
        summary: "This instance's leader-election state and the lock as Redis has it",
        responses: { '200': ok('Leader status', { type: 'object' }), ...failures },
      },
    },
    '/admin/leader/step-down': {
      post: {
        operationId: 'stepDown',
        summary: 'Planned switchover: this leader drains, releases the lock and sits out one TTL',
        responses: {
          '200': ok('Stepped down', { type: 'object' }),
          '409': ok('Not the leader, or no leader election', error),
          ...failures,
        },
      },
    },
  },
} as const;
