/**
 * Reading a `--config` file (JSON or YAML) into a {@link Seed}: the file is checked against
 * the published schema, docs/config.schema.json, and then across queues (each RedrivePolicy names a
 * queue of the file, without a cycle). Every problem is reported at once, one `path: reason` each.
 *
 * The file's conveniences are resolved here, so that what is applied is what AWS would take:
 * numbers and booleans become strings, a RedrivePolicy object becomes its JSON with the target's
 * ARN, and queues come in an order where each dead-letter queue precedes the queues that name it.
 *
 * Loaded only when a file is given (src/server.ts: `readSeedFile` imports it on demand): the schema
 * compiler is not free.
 */
import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject } from 'ajv';
import { parseQueueArn } from './core/redrive.js';
import { SeedError, type Seed, type SeedQueue, type SeedTenant } from './seed.js';

/** Where a queue that names no account or region lives: --account-id and --region. */
export interface FileDefaults {
  readonly accountId: string;
  readonly region: string;
}

// src/seed-file.ts and dist/seed-file.js both sit one level below the repository root.
const SCHEMA_URL = new URL('../docs/config.schema.json', import.meta.url);

let validator: ReturnType<Ajv['compile']> | undefined;

function validate(raw: unknown): readonly ErrorObject[] {
  if (validator === undefined) {
    const schema = JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as object;
    validator = new Ajv({ allErrors: true, verbose: true, strict: true, allowUnionTypes: true }).compile(
      schema,
    );
  }
  return validator(raw) ? [] : (validator.errors ?? []);
}

/** Reads and checks `path`; rejects with a {@link SeedError} listing every problem. */
export async function loadSeedFile(path: string, defaults: FileDefaults): Promise<Seed> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new SeedError(`--config ${path}: ${(e as Error).message}`);
  }
  let raw: unknown;
  if (/\.json$/i.test(path)) {
    try {
      raw = JSON.parse(text);
    } catch (e) {
      throw new SeedError(`--config ${path}: not JSON (${(e as Error).message})`);
    }
  } else {
    // Imported only for YAML: it costs a JSON file's start about 0.1 s of CPU.
    const { parse, YAMLParseError } = await import('yaml');
    try {
      raw = parse(text, { prettyErrors: true });
    } catch (e) {
      const where = e instanceof YAMLParseError && e.linePos ? ` at line ${e.linePos[0].line}` : '';
      throw new SeedError(`--config ${path}: not YAML${where} (${oneLine((e as Error).message)})`);
    }
  }
  // An empty YAML file is null: nothing to create.
  return parseSeedFile(raw ?? {}, defaults, `--config ${path}`);
}

/** The parsed file's content (an object as JSON or YAML gives it), checked and resolved. */
export function parseSeedFile(raw: unknown, defaults: FileDefaults, where = 'config'): Seed {
  const problems = validate(raw).map(problemOf);
  // The checks across queues run on a file the schema refused too, over the queues that have a
  // name and an account, so that one pass shows every problem.
  const file = (isObject(raw) ? raw : {}) as FileShape;
  const list = <T>(v: readonly T[] | undefined): readonly T[] =>
    Array.isArray(v) ? (v as readonly T[]) : [];
  const tenants: SeedTenant[] = [];
  const queues: Entry[] = [];
  list(file.tenants).forEach((t, i) => {
    if (!isObject(t)) return;
    tenants.push({
      name: t.name,
      accountId: t.accountId,
      keys: t.keys,
      ...(t.memoryShare === undefined ? {} : { memoryShare: t.memoryShare }),
    });
    list(t.queues).forEach((q, j) => {
      if (isObject(q)) queues.push(entry(q, t.accountId, defaults, `tenants[${i}].queues[${j}]`));
    });
  });
  list(file.queues).forEach((q, i) => {
    if (isObject(q)) queues.push(entry(q, q.accountId ?? defaults.accountId, defaults, `queues[${i}]`));
  });
  const { ordered, problems: across } = inDependencyOrder(
    queues.filter((e) => typeof e.queue.name === 'string' && typeof e.queue.accountId === 'string'),
  );
  problems.push(...across);
  if (problems.length > 0) throw new SeedError(where, problems);
  return { tenants, queues: ordered.map((e) => e.queue) };
}

// ---- the file as the schema lets it be -------------------------------------------------------

type Scalar = string | number | boolean;

interface FileQueue {
  readonly name: string;
  readonly accountId?: string;
  readonly region?: string;
  readonly attributes?: Readonly<Record<string, Scalar | Readonly<Record<string, unknown>>>>;
  readonly tags?: Readonly<Record<string, Scalar>>;
}

interface FileShape {
  readonly tenants?: readonly (Omit<SeedTenant, 'queues'> & { readonly queues?: readonly FileQueue[] })[];
  readonly queues?: readonly FileQueue[];
}

/** `/tenants/0/keys` and the failed keyword → `tenants[0].keys: must NOT have fewer than 1 items`. */
function problemOf(e: ErrorObject): string {
  const path = e.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce(
      (out, part) => (/^\d+$/.test(part) ? `${out}[${part}]` : out === '' ? part : `${out}.${part}`),
      '',
    );
  const at = path === '' ? '(top level)' : path;
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return `${at}: ${String(params['missingProperty'])} is required`;
    case 'additionalProperties':
      return `${at}: unknown field ${JSON.stringify(params['additionalProperty'])}`;
    case 'pattern':
      return `${at}: ${describePattern(path)} (got ${JSON.stringify(e.data)})`;
    default:
      return `${at}: ${e.message ?? e.keyword}`;
  }
}

/** The schema's patterns in words, by the field they check. */
function describePattern(path: string): string {
  if (/accountId$/.test(path)) return 'must be 12 digits';
  if (/region$/.test(path)) return 'must be a region name such as us-east-1';
  if (/name$/.test(path)) return 'must be 1 to 80 letters, digits, - and _ (a FIFO queue ends in .fifo)';
  return 'has a form the schema does not allow';
}

// ---- across queues ---------------------------------------------------------------------------

interface Entry {
  readonly path: string;
  readonly queue: SeedQueue & { readonly accountId: string; readonly region: string };
  /** The queue its RedrivePolicy names, as account/region/name, when the policy was an object. */
  readonly target: string | undefined;
  readonly targetGiven: string | undefined;
}

const keyOf = (q: { accountId: string; region: string; name: string }): string =>
  `${q.accountId}/${q.region}/${q.name}`;

function entry(q: FileQueue, accountId: string, defaults: FileDefaults, path: string): Entry {
  const region = q.region ?? defaults.region;
  const attributes: Record<string, string> = {};
  let target: string | undefined;
  let targetGiven: string | undefined;
  for (const [name, value] of Object.entries(isObject(q.attributes) ? q.attributes : {})) {
    // A policy written as AWS takes it (goaws' files do) may name a later queue too.
    const policy = name === 'RedrivePolicy' ? redrivePolicyOf(value) : undefined;
    if (policy !== undefined) {
      const given = policy.deadLetterTargetArn;
      // A bare name is a queue of the same account and region, as AWS requires of a DLQ.
      const arn = parseQueueArn(given);
      const named = arn === undefined ? { accountId, region, name: given } : arn;
      target = keyOf(named);
      targetGiven = given;
      attributes[name] = JSON.stringify({
        ...policy,
        deadLetterTargetArn: `arn:aws:sqs:${named.region}:${named.accountId}:${named.name}`,
      });
    } else {
      attributes[name] = typeof value === 'object' ? JSON.stringify(value) : String(value);
    }
  }
  const tags = Object.fromEntries(
    Object.entries(isObject(q.tags) ? q.tags : {}).map(([k, v]) => [k, String(v)]),
  );
  return { path, queue: { name: q.name, accountId, region, attributes, tags }, target, targetGiven };
}

/** A RedrivePolicy naming its target, as an object or its JSON; undefined leaves it to CreateQueue's checks. */
function redrivePolicyOf(value: unknown): { deadLetterTargetArn: string } | undefined {
  let policy = value;
  if (typeof value === 'string') {
    try {
      policy = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  if (typeof policy !== 'object' || policy === null) return undefined;
  const target: unknown = (policy as Record<string, unknown>)['deadLetterTargetArn'];
  return typeof target === 'string' ? { ...policy, deadLetterTargetArn: target } : undefined;
}

/**
 * The queues with every dead-letter queue before the queues that name it (otherwise in file
 * order), and the problems: a target the file does not define, a cycle.
 */
function inDependencyOrder(entries: readonly Entry[]): { ordered: Entry[]; problems: string[] } {
  const problems: string[] = [];
  const byKey = new Map<string, Entry>();
  for (const e of entries) {
    const key = keyOf(e.queue);
    const first = byKey.get(key);
    if (first !== undefined) {
      problems.push(`${e.path}: queue ${e.queue.name} is also defined at ${first.path}`);
    } else {
      byKey.set(key, e);
    }
  }
  const ordered: Entry[] = [];
  const state = new Map<Entry, 'visiting' | 'done'>();
  const visit = (e: Entry, chain: readonly Entry[]): void => {
    if (state.get(e) === 'done') return;
    if (state.get(e) === 'visiting') {
      const cycle = [...chain.slice(chain.indexOf(e)), e].map((c) => c.queue.name).join(' → ');
      problems.push(`${e.path}: queue ${e.queue.name} is in a RedrivePolicy cycle: ${cycle}`);
      return;
    }
    state.set(e, 'visiting');
    if (e.target !== undefined) {
      const target = byKey.get(e.target);
      if (target === undefined) {
        problems.push(
          `${e.path}.attributes.RedrivePolicy: queue ${e.queue.name} names the dead-letter queue ` +
            `${String(e.targetGiven)}, which the file does not define (in account ${e.queue.accountId}, region ${e.queue.region})`,
        );
      } else {
        visit(target, [...chain, e]);
      }
    }
    state.set(e, 'done');
    ordered.push(e);
  };
  for (const e of byKey.values()) visit(e, []);
  return { ordered, problems };
}

function isObject(v: unknown): v is object {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
