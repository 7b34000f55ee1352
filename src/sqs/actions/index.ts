import type { ActionName } from '../model.generated.js';
import type { Action } from '../service.js';
import { changeMessageVisibility } from './change-message-visibility.js';
import { changeMessageVisibilityBatch } from './change-message-visibility-batch.js';
import { createQueue } from './create-queue.js';
import { deleteMessage } from './delete-message.js';
import { deleteMessageBatch } from './delete-message-batch.js';
import { deleteQueue } from './delete-queue.js';
import { getQueueAttributes } from './get-queue-attributes.js';
import { getQueueUrl } from './get-queue-url.js';
import { listQueues } from './list-queues.js';
import { purgeQueue } from './purge-queue.js';
import { receiveMessage } from './receive-message.js';
import { sendMessage } from './send-message.js';
import { sendMessageBatch } from './send-message-batch.js';
import { setQueueAttributes } from './set-queue-attributes.js';
import { listDeadLetterSourceQueues } from './list-dead-letter-source-queues.js';
import { cancelMessageMoveTask, listMessageMoveTasks, startMessageMoveTask } from './move-tasks.js';
import { addPermission, removePermission } from './permissions.js';
import { listQueueTags, tagQueue, untagQueue } from './tags.js';

/**
 * The action table: every action of the API model (its type makes it total, so one missing fails
 * the build); test/unit/compatibility-doc.test.ts keeps docs/compatibility.md in step.
 */
export const actions: { readonly [A in ActionName]: Action<A> } = {
  AddPermission: addPermission,
  CancelMessageMoveTask: cancelMessageMoveTask,
  ChangeMessageVisibility: changeMessageVisibility,
  ChangeMessageVisibilityBatch: changeMessageVisibilityBatch,
  CreateQueue: createQueue,
  DeleteMessage: deleteMessage,
  DeleteMessageBatch: deleteMessageBatch,
  DeleteQueue: deleteQueue,
  GetQueueAttributes: getQueueAttributes,
  GetQueueUrl: getQueueUrl,
  ListDeadLetterSourceQueues: listDeadLetterSourceQueues,
  ListMessageMoveTasks: listMessageMoveTasks,
  ListQueues: listQueues,
  ListQueueTags: listQueueTags,
  PurgeQueue: purgeQueue,
  ReceiveMessage: receiveMessage,
  RemovePermission: removePermission,
  SendMessage: sendMessage,
  SendMessageBatch: sendMessageBatch,
  SetQueueAttributes: setQueueAttributes,
  StartMessageMoveTask: startMessageMoveTask,
  TagQueue: tagQueue,
  UntagQueue: untagQueue,
};
