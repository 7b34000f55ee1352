/**
 * Every instance routes (docs/architecture.md, "Many owners"): the data plane hands each decoded,
 * authenticated request to {@link Router.execute}, which runs it here when this process serves
 * the request's shard, and otherwise forwards the operation to the shard's owner over the
 * forwarding channel (rpc.ts); the answer comes back as the action's output or its SQS error, and
 * the plane encodes it in the client's protocol.
 *
 * What may be retried, and what may not:
 * - The owner answers "not owner" before running anything (its shard is being taken, given away,
 *   or is not its own): the router reads the map again and tries again, at the new owner or the
 *   same one, until the shard is served somewhere or {@link RouterOptions.holdMs} has passed (one
 *   lease TTL and a renewal: by then a dead owner's shard has been taken). A request that could
 *   not be delivered at all (the connection refused) is retried the same way.
 * - The owner answers "refused" (nothing was run): it holds the shard but the shard does not fit
 *   its memory budget (ShardOwner.refused). No other process will serve it before that owner
 *   reads it again a minute later, so the 503 is answered at once; holding the request for
 *   holdMs would only make every request for those queues hang first. The same when the map
 *   names this process for a shard it refused.
 * - Any other answer is not a success: only an output is.
 * - Anything after the request was delivered (the connection closed, the reply late) has an
 *   unknown outcome: 503, never a retry and never a guessed success. SQS clients retry a 503; a
 *   send retried that way may be stored twice, as with any 503 of a standard queue.
 */
import type { ActionName } from '../sqs/model.generated.js';
import { actions } from '../sqs/actions/index.js';
import { knownSqsError, SqsError } from '../sqs/errors.js';
import type { Action, RequestContext, SqsServices } from '../sqs/service.js';
import { quietLog, type LogSink } from '../log.js';
import type { Persistence } from '../persistence/persistence.js';
import {
  errorFromWire,
  errorToWire,
  fromForwarded,
  isForwardedContext,
  toForwarded,
  type AdminAnswer,
  type AdminCall,
  type ForwardedContext,
  type WireError,
} from './forward.js';
import type { ShardOwner, ShardMapView } from './owner.js';
import { routeOf } from './route.js';
import type { MoveAway, RemoteQueue } from '../core/events.js';
import { RESEND_AFTER_MS } from '../core/movetasks.js';
import type { Message, NewMessage } from '../core/message.js';
import type { Queue } from '../core/queue.js';
import type { QueueStore } from '../core/store.js';
import { deserializeMessage, serializeMessage } from '../persistence/codec.js';
import {
  RpcCancel,
  RpcClient,
  RpcLostError,
  RpcUnsentError,
  type RpcAddress,
  type RpcSignal,
} from './rpc.js';

/** What travels to the owner: the shard, the action, the caller's context and the decoded input. */
interface Forwarded {
  readonly s: number;
  readonly a: ActionName;
  readonly c: ForwardedContext;
  readonly i: unknown;
}

/**
 * A message sent to a dead-letter queue of another owner's shard: the queue (ARN and uid), the
 * source queue's ARN, and the message as the source held it (codec.ts).
 */
interface DeadLetter {
  readonly s: number;
  readonly arn: string;
  readonly uid: string;
  readonly src: string;
  readonly id: string;
  readonly m: string;
}

/**
 * A move task's message sent to a destination of another owner's shard (payload `{ v }`): the
 * queue (ARN and uid) and the message as the destination is to hold it, a new one whose id is the
 * same at every sending (core/movetasks.ts: redriven, redriveId).
 */
interface MoveRelay {
  readonly s: number;
  readonly arn: string;
  readonly uid: string;
  readonly n: NewMessage;
}

/**
 * The owner's answer: an output, an SQS error, "not the owner" (nothing was run; try again),
 * "refused" (nothing was run: the shard is the owner's but does not fit its memory; do not try
 * again), or, to a dead letter or a move, "that queue is gone".
 */
type Answer =
  | { readonly o: unknown }
  | { readonly e: WireError }
  | { readonly n: 1 }
  | { readonly r: 1 }
  | { readonly g: 1 };

const REFUSED: Answer = { r: 1 };

export interface RouterOptions {
  readonly instanceId: string;
  /** This process's store and its services: what a request for a shard served here runs on. */
  readonly services: SqsServices;
  readonly owner: ShardOwner;
  readonly persistence: Persistence;
  readonly map: ShardMapView & { refreshShared(): Promise<void> };
  /** Where a member takes forwarded requests; undefined for one not (or no longer) live. */
  readonly addressOf: (member: string) => string | undefined;
  /** How long a request waits for its shard to be served somewhere: lease TTL + renew interval. */
  readonly holdMs: number;
  readonly log?: LogSink | undefined;
}

/** Requests other than long polls: how long the owner may take (a slow Redis, a 1 MiB batch). */
const FORWARD_TIMEOUT_MS = 30_000;
/**
 * How long a request waits at an owner for a shard it is taking (ShardOwner.taking) before it
 * answers "not the owner".
 */
const TAKING_WAIT_MS = 2_000;
/** A long poll is answered within its wait; the owner gets this much more before it is given up. */
const LONG_POLL_SLACK_MS = 5_000;

export class Router {
  /** Requests forwarded to another owner, by how they ended (sqs_forwarded_requests_total). */
  readonly forwarded = { answered: 0, not_owner: 0, refused: 0, unsent: 0, lost: 0 };
  private readonly clients = new Map<string, RpcClient>();
  /** Dead letters being taken here now, `<uid>:<id>`. */
  private readonly accepting = new Set<string>();
  private readonly log: LogSink;
  private closed = false;
  /** A stop has begun (src/wiring/owners.ts handOver): replies close their connections. */
  leaving = false;

  constructor(private readonly opts: RouterOptions) {
    this.log = opts.log ?? quietLog;
  }

  /** The data plane's executor: resolves with the action's output once it is durable. */
  async execute(action: ActionName, ctx: RequestContext, input: unknown): Promise<unknown> {
    const shard = routeOf(action, input, ctx);
    // No shard to route by (ListQueues, or a malformed queue reference): answered here, from the
    // catalog or with the same validation error any instance would give.
    if (shard === undefined) return run(this.opts.services, action, ctx, input);
    let gone: RpcCancel | undefined;
    const answer = await this.toOwner(
      shard,
      async () => {
        const here = await this.servesSoon(shard);
        if (here === 'serves') return { o: await this.runOwned(shard, action, ctx, input) };
        return here === 'refused' ? REFUSED : undefined;
      },
      (address) => {
        if (gone === undefined) {
          const g = (gone = new RpcCancel());
          ctx.onAbort(() => g.abort(new Error('the client went away')));
        }
        return this.forward(address, { s: shard, a: action, c: toForwarded(ctx), i: input }, gone);
      },
    );
    if (answer !== undefined) {
      if ('o' in answer) return answer.o;
      if ('e' in answer) throw errorFromWire(answer.e);
      if ('r' in answer) {
        throw new SqsError(
          'ServiceUnavailable',
          "The queue's shard does not fit its owner's memory budget now; please retry later.",
        );
      }
    }
    throw new SqsError('ServiceUnavailable', `The queue's shard is not served now; please retry.`);
  }

  /**
   * Asks whoever the map names for `shard`, this process (`here`) or another (`there`), until
   * one answers other than "not the owner" ("refused" included); the map is read again between
   * tries, for up to {@link RouterOptions.holdMs}. Undefined: nobody did in time (or the router
   * closed).
   */
  private async toOwner(
    shard: number,
    here: () => Promise<Answer | undefined>,
    there: (address: string) => Promise<Answer | undefined>,
  ): Promise<Answer | undefined> {
    const { map, instanceId } = this.opts;
    const giveUpAt = performance.now() + this.opts.holdMs;
    for (let attempt = 0; !this.closed; attempt++) {
      const at = map.ownerOf(shard);
      let answer: Answer | undefined;
      if (at === instanceId) answer = await here();
      else if (at !== undefined) {
        const address = this.opts.addressOf(at);
        if (address !== undefined) answer = await there(address);
      }
      if (answer !== undefined && !('n' in answer)) return answer;
      if (performance.now() >= giveUpAt) return undefined;
      if (attempt > 0) await map.refreshShared().catch(() => undefined);
      await pause(Math.min(10 * 2 ** attempt, 100));
    }
    return undefined;
  }

  /** The forwarding channel's handler: runs a request for a shard this process serves. */
  async handle(payload: unknown, signal: RpcSignal): Promise<Answer> {
    const t = (payload as { t?: DeadLetter }).t;
    if (t !== undefined) return this.acceptDeadLetter(t);
    const v = (payload as { v?: MoveRelay }).v;
    if (v !== undefined) return this.acceptMove(v);
    const f = payload as Forwarded;
    if (typeof f.s !== 'number' || !Object.hasOwn(actions, f.a) || !isForwardedContext(f.c)) {
      return { e: errorToWire(new SqsError('InvalidAction', 'The forwarded request names no action.')) };
    }
    const here = await this.servesSoon(f.s);
    if (here === 'refused') return REFUSED;
    if (here !== 'serves') return { n: 1 };
    const ctx = fromForwarded(f.c, (fn) => signal.addEventListener('abort', fn, { once: true }));
    try {
      return { o: await this.runOwned(f.s, f.a, ctx, f.i) };
    } catch (e) {
      return { e: errorToWire(e) };
    }
  }

  /**
   * A message reached its maxReceiveCount, and its dead-letter queue is another owner's
   * (QueueStore.onDeadLetterAway): sent there, and taken out of `source` once that owner has it
   * durably. No answer (no owner in time, or the answer lost): it is sent again
   * {@link RESEND_AFTER_MS} later (its mark answers a second arrival), while it is held and this
   * process serves the queue; once the hold ends, or after an error answer, a later receive tries
   * again (Queue.completeTransfer). A FIFO message's group waits meanwhile, as it waits for a
   * message in flight. The relay counts as a request in flight on the source's shard, so a shard
   * given away meanwhile is handed over only once the answer is applied and written: its next
   * owner never finds the message still there after it arrived (and, holding the dead-letter queue
   * too, puts it there a second time).
   */
  relayDeadLetter(source: Queue, message: Message, target: RemoteQueue, tries = 0): void {
    const t: DeadLetter = {
      s: target.shard,
      arn: target.arn,
      uid: target.uid,
      src: source.arn,
      id: message.id,
      m: serializeMessage(message),
    };
    const leave = this.opts.owner.enter(source.shard);
    // Sent only once the hold (the message marked relayed) is written: see Queue.hold.
    void this.opts.persistence
      .commit(source.shard)
      .then(() => this.deliver(t))
      .then(
        (answer) => {
          if (answer === undefined)
            this.relayAgainLater(source, message, target, 'no owner answered in time', tries);
          else if ('o' in answer) source.completeTransfer(message, this.opts.services.clock.now());
        },
        (e: unknown) => {
          this.relayAgainLater(source, message, target, e instanceof Error ? e.message : String(e), tries);
        },
      )
      .finally(leave);
  }

  /**
   * A dead letter whose sending got no answer: sent again in a moment while its hold lasts (see
   * relayDeadLetter), so at most a hold's worth of tries; told once per message.
   */
  private relayAgainLater(
    source: Queue,
    message: Message,
    target: RemoteQueue,
    why: string,
    tries: number,
  ): void {
    if (tries === 0) {
      this.log.warn(
        { queue: source.arn, error: why },
        'a dead-letter move to another owner got no answer; the message is sent again in a moment',
      );
    }
    const timer = setTimeout(() => {
      // A queue read in again since is another object: that one holds the message until its hold ends.
      if (this.closed || source.deleted || source.evicted || !this.opts.owner.serves(source.shard)) return;
      if (source.holds(message, this.opts.services.clock.now())) {
        this.relayDeadLetter(source, message, target, tries + 1);
      }
    }, RESEND_AFTER_MS);
    timer.unref();
  }

  /**
   * A move task of `store` sends a message to a destination another owner holds
   * (QueueStore.onMoveAway): the answer goes back to the store (QueueStore.movedAway), which takes
   * the message out of the task's source only when the destination has it durably.
   */
  relayMove(store: QueueStore, away: MoveAway): void {
    // As a request in flight (see relayDeadLetter): the source's shard is not given away before
    // the answer is applied and written with it.
    const leave = this.opts.owner.enter(away.source.shard);
    const v: MoveRelay = {
      s: away.target.shard,
      arn: away.target.arn,
      uid: away.target.uid,
      n: away.redriven,
    };
    // Sent only once the hold (the message marked relayed) is written: see Queue.hold.
    void this.opts.persistence
      .commit(away.source.shard)
      .then(() =>
        this.toOwner(
          v.s,
          () => this.acceptMove(v),
          (address) => this.send(address, { v }, FORWARD_TIMEOUT_MS, 'MoveMessage'),
        ),
      )
      .then(
        (answer) => {
          store.movedAway(
            away,
            answer === undefined ? 'unknown' : 'o' in answer ? 'arrived' : 'g' in answer ? 'gone' : 'unknown',
          );
        },
        (e: unknown) => {
          this.log.warn(
            { task: away.task.taskId, error: e instanceof Error ? e.message : String(e) },
            "a move task's message to another owner got no answer; it is sent again in a moment",
          );
          store.movedAway(away, 'unknown');
        },
      )
      .finally(leave);
  }

  /**
   * An admin call about a queue of `shard` (src/http/admin-route.ts), answered by the shard's
   * owner: 'here' when that is this process.
   */
  async adminAtOwner(shard: number, call: AdminCall): Promise<AdminAnswer | 'here'> {
    try {
      const { owner } = this.opts;
      const answer = await this.toOwner(
        shard,
        () =>
          Promise.resolve(owner.serves(shard) ? { o: 'here' } : owner.refused(shard) ? REFUSED : undefined),
        (address) => this.send(address, { h: call, s: shard }, FORWARD_TIMEOUT_MS, 'Admin'),
      );
      if (answer !== undefined && 'o' in answer) return answer.o as AdminAnswer | 'here';
      if (answer !== undefined && 'r' in answer)
        return notServed("the queue's shard does not fit its owner's memory budget now");
      return notServed("the queue's shard is not served now");
    } catch (e) {
      return notServed(e instanceof Error ? e.message : String(e));
    }
  }

  /** An admin call run by the member at `address` on its own shards (the queue listing). */
  async adminAt(address: string, call: AdminCall): Promise<AdminAnswer> {
    try {
      const answer = await this.send(address, { h: call }, FORWARD_TIMEOUT_MS, 'Admin');
      if (answer !== undefined && 'o' in answer) return answer.o as AdminAnswer;
      return notServed(`the member at ${address} did not answer`);
    } catch (e) {
      return notServed(e instanceof Error ? e.message : String(e));
    }
  }

  /**
   * Serves the shard, now or once it is read in here (a planned move's new owner, a takeover):
   * a request waits for that where it is, not at its router's next try. 'refused': held here but
   * refused for want of memory, before or while it was waited for; 'no': not this process's now.
   */
  private async servesSoon(shard: number): Promise<'serves' | 'refused' | 'no'> {
    const { owner } = this.opts;
    if (owner.serves(shard)) return 'serves';
    if (owner.refused(shard)) return 'refused';
    if (!owner.taking(shard)) return 'no';
    await owner.whenServing(shard, TAKING_WAIT_MS);
    return owner.serves(shard) ? 'serves' : owner.refused(shard) ? 'refused' : 'no';
  }

  /** Stops forwarding; what is pending at the peers is failed as unknown (503). */
  async close(): Promise<void> {
    this.closed = true;
    const clients = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(clients.map((c) => c.close()));
  }

  /** Delivers a dead letter to its queue's owner (this process too), retrying "not the owner". */
  private deliver(t: DeadLetter): Promise<Answer | undefined> {
    return this.toOwner(
      t.s,
      () => this.acceptDeadLetter(t),
      (address) => this.send(address, { t }, FORWARD_TIMEOUT_MS, 'DeadLetter'),
    );
  }

  /**
   * Takes a message another owner sends to a dead-letter queue of a shard served here, at most
   * once: its mark, written with it, answers a second sending (a relay whose answer was lost).
   */
  private acceptDeadLetter(t: DeadLetter): Promise<Answer> {
    return this.accept(t.s, t.arn, t.uid, t.id, (dlq, now) =>
      dlq.acceptDeadLetter(deserializeMessage(t.id, t.m), t.src, now),
    );
  }

  /**
   * Takes a move task's message another owner sends to a queue of a shard served here, at most
   * once, as acceptDeadLetter: a new message, sent as a move task's step sends it (a FIFO queue
   * may find it a duplicate within its deduplication window: then it is only marked).
   */
  private acceptMove(v: MoveRelay): Promise<Answer> {
    if (typeof v.n !== 'object' || typeof v.n.id !== 'string') {
      return Promise.resolve({ e: errorToWire(new SqsError('InvalidAction', 'The move names no message.')) });
    }
    return this.accept(v.s, v.arn, v.uid, v.n.id, (q, now) => q.sendMessage(v.n, now));
  }

  /**
   * Puts message `id` into the queue `arn` (uid `uid`) of shard `s` unless its mark says it is
   * there already, marks it in the same write, and answers once that is durable.
   */
  private async accept(
    s: unknown,
    arn: string,
    uid: string,
    id: string,
    put: (q: Queue, now: number) => unknown,
  ): Promise<Answer> {
    const { owner, persistence, services } = this.opts;
    if (typeof s !== 'number') return { n: 1 };
    // Refused: the relay gives up now and its message is sent again after its hold, rather than
    // keeping the source's shard busy (a request in flight there) for holdMs first.
    if (!owner.serves(s)) return owner.refused(s) ? REFUSED : { n: 1 };
    const key = `${uid}:${id}`;
    // The same message sent twice at once: the second waits for the first's outcome, then asks again.
    if (this.accepting.has(key)) return { n: 1 };
    this.accepting.add(key);
    const leave = owner.enter(s);
    try {
      const q = services.store.byArn(arn);
      if (q === undefined || q.uid !== uid || q.deleted) return { g: 1 };
      if (!(await persistence.transferMarked(s, uid, id))) {
        put(q, services.clock.now());
        persistence.acceptedTransfer(q, id);
      }
      await persistence.commit(s);
      if (!owner.holds(s)) return { n: 1 };
      return { o: 1 };
    } catch (e) {
      return { e: errorToWire(e) };
    } finally {
      leave();
      this.accepting.delete(key);
    }
  }

  /** Runs here, waits for the shard's write, and checks the lease still held before the reply. */
  private async runOwned(
    shard: number,
    action: ActionName,
    ctx: RequestContext,
    input: unknown,
  ): Promise<unknown> {
    const { owner, persistence } = this.opts;
    const leave = owner.enter(shard);
    try {
      const output = await run(this.opts.services, action, ctx, input);
      await persistence.commit(ctx.shard ?? shard);
      if (!owner.holds(shard)) {
        throw new SqsError(
          'ServiceUnavailable',
          "This instance lost the queue's shard before the reply; please retry.",
        );
      }
      return output;
    } finally {
      leave();
    }
  }

  /** One delivery to the owner; undefined: not delivered or not the owner (try again). */
  private forward(address: string, f: Forwarded, signal: RpcSignal): Promise<Answer | undefined> {
    const wait = f.a === 'ReceiveMessage' ? waitSeconds(f.i) : undefined;
    const timeoutMs = wait === undefined ? FORWARD_TIMEOUT_MS : wait * 1000 + LONG_POLL_SLACK_MS;
    return this.send(address, f, timeoutMs, f.a, signal);
  }

  private async send(
    address: string,
    payload: unknown,
    timeoutMs: number,
    what: string,
    signal?: RpcSignal,
  ): Promise<Answer | undefined> {
    let client = this.clients.get(address);
    if (client === undefined) {
      client = new RpcClient(rpcAddress(address));
      this.clients.set(address, client);
    }
    try {
      const answer = (await client.call(payload, { timeoutMs, signal })) as Answer;
      if ('n' in answer) {
        this.forwarded.not_owner++;
        return undefined;
      }
      if ('r' in answer) this.forwarded.refused++;
      else this.forwarded.answered++;
      return answer;
    } catch (e) {
      if (e instanceof RpcUnsentError) {
        this.forwarded.unsent++;
        return undefined;
      }
      if (e instanceof RpcLostError) {
        this.forwarded.lost++;
        this.log.warn({ address, action: what, error: e.message }, 'a forwarded request got no answer: 503');
        throw new SqsError(
          'ServiceUnavailable',
          "The request reached the queue's owner, which did not answer; please retry.",
        );
      }
      throw knownSqsError(e) ?? e;
    }
  }
}

function notServed(message: string): AdminAnswer {
  return { status: 503, body: JSON.stringify({ error: 'NotServing', message }) };
}

function run(
  services: SqsServices,
  action: ActionName,
  ctx: RequestContext,
  input: unknown,
): Promise<unknown> {
  return Promise.resolve((actions[action] as Action<ActionName>)(services, ctx, input as never));
}

/** A ReceiveMessage's own WaitTimeSeconds, or the longest a queue's default can be (20 s). */
function waitSeconds(input: unknown): number {
  const w = (input as { WaitTimeSeconds?: unknown } | undefined)?.WaitTimeSeconds;
  return typeof w === 'number' && w >= 0 && w <= 20 ? w : 20;
}

/** A member's address (`host:port`, `[v6]:port`, or a Unix socket's path) as the channel takes it. */
export function rpcAddress(address: string): RpcAddress {
  if (address.startsWith('/')) return { path: address };
  const colon = address.lastIndexOf(':');
  return {
    host: address.slice(0, colon).replace(/^\[(.*)\]$/, '$1'),
    port: Number(address.slice(colon + 1)),
  };
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
