import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CoreError } from '../../src/core/errors.js';
import { addPermission, removePermission } from '../../src/core/policy.js';
import { policyDocument } from '../support/assertions.js';

/** AddPermission / RemovePermission as edits of the Policy document (core/policy.ts). */

const ARN = 'arn:aws:sqs:us-east-1:000000000000:q';

void test('Given no Policy, when a permission is added, then the Policy has AWS shape with one statement of one principal and one action', () => {
  const p = policyDocument(addPermission(undefined, ARN, 'send', ['111111111111'], ['SendMessage']));
  assert.equal(p.Version, '2008-10-17');
  assert.equal(p.Id, `${ARN}/SQSDefaultPolicy`);
  assert.deepEqual(p.Statement, [
    {
      Sid: 'send',
      Effect: 'Allow',
      Principal: { AWS: 'arn:aws:iam::111111111111:root' },
      Action: 'SQS:SendMessage',
      Resource: ARN,
    },
  ]);
});

void test('Given several accounts and actions, when added, then the principal and action are arrays', () => {
  const p = policyDocument(
    addPermission(undefined, ARN, 'l', ['111111111111', '222222222222'], ['SendMessage', 'ReceiveMessage']),
  );
  assert.deepEqual(p.Statement[0]?.Principal.AWS, [
    'arn:aws:iam::111111111111:root',
    'arn:aws:iam::222222222222:root',
  ]);
  assert.deepEqual(p.Statement[0]?.Action, ['SQS:SendMessage', 'SQS:ReceiveMessage']);
});

void test('Given a label in use, when added again, then InvalidParameterValue: Already exists', () => {
  const p = addPermission(undefined, ARN, 'l', ['111111111111'], ['SendMessage']);
  assert.throws(
    () => addPermission(p, ARN, 'l', ['111111111111'], ['ReceiveMessage']),
    (e: unknown) =>
      e instanceof CoreError && e.code === 'InvalidParameterValue' && /Already exists/.test(e.message),
  );
});

void test('Given eight actions, when added, then OverLimit (seven per statement)', () => {
  const actions = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
  assert.throws(
    () => addPermission(undefined, ARN, 'l', ['111111111111'], actions),
    (e: unknown) => e instanceof CoreError && e.code === 'OverLimit',
  );
});

void test('Given two permissions, when one is removed, then the other stays; when the last is removed, then there is no Policy', () => {
  let p = addPermission(undefined, ARN, 'one', ['111111111111'], ['SendMessage']);
  p = addPermission(p, ARN, 'two', ['111111111111'], ['ReceiveMessage']);
  p = removePermission(p, 'one');
  assert.deepEqual(
    policyDocument(p).Statement.map((s) => s.Sid),
    ['two'],
  );
  assert.equal(removePermission(p, 'two'), '');
});

void test("Given a label not in the Policy, when removed, then InvalidParameterValue: can't find label", () => {
  assert.throws(
    () => removePermission(undefined, 'nope'),
    (e: unknown) =>
      e instanceof CoreError && e.code === 'InvalidParameterValue' && /can't find label/.test(e.message),
  );
});

void test('Given a Policy set directly with one statement object, when a permission is added, then both statements are kept', () => {
  const own = JSON.stringify({ Version: '2012-10-17', Statement: { Sid: 'mine', Effect: 'Deny' } });
  const p = policyDocument(addPermission(own, ARN, 'added', ['111111111111'], ['SendMessage']));
  assert.deepEqual(
    p.Statement.map((s) => s.Sid),
    ['mine', 'added'],
  );
  assert.equal(p.Version, '2012-10-17');
});
