/**
 * The failover tests' checker (test/failover/workload.ts) decides what counts as a resurrected
 * message; a checker that miscounts either hides lost deletes or fails on correct behaviour.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Workload } from '../failover/workload.js';

/** A checker that logged one acknowledged send of body b-1. */
function checker(): Workload {
  // Never started: no request is sent; only its logs and report() are used.
  const w = new Workload('http://127.0.0.1:1', 'http://127.0.0.1:1/000000000000/q', 't');
  w.attempted.add('b-1');
  w.acked.set('b-1', 'sdk');
  return w;
}

test('Given a message received again after a 200 DeleteMessage of it, Then the checker reports it resurrected', () => {
  const w = checker();
  w.recordReceived(100, [{ MessageId: 'id-1', Body: 'b-1' }]);
  w.recordDeleted('id-1', 150);
  w.recordReceived(200, [{ MessageId: 'id-1', Body: 'b-1' }]);
  assert.deepEqual(w.report().resurrected, ['b-1']);
  w.close();
});

test('Given a retried send that stored the body twice, When one copy is deleted and the other received later, Then nothing is resurrected and the body counts as duplicated', () => {
  const w = checker();
  w.recordReceived(100, [{ MessageId: 'id-1', Body: 'b-1' }]);
  w.recordDeleted('id-1', 150);
  w.recordReceived(200, [{ MessageId: 'id-2', Body: 'b-1' }]);
  w.recordDeleted('id-2', 250);
  const r = w.report();
  assert.deepEqual(r.resurrected, []);
  assert.equal(r.duplicated, 1);
  assert.deepEqual(r.lost, []);
  w.close();
});

test('Given a receive that started before the 200 DeleteMessage, Then it does not count as resurrected', () => {
  const w = checker();
  w.recordReceived(100, [{ MessageId: 'id-1', Body: 'b-1' }]);
  // A second receive that started before the delete was answered (its visibility had expired).
  w.recordReceived(140, [{ MessageId: 'id-1', Body: 'b-1' }]);
  w.recordDeleted('id-1', 150);
  assert.deepEqual(w.report().resurrected, []);
  w.close();
});
