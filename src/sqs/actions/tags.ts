import { MAX_TAG_KEY_LENGTH, MAX_TAG_VALUE_LENGTH, MAX_TAGS } from '../../core/limits.js';
import { invalidParameter, SqsError } from '../errors.js';
import { resolveQueue, type Action } from '../service.js';

/** AWS's tag rules: keys 1-128, values 0-256 characters, at most 50 per queue. */
export function checkTags(tags: Readonly<Record<string, string>>): void {
  for (const [k, v] of Object.entries(tags)) {
    if (k.length === 0 || k.length > MAX_TAG_KEY_LENGTH)
      throw invalidParameter('Tag.Key', k, `Tag keys must be 1 to ${MAX_TAG_KEY_LENGTH} characters.`);
    if (v.length > MAX_TAG_VALUE_LENGTH)
      throw invalidParameter(
        'Tag.Value',
        v,
        `Tag values must be at most ${MAX_TAG_VALUE_LENGTH} characters.`,
      );
  }
  if (Object.keys(tags).length > MAX_TAGS) {
    throw new SqsError('InvalidParameterValue', `Too many tags: a queue can have at most ${MAX_TAGS}.`);
  }
}

export const tagQueue: Action<'TagQueue'> = (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  if (Object.keys(input.Tags).length === 0) {
    throw new SqsError('InvalidParameterValue', 'The request must contain at least one tag.');
  }
  checkTags({ ...q.tags, ...input.Tags });
  q.setTags(input.Tags);
  return {};
};

export const untagQueue: Action<'UntagQueue'> = (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  if (input.TagKeys.length === 0) {
    throw new SqsError('InvalidParameterValue', 'The request must contain at least one tag key.');
  }
  q.removeTags(input.TagKeys);
  return {};
};

export const listQueueTags: Action<'ListQueueTags'> = (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  return Object.keys(q.tags).length > 0 ? { Tags: { ...q.tags } } : {};
};
