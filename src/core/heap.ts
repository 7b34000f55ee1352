/** What an IndexedHeap holds: it keeps each item's position so removal is O(log n), not a scan. */
export interface HeapItem {
  heapKey: number;
  heapIndex: number;
  /** Orders items of equal heapKey (lower first); items without one count as 0. */
  heapTie?: number;
}

function before(a: HeapItem, b: HeapItem): boolean {
  return a.heapKey < b.heapKey || (a.heapKey === b.heapKey && (a.heapTie ?? 0) < (b.heapTie ?? 0));
}

// Frozen, so a slip that pushed onto the shared empty array would throw instead of leaking items.
const NO_ITEMS = Object.freeze([]) as unknown as never[];

/**
 * A binary min-heap on `heapKey` whose items know their own index. Every queue has a few and most
 * stay empty, so the array is made at the first push.
 */
export class IndexedHeap<T extends HeapItem> {
  private items: T[] = NO_ITEMS;

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    if (this.items === NO_ITEMS) this.items = [];
    item.heapIndex = this.items.length;
    this.items.push(item);
    this.up(item.heapIndex);
  }

  pop(): T | undefined {
    const top = this.items[0];
    if (top !== undefined) this.removeAt(0);
    return top;
  }

  remove(item: T): void {
    const i = item.heapIndex;
    if (i >= 0 && this.items[i] === item) this.removeAt(i);
  }

  clear(): void {
    for (const item of this.items) item.heapIndex = -1;
    this.items = NO_ITEMS;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    yield* this.items;
  }

  private removeAt(i: number): void {
    const items = this.items;
    const removed = items[i] as T;
    const last = items.pop() as T;
    removed.heapIndex = -1;
    if (i < items.length) {
      items[i] = last;
      last.heapIndex = i;
      this.down(i);
      this.up(last.heapIndex);
    }
  }

  private up(i: number): void {
    const items = this.items;
    const item = items[i] as T;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = items[p] as T;
      if (!before(item, parent)) break;
      items[i] = parent;
      parent.heapIndex = i;
      i = p;
    }
    items[i] = item;
    item.heapIndex = i;
  }

  private down(i: number): void {
    const items = this.items;
    const n = items.length;
    const item = items[i] as T;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let c = l;
      if (r < n && before(items[r] as T, items[l] as T)) c = r;
      const child = items[c] as T;
      if (!before(child, item)) break;
      items[i] = child;
      child.heapIndex = i;
      i = c;
    }
    items[i] = item;
    item.heapIndex = i;
  }
}
