/**
 * The store this process serves, and its replacement. Persistence loads a fresh store from Redis
 * at start, after a divergence and at each leader term, and drops it when a term ends; `services`
 * reads the current one through getters on every request, so a swap is one assignment and no
 * request ever sees half of it. Every store served, new or loaded, gets the seed (`--config`,
 * src/seed.ts) applied, so that after a restart or a failover what the file names exists again.
 */
import type { Clock } from '../core/clock.js';
import { PURGE_INTERVAL_MS } from '../core/limits.js';
import { QueueStore, type StoreOptions } from '../core/store.js';
import type { LogSink } from '../log.js';
import { applySeed, SeedError, type Seed } from '../seed.js';
import { servicesFor, type SqsServices } from '../sqs/service.js';

export interface ServedStoreOptions {
  readonly clock: Clock;
  readonly queueDeletedRecently: boolean;
  readonly purgeCooldown: boolean;
  readonly maxMemory: number;
  readonly seed: Seed | undefined;
  readonly log: LogSink;
  /** A send was refused by the memory budget of `store`. */
  readonly onRefused: (
    store: QueueStore,
    ...refusal: Parameters<NonNullable<StoreOptions['onRefused']>>
  ) => void;
}

export class ServedStore {
  /** What the planes are given: always the current store, its long polls and its move tasks. */
  readonly services: SqsServices;
  private current: SqsServices;

  constructor(private readonly opts: ServedStoreOptions) {
    // At start (an empty store) a seed that cannot be applied stops the process.
    this.current = this.serve(this.newStore(), true);
    const served = (): SqsServices => this.current;
    this.services = {
      get store() {
        return served().store;
      },
      get poller() {
        return served().poller;
      },
      get mover() {
        return served().mover;
      },
      clock: opts.clock,
    };
  }

  /** An empty store with the flags' rules and budget. */
  readonly newStore = (): QueueStore => {
    const store: QueueStore = new QueueStore(this.opts.clock, {
      deletedRecentlyMs: this.opts.queueDeletedRecently ? 60_000 : 0,
      purgeCooldownMs: this.opts.purgeCooldown ? PURGE_INTERVAL_MS : 0,
      maxMemory: this.opts.maxMemory,
      onRefused: (accountId, scope) => this.opts.onRefused(store, accountId, scope),
    });
    return store;
  };

  /** Serves `store` from now on; waiting long polls of the store being replaced are answered (empty). */
  readonly replace = (store: QueueStore): void => {
    this.close();
    this.current = this.serve(store, false);
  };

  /** Answers waiting long polls (with no messages) and stops the move tasks of the current store. */
  close(): void {
    this.current.poller.closeAll();
    this.current.mover.close();
  }

  private serve(store: QueueStore, first: boolean): SqsServices {
    if (this.opts.seed !== undefined) {
      try {
        applySeed(store, this.opts.seed, this.opts.log);
      } catch (e) {
        // Later, against loaded state, a conflict is logged and the state stands.
        if (first || !(e instanceof SeedError)) throw e;
        this.opts.log.error({ error: e.message }, '--config could not be applied to the loaded state');
      }
    }
    // The runner picks up move tasks that were RUNNING in a store loaded from Redis.
    return servicesFor(store, this.opts.clock);
  }
}
