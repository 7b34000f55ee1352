import { ManualClock, systemClock, type Clock } from '../../src/core/clock.js';
import type { Queue } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { servicesFor, type RequestContext, type SqsServices } from '../../src/sqs/service.js';

/** The data plane's services over a new, empty in-memory store, on the system clock unless told. */
export function memoryServices(
  options?: ConstructorParameters<typeof QueueStore>[1],
  clock: Clock = systemClock,
): SqsServices {
  return servicesFor(new QueueStore(clock, options), clock);
}

/**
 * A request's context as the data plane makes it for a caller of account 000000000000 in
 * us-east-1 (the sender is the account unless told), with `over` on top.
 */
export function requestContext(over: Partial<RequestContext> = {}): RequestContext {
  const accountId = over.accountId ?? '000000000000';
  return {
    requestId: 'r',
    accountId,
    region: 'us-east-1',
    defaultRegion: 'us-east-1',
    baseUrl: 'http://localhost:4100',
    senderId: accountId,
    onAbort: () => undefined,
    ...over,
  };
}

export interface ManualStore {
  readonly store: QueueStore;
  readonly clock: ManualClock;
  /** Creates a queue of account 000000000000 in us-east-1; a `.fifo` name makes it FIFO. */
  readonly create: (name: string, attrs?: Record<string, string>) => Queue;
}

/** An empty in-memory store on a ManualClock, for the core's own tests. */
export function manualStore(): ManualStore {
  const clock = new ManualClock();
  const store = new QueueStore(clock);
  const create = (name: string, attrs: Record<string, string> = {}): Queue =>
    store.create(
      { accountId: '000000000000', region: 'us-east-1', name },
      name.endsWith('.fifo') ? { FifoQueue: 'true', ...attrs } : attrs,
      {},
    ).queue;
  return { store, clock, create };
}
