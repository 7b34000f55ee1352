import { resolveQueue, type Action } from '../service.js';
import { prepareSend } from './send.js';

export const sendMessage: Action<'SendMessage'> = (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  const { message } = prepareSend(q, ctx, input);
  const m = q.send(message, svc.clock.now());
  const out: {
    MessageId: string;
    MD5OfMessageBody: string;
    MD5OfMessageAttributes?: string;
    MD5OfMessageSystemAttributes?: string;
  } = {
    MD5OfMessageBody: m.md5OfBody,
    MessageId: m.id,
  };
  if (m.md5OfAttributes !== undefined) out.MD5OfMessageAttributes = m.md5OfAttributes;
  if (m.md5OfSystemAttributes !== undefined) out.MD5OfMessageSystemAttributes = m.md5OfSystemAttributes;
  return out;
};
