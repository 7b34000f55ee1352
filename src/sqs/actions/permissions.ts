// AddPermission and RemovePermission: edits of the queue's Policy attribute (core/policy.ts).
import { addPermission as grant, removePermission as revoke } from '../../core/policy.js';
import { invalidParameter, missingParameter } from '../errors.js';
import { resolveQueue, toSqsError, type Action } from '../service.js';

const LABEL = /^[A-Za-z0-9_-]{1,80}$/;
const ACCOUNT_ID = /^\d{12}$/;

/** Actions a queue owner can share (AWS: the others are the owner's alone). */
const SHAREABLE = new Set([
  '*',
  'ChangeMessageVisibility',
  'DeleteMessage',
  'GetQueueAttributes',
  'GetQueueUrl',
  'ListDeadLetterSourceQueues',
  'PurgeQueue',
  'ReceiveMessage',
  'SendMessage',
]);

const OWNER_ONLY = new Set([
  'AddPermission',
  'CancelMessageMoveTask',
  'ChangeMessageVisibilityBatch',
  'CreateQueue',
  'DeleteMessageBatch',
  'DeleteQueue',
  'ListMessageMoveTasks',
  'ListQueueTags',
  'ListQueues',
  'RemovePermission',
  'SendMessageBatch',
  'SetQueueAttributes',
  'StartMessageMoveTask',
  'TagQueue',
  'UntagQueue',
]);

export const addPermission: Action<'AddPermission'> = (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  if (!LABEL.test(input.Label)) {
    throw invalidParameter(
      'Label',
      input.Label,
      'Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length.',
    );
  }
  if (input.Actions.length === 0) throw missingParameter('ActionName');
  if (input.AWSAccountIds.length === 0) throw invalidParameter('PrincipalId', '[]', 'Unable to verify.');
  for (const a of input.AWSAccountIds) {
    if (!ACCOUNT_ID.test(a)) throw invalidParameter('PrincipalId', a, 'Unable to verify.');
  }
  for (const a of input.Actions) {
    if (SHAREABLE.has(a)) continue;
    throw invalidParameter(
      'ActionName',
      `SQS:${a}`,
      OWNER_ONLY.has(a)
        ? 'Only the queue owner is allowed to invoke this action.'
        : 'Please refer to the appropriate WSDL for a list of valid actions.',
    );
  }
  try {
    const policy = grant(q.attributes.Policy, q.arn, input.Label, input.AWSAccountIds, input.Actions);
    q.setAttributes({ Policy: policy }, svc.clock.now());
  } catch (e) {
    throw toSqsError(e);
  }
  return {};
};

export const removePermission: Action<'RemovePermission'> = (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  try {
    q.setAttributes({ Policy: revoke(q.attributes.Policy, input.Label) }, svc.clock.now());
  } catch (e) {
    throw toSqsError(e);
  }
  return {};
};
