/**
 * The one way a shared-sqs command line is declared: a table of flags, each with its environment
 * variables, type, shown default, help text and group, handed to yargs. The server's flags
 * (src/config.ts) and the admin CLI's (src/cli/admin.ts) are both such tables; the server's
 * command line is read by {@link readCommandLine}.
 *
 * The environment is read here rather than by yargs' `.env()`, so that an empty variable counts
 * as unset and an error can name the variable that held the bad value.
 */
import { readFileSync } from 'node:fs';
import yargs, { type Options } from 'yargs';
import { booleanOf } from './flag-values.js';

export const ENV_PREFIX = 'SHARED_SQS';

export interface FlagSpec {
  /** The long flag without its dashes: `control-port`. */
  readonly flag: string;
  /** Default: string. */
  readonly type?: 'string' | 'boolean';
  readonly group: string;
  readonly describe: string;
  /** Shown as `[default: ...]`; the value itself comes from the flag's parser. */
  readonly shownDefault?: string;
  /**
   * The variables that set it, strongest first, when not just `SHARED_SQS_<FLAG>`: the server's
   * --redis-addr also reads the Go predecessor's `REDIS_ADDR`; `[]` for a flag without one.
   */
  readonly env?: readonly string[];
  /** Every occurrence counts (joined with commas), where other flags keep their last value. */
  readonly repeatable?: boolean;
}

/** Bad flags or environment: the message is one line, fit to print after `shared-sqs: `. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** `--help` or `--version` was given: print `text` to stdout and exit 0. */
export class HelpRequested extends Error {
  override readonly name = 'HelpRequested';
  constructor(
    readonly kind: 'help' | 'version',
    readonly text: string,
  ) {
    super(`--${kind} requested`);
  }
}

/** Quotes a user-given value for an error message: JSON escapes keep it on one line. */
export function quote(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
}

export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

/** `control-port` → `SHARED_SQS_CONTROL_PORT`. */
export function envName(flag: string): string {
  return `${ENV_PREFIX}_${flag.toUpperCase().replace(/-/g, '_')}`;
}

export function envNames(spec: FlagSpec): readonly string[] {
  return spec.env ?? [envName(spec.flag)];
}

/** The first non-empty variable of the flag, with its name. */
export function fromEnv(
  spec: FlagSpec,
  env: NodeJS.ProcessEnv,
): { readonly value: string; readonly from: string } | undefined {
  for (const name of envNames(spec)) {
    const value = env[name];
    if (value !== undefined && value !== '') return { value, from: name };
  }
  return undefined;
}

/**
 * The yargs options of a table. No yargs default is set: a value absent from the parsed command
 * line means "not given", so that the environment can fill it in.
 */
export function yargsOptions(specs: readonly FlagSpec[]): Record<string, Options> {
  return Object.fromEntries(
    specs.map((spec) => [
      spec.flag,
      {
        type: spec.type ?? 'string',
        group: spec.group,
        describe:
          envNames(spec).length === 0
            ? spec.describe
            : `${spec.describe} [env: ${envNames(spec).join(', ')}]`,
        ...(spec.shownDefault === undefined ? {} : { defaultDescription: spec.shownDefault }),
        ...(spec.type === 'boolean' ? {} : { requiresArg: true }),
      } satisfies Options,
    ]),
  );
}

/** What yargs' parser is told for every table: flags are read as typed, nothing converted. */
export const PARSER_CONFIGURATION = {
  'camel-case-expansion': false,
  'dot-notation': false,
  'duplicate-arguments-array': false,
  'parse-numbers': false,
  'parse-positional-numbers': false,
} as const;

/** The help's width: the widest lines of help fit a 100-column terminal. */
export const HELP_WIDTH = 100;

/**
 * What yargs' parser does not do as this server always did: `-port=1` (Go's flag package) becomes
 * `--port=1`; `--leader-election=<v>` takes the values the environment takes (the parser reads
 * anything but "true", even "1", as false); `--no-port` is unknown (the parser would set the
 * string flag to false, and the default would quietly stand).
 */
function normalizeArgs(argv: readonly string[], specs: readonly FlagSpec[]): string[] {
  const booleans = new Set(specs.filter((s) => s.type === 'boolean').map((s) => s.flag));
  const long = new Set([
    ...specs.map((s) => s.flag),
    ...[...booleans].map((flag) => `no-${flag}`),
    'help',
    'version',
  ]);
  const end = argv.includes('--') ? argv.indexOf('--') : argv.length;
  const normal = argv.slice(0, end).map((arg) => {
    const match = /^(--?)([a-z][a-z0-9-]*)(=[^]*)?$/.exec(arg);
    if (!match) return arg;
    const [, dashes = '', name = '', assigned] = match;
    // A short flag like -h, or something yargs reports as unknown.
    if (dashes === '-' && (name.length === 1 || !long.has(name))) return arg;
    if (name.startsWith('no-') && !booleans.has(name.slice(3))) {
      throw new ConfigError(`Unknown argument: ${dashes}${name}`);
    }
    if (assigned === undefined || !booleans.has(name.replace(/^no-/, '')))
      return `--${name}${assigned ?? ''}`;
    if (name.startsWith('no-')) throw new ConfigError(`--${name} takes no value`);
    try {
      return booleanOf(assigned.slice(1)) ? `--${name}` : `--no-${name}`;
    } catch (e) {
      throw new ConfigError(`--${name} ${(e as Error).message} (got ${quote(assigned.slice(1))})`);
    }
  });
  return normal.concat(argv.slice(end));
}

/**
 * The flags `argv` gives, as text by flag name (a repeatable one's occurrences joined with commas,
 * others' last); throws {@link HelpRequested} for --help and --version and {@link ConfigError} for
 * bad usage, in yargs' words (`Unknown argument: frobnicate`).
 */
export function readCommandLine(
  argv: readonly string[],
  specs: readonly FlagSpec[],
  help: { readonly usage: string; readonly epilog: string },
): Partial<Record<string, string>> {
  const args = normalizeArgs(argv, specs);
  let parsed: Record<string, unknown> = {};
  let output = '';
  // Synchronous: no command or middleware is async, so the callback has run when parse returns.
  void yargs()
    .scriptName('shared-sqs')
    .usage(help.usage)
    .epilog(help.epilog)
    .locale('en')
    .wrap(HELP_WIDTH)
    .strict()
    .exitProcess(false)
    // A repeated flag arrives as an array: a repeatable one keeps every value, others the last.
    .parserConfiguration({ ...PARSER_CONFIGURATION, 'duplicate-arguments-array': true })
    .options(yargsOptions(specs))
    .alias('h', 'help')
    .group(['help', 'version'], 'Other:')
    .version(VERSION)
    .fail((message: string | null, err: Error | undefined) => {
      throw new ConfigError(oneLine(message ?? err?.message ?? 'bad command line'));
    })
    .parse([...args], {}, (_err, argv, text) => {
      parsed = argv;
      output = text;
    });
  if (parsed['help'] === true) throw new HelpRequested('help', output);
  if (parsed['version'] === true) throw new HelpRequested('version', output);
  const rest = parsed['_'];
  // yargs reports positional arguments, but not those after `--`.
  if (Array.isArray(rest) && rest.length > 0) {
    throw new ConfigError(`unexpected argument ${quote(String(rest[0]))}: shared-sqs takes only options`);
  }
  const given: Partial<Record<string, string>> = {};
  for (const spec of specs) {
    const value: unknown = parsed[spec.flag];
    if (value === undefined) continue;
    const all = (Array.isArray(value) ? value : [value]).map(String);
    given[spec.flag] = spec.repeatable === true ? all.join(',') : all.at(-1);
  }
  return given;
}

const VERSION = readVersion();

function readVersion(): string {
  try {
    // src/flags.ts and dist/flags.js both sit one level below package.json.
    const pkg: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    if (typeof pkg === 'object' && pkg !== null && 'version' in pkg && typeof pkg.version === 'string') {
      return pkg.version;
    }
  } catch {
    // fall through
  }
  return 'unknown';
}
