/**
 * One subscribed connection per instance for the pub/sub of src/owners/ (a subscribed connection
 * can do nothing else, and membership, the shard map and the coordinator each listen to a
 * channel). Pub/sub is a nudge, never the only way news arrives: a message published while the
 * connection was down is lost, so every listener also polls, and `onReady` tells them that the
 * connection is (again) subscribed, so they can read what they may have missed at once.
 *
 * ioredis subscribes again by itself after a reconnect; we do it again on 'ready' anyway, as
 * src/ha/lock.ts's ReleaseListener does, since a Cluster client may move its subscriber to another
 * node. PUBLISH reaches every node of a Cluster, so any node's subscriber hears it.
 */
import type { RedisClient } from '../persistence/redis.js';

export type ChannelListener = (message: string) => void;

export class Channels {
  private readonly listeners = new Map<string, Set<ChannelListener>>();
  private readonly readyListeners = new Set<() => void>();
  private closed = false;

  constructor(private readonly sub: RedisClient) {
    sub.on('error', () => undefined);
    sub.on('message', (channel: string, message: string) => {
      if (this.closed) return;
      for (const l of this.listeners.get(channel) ?? []) l(message);
    });
    sub.on('ready', () => void this.subscribeAll());
  }

  /** Calls `fn` with every message on `channel` from now on; the returned function stops it. */
  listen(channel: string, fn: ChannelListener): () => void {
    let set = this.listeners.get(channel);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(channel, set);
      if (this.sub.status === 'ready') void this.subscribe([channel]);
    }
    set.add(fn);
    return () => set.delete(fn);
  }

  /** Calls `fn` each time the connection is subscribed to every channel (the first time too). */
  onReady(fn: () => void): () => void {
    this.readyListeners.add(fn);
    return () => this.readyListeners.delete(fn);
  }

  /** Connects, unless the connection is connecting or connected already. */
  start(): void {
    if (this.sub.status === 'wait' || this.sub.status === 'end') this.sub.connect().catch(() => undefined);
  }

  close(): void {
    this.closed = true;
    this.sub.disconnect();
  }

  private async subscribeAll(): Promise<void> {
    if (await this.subscribe([...this.listeners.keys()])) {
      for (const l of this.readyListeners) l();
    }
  }

  private async subscribe(channels: string[]): Promise<boolean> {
    if (channels.length === 0 || this.closed) return !this.closed;
    try {
      await this.sub.subscribe(...channels);
      return true;
    } catch {
      // Reconnecting: 'ready' comes again and we subscribe then.
      return false;
    }
  }
}
