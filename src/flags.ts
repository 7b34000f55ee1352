/**
 * The one way a shared-sqs command line is declared: a table of flags, each with its environment
 * variables, type, shown default, help text and group, handed to yargs. The server's flags
 * (src/config.ts) and the admin CLI's (src/cli/admin.ts) are both such tables.
 *
 * The environment is read here rather than by yargs' `.env()`, so that an empty variable counts
 * as unset and an error can name the variable that held the bad value.
 */
import type { Options } from 'yargs';

export const ENV_PREFIX = 'SHARED_SQS';

export interface FlagSpec {
  /** The long flag without its dashes: `control-port`. */
  readonly flag: string;
  readonly type: 'string' | 'boolean';
  readonly group: string;
  readonly describe: string;
  /** Shown as `[default: ...]`; the value itself comes from the flag's parser. */
  readonly shownDefault?: string;
  /**
   * The variables that set it, strongest first, when not just `SHARED_SQS_<FLAG>`: the server's
   * --redis-addr also reads the Go predecessor's `REDIS_ADDR`; `[]` for a flag without one.
   */
  readonly env?: readonly string[];
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
        type: spec.type,
        group: spec.group,
        describe:
          envNames(spec).length === 0
            ? spec.describe
            : `${spec.describe} [env: ${envNames(spec).join(', ')}]`,
        ...(spec.shownDefault === undefined ? {} : { defaultDescription: spec.shownDefault }),
        ...(spec.type === 'string' ? { requiresArg: true } : {}),
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
