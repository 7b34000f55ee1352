import { systemClock, type Clock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { servicesFor, type SqsServices } from '../../src/sqs/service.js';

/** The data plane's services over a new, empty in-memory store, on the system clock unless told. */
export function memoryServices(
  options?: ConstructorParameters<typeof QueueStore>[1],
  clock: Clock = systemClock,
): SqsServices {
  return servicesFor(new QueueStore(clock, options), clock);
}
