import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IndexedHeap, type HeapItem } from '../../src/core/heap.js';
import { Rng } from '../support/rng.js';

interface Item extends HeapItem {
  readonly id: number;
}

let nextId = 0;
function item(heapKey: number): Item {
  return { id: nextId++, heapKey, heapIndex: -1 };
}

/** A heap holding an item for each key, pushed in that order. */
function heapOf(...keys: number[]): { heap: IndexedHeap<Item>; items: Item[] } {
  const heap = new IndexedHeap<Item>();
  const items = keys.map(item);
  for (const it of items) heap.push(it);
  return { heap, items };
}

/** The keys popped until the heap is empty. */
function drain(heap: IndexedHeap<Item>): number[] {
  const keys: number[] = [];
  for (let it = heap.pop(); it !== undefined; it = heap.pop()) keys.push(it.heapKey);
  return keys;
}

/** Every item sits where its heapIndex says, and no child is smaller than its parent. */
function assertHeapInvariants(heap: IndexedHeap<Item>, context: string): void {
  const items = [...heap];
  items.forEach((it, i) => {
    assert.equal(it.heapIndex, i, `${context}: item ${it.id} knows index ${it.heapIndex}, sits at ${i}`);
    if (i > 0) {
      const parent = items[(i - 1) >> 1] as Item;
      assert.ok(parent.heapKey <= it.heapKey, `${context}: parent ${parent.heapKey} > child ${it.heapKey}`);
    }
  });
}

void test('Given an empty heap, when popped or peeked, then both give undefined and the size stays 0', () => {
  const heap = new IndexedHeap<Item>();
  assert.equal(heap.peek(), undefined);
  assert.equal(heap.pop(), undefined);
  assert.equal(heap.size, 0);
});

void test('Given items pushed in any order, when popped until empty, then they come out by ascending key', () => {
  const { heap } = heapOf(5, 3, 9, 1, 7, 3, 0, 8);
  assert.deepEqual(drain(heap), [0, 1, 3, 3, 5, 7, 8, 9]);
});

void test('Given an item in the middle of the heap, when removed, then it leaves with heapIndex -1 and the rest stay ordered', () => {
  const { heap, items } = heapOf(4, 2, 6, 1, 5, 3);
  const victim = items[4] as Item; // key 5
  heap.remove(victim);
  assert.equal(victim.heapIndex, -1);
  assert.equal(heap.size, 5);
  assertHeapInvariants(heap, 'after remove');
  assert.deepEqual(drain(heap), [1, 2, 3, 4, 6]);
});

void test('Given an item already removed, when removed again, then the heap is unchanged', () => {
  const { heap, items } = heapOf(1, 2);
  const [a, b] = items as [Item, Item];
  heap.remove(a);
  heap.remove(a);
  assert.equal(heap.size, 1);
  assert.equal(heap.peek(), b);
});

void test('Given an item of another heap at the same index, when removed from this heap, then this heap is unchanged', () => {
  const { heap, items } = heapOf(1);
  const { items: others } = heapOf(0);
  const [mine, foreign] = [...items, ...others] as [Item, Item];
  heap.remove(foreign);
  assert.equal(heap.size, 1);
  assert.equal(heap.peek(), mine);
  assert.equal(foreign.heapIndex, 0);
});

void test('Given a filled heap, when cleared, then it is empty and every former item has heapIndex -1', () => {
  const { heap, items } = heapOf(3, 1, 2);
  heap.clear();
  assert.equal(heap.size, 0);
  assert.equal(heap.peek(), undefined);
  for (const it of items) assert.equal(it.heapIndex, -1);
});

void test('Given random pushes, pops and removals, when compared with a sorted-array model, then every peek, pop and size agrees', () => {
  for (let seed = 1; seed <= 40; seed++) {
    const rng = new Rng(seed);
    const rand = (): number => rng.next();
    const heap = new IndexedHeap<Item>();
    // The model: the items in the heap, kept sorted by key (ties in insertion order).
    let model: Item[] = [];
    for (let step = 0; step < 400; step++) {
      const ctx = `seed ${seed}, step ${step}`;
      const r = rand();
      if (r < 0.5) {
        // Few distinct keys, so ties are common.
        const it = item(Math.floor(rand() * 50));
        heap.push(it);
        const at = model.findIndex((m) => m.heapKey > it.heapKey);
        if (at < 0) model.push(it);
        else model.splice(at, 0, it);
      } else if (r < 0.75) {
        const popped = heap.pop();
        const expected = model[0];
        if (expected === undefined) {
          assert.equal(popped, undefined, ctx);
        } else {
          assert.ok(popped !== undefined, ctx);
          // Among equal keys the heap may pick any: compare keys, then drop that very item.
          assert.equal(popped.heapKey, expected.heapKey, ctx);
          assert.equal(popped.heapIndex, -1, ctx);
          const i = model.indexOf(popped);
          assert.ok(i >= 0, `${ctx}: popped an item the model does not hold`);
          model.splice(i, 1);
        }
      } else if (model.length > 0) {
        const victim = model[Math.floor(rand() * model.length)] as Item;
        heap.remove(victim);
        assert.equal(victim.heapIndex, -1, ctx);
        model = model.filter((m) => m !== victim);
        // Removing it a second time must change nothing.
        heap.remove(victim);
      }
      assert.equal(heap.size, model.length, ctx);
      assert.equal(heap.peek()?.heapKey, model[0]?.heapKey, ctx);
      assertHeapInvariants(heap, ctx);
    }
    // Draining gives the model's keys in order.
    const drained: number[] = [];
    for (let it = heap.pop(); it !== undefined; it = heap.pop()) drained.push(it.heapKey);
    assert.deepEqual(
      drained,
      model.map((m) => m.heapKey),
      `seed ${seed}: drain`,
    );
  }
});
