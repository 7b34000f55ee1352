/**
 * `shared-sqs admin ...`: the admin API from a shell (docs/admin.md). Tables by default, `--json`
 * for scripts (the API's JSON as it came). The control plane is `--url` (SHARED_SQS_ADMIN_URL,
 * default http://127.0.0.1:4101) and the token `--token` (SHARED_SQS_ADMIN_TOKEN; prefer the
 * environment: flags show in ps). The token is sent, never printed.
 *
 * A queue is named as `<account>/<region>/<name>`, an ARN, a queue URL, or its bare name when
 * only one queue has it (narrow with --tenant / --region).
 *
 * Exit codes: 0 done; 1 the API refused (its error is printed); 2 a usage error.
 */
import yargs, { type Argv } from 'yargs';
import { fromEnv, HELP_WIDTH, PARSER_CONFIGURATION, yargsOptions, type FlagSpec } from '../flags.js';

const DEFAULT_URL = 'http://127.0.0.1:4101';
const GROUP = 'Options:';
const URL_FLAG: FlagSpec = {
  flag: 'url',
  type: 'string',
  group: GROUP,
  describe: 'Control plane URL',
  shownDefault: DEFAULT_URL,
  env: ['SHARED_SQS_ADMIN_URL'],
};
// The server reads the same variable: one shell can start both.
const TOKEN: FlagSpec = {
  flag: 'token',
  type: 'string',
  group: GROUP,
  describe: 'Admin bearer token (prefer the environment: flags show in ps)',
  env: ['SHARED_SQS_ADMIN_TOKEN'],
};

/** The flags every command takes, declared as the server's are (src/flags.ts). */
const ADMIN_FLAGS: readonly FlagSpec[] = [
  URL_FLAG,
  TOKEN,
  {
    flag: 'json',
    type: 'boolean',
    group: GROUP,
    describe: 'Print the API’s JSON instead of tables',
    env: [],
  },
  {
    flag: 'tenant',
    type: 'string',
    group: GROUP,
    describe: 'Only this tenant’s queues (queues, or to find a queue by name)',
    env: [],
  },
  {
    flag: 'region',
    type: 'string',
    group: GROUP,
    describe: 'Only this region (to find a queue by name)',
    env: [],
  },
];

interface Common {
  url: string;
  token: string | undefined;
  json: boolean;
}

interface Io {
  out(text: string): void;
  err(text: string): void;
}

class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

interface QueueSummary {
  tenant: string;
  accountId: string;
  region: string;
  name: string;
  arn: string;
  visible: number;
  inflight: number;
  delayed: number;
  fifo: boolean;
}

/** Runs one `admin` command line (the words after `admin`); resolves to the exit code. */
export async function runAdminCli(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  io: Io = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) },
): Promise<number> {
  let pending: Promise<void> | undefined;
  const run =
    (fn: (c: Common, a: Record<string, unknown>) => Promise<void>) => (a: Record<string, unknown>) => {
      const given = (spec: FlagSpec): string | undefined => {
        const value = a[spec.flag];
        return typeof value === 'string' ? value : fromEnv(spec, env)?.value;
      };
      const token = given(TOKEN);
      const c: Common = {
        url: (given(URL_FLAG) ?? DEFAULT_URL).replace(/\/+$/, ''),
        token: token === '' ? undefined : token,
        json: a['json'] === true,
      };
      pending = fn(c, a);
    };
  const queueArg = (y: Argv) =>
    y.positional('queue', {
      type: 'string',
      describe: 'account/region/name, an ARN, a queue URL or a unique name',
    });

  const parser = yargs()
    .scriptName('shared-sqs admin')
    .usage('Usage: $0 <command> [options]\n\nThe shared-sqs admin API from a shell (docs/admin.md).')
    .locale('en')
    .strict()
    .exitProcess(false)
    .wrap(HELP_WIDTH)
    .parserConfiguration(PARSER_CONFIGURATION)
    .options(yargsOptions(ADMIN_FLAGS))
    .command(
      'tenants [action] [name]',
      'List tenants; or: tenants create <name> [--account-id], tenants rotate <name> [--replace], tenants delete <name> [--delete-queues]',
      (y) =>
        y
          .positional('action', { choices: ['list', 'create', 'rotate', 'delete'] as const, default: 'list' })
          .positional('name', { type: 'string' })
          .option('account-id', {
            type: 'string',
            describe: 'create: the 12-digit account (generated when absent)',
          })
          .option('replace', {
            type: 'boolean',
            default: false,
            describe: 'rotate: drop the other keys at once',
          })
          .option('delete-queues', { type: 'boolean', default: false, describe: 'delete: with its queues' }),
      run(async (c, a) => tenants(c, a, io)),
    )
    .command(
      'queues',
      'List queues of every tenant with their depths',
      (y) => y,
      run(async (c, a) => {
        const tenant = typeof a['tenant'] === 'string' ? `?tenant=${encodeURIComponent(a['tenant'])}` : '';
        const body = (await call(c, 'GET', `/admin/queues${tenant}`)) as { queues: QueueSummary[] };
        print(c, io, body, () =>
          table(
            ['TENANT', 'ACCOUNT', 'REGION', 'QUEUE', 'VISIBLE', 'IN FLIGHT', 'DELAYED'],
            body.queues.map((q) => [
              q.tenant,
              q.accountId,
              q.region,
              q.name,
              q.visible,
              q.inflight,
              q.delayed,
            ]),
          ),
        );
      }),
    )
    .command(
      'queue <queue>',
      'One queue: attributes, tags, depths',
      queueArg,
      run(async (c, a) => {
        const path = await queuePath(c, a);
        const body = (await call(c, 'GET', path)) as QueueSummary & { attributes: Record<string, string> };
        print(c, io, body, () =>
          table(
            ['FIELD', 'VALUE'],
            [
              ['queue', body.name],
              ['tenant', body.tenant],
              ['arn', body.arn],
              ['visible', body.visible],
              ['in flight', body.inflight],
              ['delayed', body.delayed],
              ...Object.entries(body.attributes).map(([k, v]) => [k, v]),
            ],
          ),
        );
      }),
    )
    .command(
      'peek <queue>',
      'Show the oldest messages without receiving them',
      (y) => queueArg(y).option('max', { type: 'number', default: 10, describe: '1-100' }),
      run(async (c, a) => {
        const path = await queuePath(c, a);
        const body = (await call(c, 'GET', `${path}/messages?max=${String(a['max'])}`)) as {
          total: number;
          messages: {
            messageId: string;
            state: string;
            receiveCount: number;
            sentAt: string;
            body: string;
          }[];
        };
        print(
          c,
          io,
          body,
          () =>
            table(
              ['MESSAGE ID', 'STATE', 'RECEIVES', 'SENT', 'BODY'],
              body.messages.map((m) => [m.messageId, m.state, m.receiveCount, m.sentAt, oneLine(m.body, 60)]),
            ) + `${body.messages.length} of ${body.total} message(s)\n`,
        );
      }),
    )
    .command(
      'purge <queue>',
      'Delete every message of a queue (needs --yes)',
      (y) => queueArg(y).option('yes', { type: 'boolean', default: false, describe: 'Really purge' }),
      run(async (c, a) => {
        const path = await queuePath(c, a);
        if (a['yes'] !== true) throw new CliError(`purge deletes every message of ${path}: add --yes`, 2);
        const body = (await call(c, 'POST', `${path}/purge`)) as { purged: number };
        print(c, io, body, () => `purged ${body.purged} message(s)\n`);
      }),
    )
    .command(
      'redrive <queue>',
      'Move a dead-letter queue’s messages back to their source queues',
      (y) => queueArg(y).option('destination-arn', { type: 'string', describe: 'Move them here instead' }),
      run(async (c, a) => {
        const path = await queuePath(c, a);
        const dest = a['destination-arn'];
        const body = (await call(
          c,
          'POST',
          `${path}/redrive`,
          typeof dest === 'string' ? { destinationArn: dest } : {},
        )) as {
          taskHandle: string;
          toMove: number;
        };
        print(
          c,
          io,
          body,
          () => `redrive started: ${body.toMove} message(s) to move (task ${body.taskHandle})\n`,
        );
      }),
    )
    .command(
      'delete-queue <queue>',
      'Delete a queue and its messages (needs --yes)',
      (y) => queueArg(y).option('yes', { type: 'boolean', default: false, describe: 'Really delete' }),
      run(async (c, a) => {
        const path = await queuePath(c, a);
        if (a['yes'] !== true)
          throw new CliError(`delete-queue deletes ${path} and its messages: add --yes`, 2);
        const body = (await call(c, 'DELETE', path)) as { deleted: string };
        print(c, io, body, () => `deleted ${body.deleted}\n`);
      }),
    )
    .command(
      'leader',
      'Leader status of the instance behind --url',
      (y) => y,
      run(async (c) => {
        const body = (await call(c, 'GET', '/admin/leader')) as Record<string, unknown>;
        print(c, io, body, () =>
          table(
            ['FIELD', 'VALUE'],
            Object.entries(body)
              .filter(([, v]) => typeof v !== 'object' || v === null)
              .map(([k, v]) => [k, v === null ? '-' : typeof v === 'string' ? v : JSON.stringify(v)]),
          ),
        );
      }),
    )
    .command(
      'step-down',
      'Ask the leader behind --url to hand over (planned switchover)',
      (y) => y,
      run(async (c) => {
        const body = (await call(c, 'POST', '/admin/leader/step-down')) as Record<string, unknown>;
        print(
          c,
          io,
          body,
          () => `stepped down (epoch ${String(body['epoch'])}); now ${String(body['state'])}\n`,
        );
      }),
    )
    .demandCommand(1, 'name a command')
    .help('help')
    .alias('help', 'h');

  let output = '';
  let failure: Error | undefined;
  try {
    await parser.parseAsync([...argv], {}, (err, _argv, text) => {
      if (err) failure = err;
      output = text;
    });
  } catch (e) {
    failure = e instanceof Error ? e : new Error(String(e));
  }
  const failed: Error | undefined = failure;
  if (failed !== undefined) {
    io.err(`${output || failed.message}\n`);
    return 2;
  }
  if (pending === undefined) {
    if (output !== '') io.out(`${output}\n`);
    return 0;
  }
  try {
    await pending;
    return 0;
  } catch (e) {
    if (e instanceof CliError) {
      io.err(`shared-sqs admin: ${e.message}\n`);
      return e.exitCode;
    }
    io.err(`shared-sqs admin: ${(e as Error).message}\n`);
    return 1;
  }
}

async function tenants(c: Common, a: Record<string, unknown>, io: Io): Promise<void> {
  const action = String(a['action']);
  const name = typeof a['name'] === 'string' ? a['name'] : undefined;
  if (action === 'list') {
    const body = (await call(c, 'GET', '/admin/tenants')) as {
      tenants: { name: string; accountId: string; keys: { accessKeyId: string }[]; queues: number }[];
    };
    print(c, io, body, () =>
      table(
        ['TENANT', 'ACCOUNT', 'KEYS', 'QUEUES'],
        body.tenants.map((t) => [t.name, t.accountId, t.keys.map((k) => k.accessKeyId).join(','), t.queues]),
      ),
    );
    return;
  }
  if (name === undefined) throw new CliError(`tenants ${action} needs a tenant name`, 2);
  const t = encodeURIComponent(name);
  if (action === 'delete') {
    const q = a['delete-queues'] === true ? '?deleteQueues=true' : '';
    const body = (await call(c, 'DELETE', `/admin/tenants/${t}${q}`)) as {
      deleted: string;
      queuesDeleted: number;
    };
    print(c, io, body, () => `deleted tenant ${body.deleted} and ${body.queuesDeleted} queue(s)\n`);
    return;
  }
  const body = (
    action === 'create'
      ? await call(c, 'POST', '/admin/tenants', {
          name,
          ...(typeof a['account-id'] === 'string' ? { accountId: a['account-id'] } : {}),
        })
      : await call(c, 'POST', `/admin/tenants/${t}/keys`, { replace: a['replace'] === true })
  ) as { name: string; accountId: string; newKey: { accessKeyId: string; secretAccessKey: string } };
  print(
    c,
    io,
    body,
    () =>
      table(
        ['FIELD', 'VALUE'],
        [
          ['tenant', body.name],
          ['account', body.accountId],
          ['access key id', body.newKey.accessKeyId],
          ['secret access key', body.newKey.secretAccessKey],
        ],
      ) + 'The secret is shown this once: store it now.\n',
  );
}

async function call(c: Common, method: string, path: string, body?: object): Promise<unknown> {
  if (c.token === undefined)
    throw new CliError('no admin token: set SHARED_SQS_ADMIN_TOKEN or pass --token', 2);
  let res: Response;
  try {
    res = await fetch(`${c.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${c.token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (e) {
    throw new CliError(`cannot reach ${c.url}: ${(e as Error).message}`, 1);
  }
  const text = await res.text();
  let data: unknown;
  try {
    data = text === '' ? {} : JSON.parse(text);
  } catch {
    data = { error: 'NotJson', message: text.slice(0, 200) };
  }
  if (!res.ok) {
    const d = data as { error?: string; message?: string };
    throw new CliError(`${res.status} ${d.error ?? ''}: ${d.message ?? text}`, 1);
  }
  return data;
}

/** The API path of the queue a command names. */
async function queuePath(c: Common, a: Record<string, unknown>): Promise<string> {
  const ref = String(a['queue']);
  const path = (account: string, region: string, name: string): string =>
    `/admin/queues/${encodeURIComponent(account)}/${encodeURIComponent(region)}/${encodeURIComponent(name)}`;
  const arn = /^arn:aws:sqs:([^:]+):(\d{12}):(.+)$/.exec(ref);
  if (arn !== null) return path(arn[2] ?? '', arn[1] ?? '', arn[3] ?? '');
  const triple = /^(\d{12})\/([a-z0-9-]+)\/([^/]+)$/.exec(ref);
  if (triple !== null) return path(triple[1] ?? '', triple[2] ?? '', triple[3] ?? '');
  let account: string | undefined;
  let name = ref;
  const url = /^https?:\/\/[^/]+\/(\d{12})\/([^/?]+)/.exec(ref);
  if (url !== null) {
    account = url[1];
    name = url[2] ?? '';
  }
  const tenant = typeof a['tenant'] === 'string' ? `?tenant=${encodeURIComponent(a['tenant'])}` : '';
  const { queues } = (await call(c, 'GET', `/admin/queues${tenant}`)) as { queues: QueueSummary[] };
  const region = typeof a['region'] === 'string' ? a['region'] : undefined;
  const matches = queues.filter(
    (q) =>
      q.name === name &&
      (account === undefined || q.accountId === account) &&
      (region === undefined || q.region === region),
  );
  const [only] = matches;
  if (matches.length === 1 && only !== undefined) return path(only.accountId, only.region, only.name);
  if (matches.length === 0) throw new CliError(`no queue ${ref}`, 1);
  throw new CliError(
    `${matches.length} queues are named ${name}: ${matches.map((q) => `${q.accountId}/${q.region}/${q.name}`).join(', ')}; ` +
      'name one as account/region/name, or narrow with --tenant / --region',
    2,
  );
}

function print(c: Common, io: Io, body: unknown, human: () => string): void {
  io.out(c.json ? `${JSON.stringify(body, null, 2)}\n` : human());
}

/** Columns padded to their widest cell; numbers right-aligned. */
export function table(
  header: readonly string[],
  rows: readonly (readonly (string | number | boolean)[])[],
): string {
  const cells = [header.map(String), ...rows.map((r) => r.map((v) => String(v)))];
  const numeric = header.map((_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === 'number'));
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]): string =>
    r
      .map((v, i) => (numeric[i] === true ? v.padStart(widths[i] ?? 0) : v.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  if (rows.length === 0) return `${line(cells[0] ?? [])}\n(none)\n`;
  return `${cells.map(line).join('\n')}\n`;
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
