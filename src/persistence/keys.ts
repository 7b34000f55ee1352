/**
 * Redis key names. Every key starts with one prefix that holds a hash tag (`{ssq}:` by default),
 * so all of them live in one Redis Cluster slot and one Lua script may touch any of them.
 *
 * | key                  | type   | holds                                                        |
 * |----------------------|--------|--------------------------------------------------------------|
 * | `<p>layout`          | string | the layout version ({@link LAYOUT_VERSION}); checked at load |
 * | `<p>queues`          | hash   | queue uid → queue record (codec.ts)                          |
 * | `<p>seq`             | hash   | queue uid → the queue's next message sequence number         |
 * | `<p>m:<uid>`         | hash   | message id → message record, one hash per queue              |
 * | `<p>d:<uid>`         | hash   | FIFO: deduplication key → record (5 min; expired ones dropped) |
 * | `<p>a:<uid>`         | hash   | FIFO: ReceiveRequestAttemptId → what that receive returned   |
 * | `<p>tasks`           | hash   | message move task id → task record                           |
 * | `<p>tenants`         | hash   | tenant name → tenant record with its keys (codec.ts)         |
 * | `<p>leader`          | string | the leader lock (src/ha/lock.ts); write scripts fence on it  |
 * | `<p>commit`          | string | id of the last apply call; the writer's next call checks it  |
 *
 * A queue's messages are keyed by the queue's uid, not its name: a purge or a DeleteQueue drops
 * one whole key (UNLINK, freed in the background), and a queue created again under the same name
 * starts from a fresh key while the old one is being removed.
 *
 * `commit` is the writer's own bookkeeping (writer.ts: the chain of pipelined calls): the loader
 * never reads it, and an older shared-sqs of this layout ignores it, which is why it came without
 * a new layout version.
 */
export const LAYOUT_VERSION = 1;

export const DEFAULT_PREFIX = '{ssq}:';

export interface Keys {
  readonly prefix: string;
  readonly layout: string;
  readonly queues: string;
  readonly seq: string;
  readonly lock: string;
  readonly tasks: string;
  readonly tenants: string;
  /** The chain of the writer's script calls: the id of the last one applied. */
  readonly commit: string;
  /** The hash of one queue's messages; the Lua scripts build the same name from the prefix. */
  messages(uid: string): string;
  /** FIFO: the hashes of one queue's deduplication and receive-attempt records (same rule). */
  dedup(uid: string): string;
  attempts(uid: string): string;
}

export function keysFor(prefix: string = DEFAULT_PREFIX, lock?: string): Keys {
  return {
    prefix,
    layout: `${prefix}layout`,
    queues: `${prefix}queues`,
    seq: `${prefix}seq`,
    lock: lock ?? `${prefix}leader`,
    tasks: `${prefix}tasks`,
    tenants: `${prefix}tenants`,
    commit: `${prefix}commit`,
    messages: (uid) => `${prefix}m:${uid}`,
    dedup: (uid) => `${prefix}d:${uid}`,
    attempts: (uid) => `${prefix}a:${uid}`,
  };
}

/**
 * Checks a prefix given on the command line: not empty, and with a hash tag (`{...}` with
 * something inside), without which the scripts' keys could land in different Cluster slots.
 */
export function checkPrefix(prefix: string): string | undefined {
  const open = prefix.indexOf('{');
  const close = open < 0 ? -1 : prefix.indexOf('}', open + 1);
  if (open < 0 || close <= open + 1) {
    return `the Redis key prefix must contain a hash tag such as {ssq}, got ${JSON.stringify(prefix)}`;
  }
  return undefined;
}
