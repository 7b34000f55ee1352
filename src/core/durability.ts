/**
 * What a 200 promises, and whether this instance may answer at all: all the planes know of
 * persistence and leadership. Three implementations, one per way of running
 * (docs/architecture.md, "Durability: what a 200 means"):
 *
 * - {@link memoryOnly}: a change is durable once it is in this process' memory; always serving.
 * - `Persistence` (src/persistence/persistence.ts): a change is durable once Redis has it (the
 *   writer's group commit); serving while the store in memory is the one loaded from Redis.
 * - `ActivePassive` (src/ha/active.ts): as Persistence, for the term this instance leads; serving
 *   only while it leads, and a commit also fails when the term ended before the reply.
 *
 * It lives in core, with no I/O of its own, because every layer that implements it or uses it
 * (persistence, ha, http) may import core and nothing else in common.
 */
export interface Durability {
  /** Memory-only has nothing to gate or wait for: the data plane skips both (the hot path). */
  readonly kind: 'memory' | 'redis' | 'active-passive';
  /** False while this instance must not answer (loading, diverged, not the leader): 503. */
  readonly serving: boolean;
  /**
   * Resolves once every change made so far is durable (of one shard, when given: a request that
   * named one queue waits for its shard's changes only); a request is answered only after it.
   * Rejects with the error the client gets instead of a 200 (an SqsError, ServiceUnavailable).
   */
  commit(shard?: number): Promise<void>;
}

export const memoryOnly: Durability = {
  kind: 'memory',
  serving: true,
  commit: () => Promise.resolve(),
};
