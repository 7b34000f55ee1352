import { systemClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { servicesFor, type SqsServices } from '../../src/sqs/service.js';

/** The data plane's services over a new, empty in-memory store on the system clock. */
export function memoryServices(options?: ConstructorParameters<typeof QueueStore>[1]): SqsServices {
  return servicesFor(new QueueStore(systemClock, options), systemClock);
}
