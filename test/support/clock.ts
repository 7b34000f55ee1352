/**
 * Resolves once Date.now() is past `ms`: the server (one clock on one machine) then sees the next
 * request in a later millisecond than a reply already received, for checks of the order of events
 * it tells apart by their millisecond. Bounded by the clock itself: one or two milliseconds.
 */
export async function pastMillisecond(ms: number): Promise<void> {
  while (Date.now() <= ms) await new Promise((resolve) => setTimeout(resolve, 1));
}
