import { systemClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { LongPoller } from '../../src/sqs/longpoll.js';
import { MoveTaskRunner } from '../../src/sqs/movetasks.js';
import type { SqsServices } from '../../src/sqs/service.js';

/** The data plane's services over a new, empty in-memory store on the system clock. */
export function memoryServices(options?: ConstructorParameters<typeof QueueStore>[1]): SqsServices {
  const store = new QueueStore(systemClock, options);
  return {
    store,
    clock: systemClock,
    poller: new LongPoller(store, systemClock),
    mover: new MoveTaskRunner(store, systemClock),
  };
}
