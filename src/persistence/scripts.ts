/**
 * The Lua scripts every write goes through, loaded from `scripts/<name>-<numkeys>.lua`, and the
 * codes they return. Each script's header lists its KEYS, ARGV and return codes; each write
 * script first checks the fencing token (KEYS[1] must hold ARGV[1] unless ARGV[1] is empty), so
 * a server that lost the leader lock cannot write (see docs/persistence.md).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { RedisClient } from './redis.js';

/** What the scripts return; negative codes are refusals, and a refusal writes nothing. */
export const ScriptCode = {
  OK: 0,
  /** The lock key does not hold our token: another instance leads. */
  FENCED: -1,
  /** init: keys under the prefix without a layout version. */
  UNVERSIONED: -2,
  /** apply: an unknown opcode (a bug in the writer). */
  MALFORMED: -3,
  /** apply: the writer's previous call was not applied, so this one wrote nothing. */
  OUT_OF_CHAIN: -4,
} as const;

/** A write refused because the leader lock holds another token: this instance must stop leading. */
export class FencedError extends Error {
  override readonly name = 'FencedError';
  constructor() {
    super('write refused: the leader lock is held by another instance (fenced)');
  }
}

export type ScriptArg = string | Buffer | number;

export class LuaScript {
  readonly numKeys: number;
  readonly sha: string;

  constructor(
    readonly name: string,
    readonly lua: string,
  ) {
    const m = /-(\d+)$/.exec(name);
    if (m === null) throw new Error(`script name ${name} must end with -<numkeys>`);
    this.numKeys = Number(m[1]);
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  /**
   * EVALSHA, and EVAL once if Redis does not know the script yet (a new or restarted server).
   * The argument list is passed as one array, never spread, so a large commit is not limited
   * by the JavaScript call stack.
   */
  async run(redis: RedisClient, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
    if (keys.length !== this.numKeys) {
      throw new Error(`${this.name}: ${keys.length} keys given, ${this.numKeys} expected`);
    }
    const argv: ScriptArg[] = [this.sha, this.numKeys, ...keys];
    for (const a of args) argv.push(a);
    try {
      return await redis.call('evalsha', argv);
    } catch (e) {
      if (!(e instanceof Error) || !e.message.startsWith('NOSCRIPT')) throw e;
      argv[0] = this.lua;
      return await redis.call('eval', argv);
    }
  }
}

/**
 * The one loader of the Lua scripts, `persistence/scripts/` and `ha/scripts/` alike: `folder` is
 * relative to src/. Read from beside the built modules (scripts/copy-lua.mjs copies them into
 * dist/), else from src/, as a build by tsc alone copies no .lua file.
 */
export function loadScript(folder: string, name: string): LuaScript {
  const file = `${folder}/${name}.lua`;
  let url = new URL(`../${file}`, import.meta.url);
  if (!existsSync(url)) url = new URL(`../../src/${file}`, import.meta.url);
  return new LuaScript(name, readFileSync(url, 'utf8'));
}

export const scripts = {
  apply: loadScript('persistence/scripts', 'apply-4'),
  init: loadScript('persistence/scripts', 'init-3'),
  layout: loadScript('persistence/scripts', 'layout-2'),
  v1Fence: loadScript('persistence/scripts', 'v1-fence-4'),
};
