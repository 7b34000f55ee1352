import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';

import { pino } from 'pino';

import { createLogger, flushLogger, redactUrl, REDACTED } from '../../src/log.js';

/** A logger writing to memory; `last()` is the latest line, parsed. */
function memoryLogger(level: Parameters<typeof createLogger>[0] = 'trace') {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      callback();
    },
  });
  const logger = createLogger(level, sink);
  const last = (): Record<string, unknown> => JSON.parse(lines.at(-1) ?? 'null') as Record<string, unknown>;
  return { logger, lines, last };
}

void describe('createLogger: line shape', () => {
  void test('Given a log call, when written, then the line has service, pid, ISO time, level label and msg', () => {
    const { logger, last } = memoryLogger();
    logger.info('started');
    const line = last();
    assert.deepEqual(
      [line['service'], line['pid'], line['level'], line['msg']],
      ['shared-sqs', process.pid, 'info', 'started'],
    );
    assert.match(String(line['time']), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  void test('Given level warn, when logging at info, then nothing is written', () => {
    const { logger, lines } = memoryLogger('warn');
    logger.info('quiet');
    assert.equal(lines.length, 0);
  });
});

void describe('createLogger: redaction', () => {
  void test('Given a MessageBody in a logged object, when written, then it is redacted', () => {
    const { logger, lines } = memoryLogger();
    logger.info({ input: { QueueUrl: 'q', MessageBody: 'top secret body' } }, 'send');
    assert.doesNotMatch(lines.join(), /top secret body/);
    assert.match(lines.join(), /"MessageBody":"\[Redacted\]"/);
  });

  void test('Given bodies inside a batch array, when written, then each is redacted', () => {
    const { logger, lines } = memoryLogger();
    logger.info({
      Entries: [
        { Id: '1', MessageBody: 'secret one' },
        { Id: '2', MessageBody: 'secret two' },
      ],
    });
    assert.doesNotMatch(lines.join(), /secret one|secret two/);
  });

  void test('Given flattened Query parameters, when written, then body and attribute values are redacted', () => {
    const { logger, lines } = memoryLogger();
    logger.info({
      params: {
        'SendMessageBatchRequestEntry.1.MessageBody': 'flat body',
        'MessageAttribute.1.Value.StringValue': 'flat attribute',
        'MessageAttribute.1.Name': 'color',
      },
    });
    assert.doesNotMatch(lines.join(), /flat body|flat attribute/);
    assert.match(lines.join(), /color/);
  });

  void test('Given headers with Authorization in any case, when written, then it is redacted', () => {
    const { logger, lines } = memoryLogger();
    logger.info({
      headers: { Authorization: 'AWS4-HMAC-SHA256 Credential=AKID/sig', 'x-amz-security-token': 'tok' },
    });
    assert.doesNotMatch(lines.join(), /AKID|"tok"/);
  });

  void test('Given a received message Body deep in a reply, when written, then it is redacted', () => {
    const { logger, lines } = memoryLogger();
    logger.debug({ a: { b: { c: { Messages: [{ MessageId: 'm1', Body: 'deep body' }] } } } });
    assert.doesNotMatch(lines.join(), /deep body/);
    assert.match(lines.join(), /m1/);
  });

  void test('Given the admin token under adminToken, when written, then it is redacted', () => {
    const { logger, lines } = memoryLogger();
    logger.info({ config: { port: 1, adminToken: 'admin-s3cret' } });
    assert.doesNotMatch(lines.join(), /admin-s3cret/);
  });

  void test('Given an object with a secret, when logged, then the caller object is left unchanged', () => {
    const { logger } = memoryLogger();
    const input = { MessageBody: 'kept', nested: { body: 'kept too' } };
    logger.info({ input });
    assert.deepEqual(input, { MessageBody: 'kept', nested: { body: 'kept too' } });
  });

  void test('Given a cyclic object, when logged, then it is written without hanging', () => {
    const { logger, lines } = memoryLogger();
    const cyclic: Record<string, unknown> = { name: 'loop', body: 'cyclic body' };
    cyclic['self'] = cyclic;
    logger.info({ cyclic });
    assert.equal(lines.length, 1);
    assert.doesNotMatch(lines.join(), /cyclic body/);
  });

  void test('Given an ioredis-like error carrying command args, when logged as err, then the args are redacted', () => {
    const { logger, lines } = memoryLogger();
    const err = Object.assign(new Error('READONLY'), {
      command: { name: 'evalsha', args: ['sha', 'redis body'] },
    });
    logger.error({ err }, 'write failed');
    assert.doesNotMatch(lines.join(), /redis body/);
    assert.match(lines.join(), /READONLY/);
  });

  void test('Given an Error with a body property outside err, when logged, then the body is redacted and the message kept', () => {
    const { logger, lines } = memoryLogger();
    const error = Object.assign(new Error('parse failed'), { body: 'raw request body' });
    logger.warn({ error });
    assert.doesNotMatch(lines.join(), /raw request body/);
    assert.match(lines.join(), /parse failed/);
  });

  void test('Given a request whose url carries a MessageBody, when logged as req, then the value is redacted', () => {
    const { logger, last } = memoryLogger();
    logger.info({ req: { method: 'GET', url: '/q?Action=SendMessage&MessageBody=url+secret' } });
    assert.deepEqual(last()['req'], { method: 'GET', url: `/q?Action=SendMessage&MessageBody=${REDACTED}` });
  });

  void test('Given a child logger bound with a body, when it logs, then the binding is redacted', () => {
    const { logger, lines } = memoryLogger();
    logger.child({ body: 'bound body' }).info('x');
    assert.doesNotMatch(lines.join(), /bound body/);
  });
});

void describe('redactUrl', () => {
  void test('Given a presigned URL, when redacted, then the signature and token values are gone', () => {
    assert.equal(
      redactUrl('/?Action=ListQueues&X-Amz-Signature=abc&X-Amz-Security-Token=def&X-Amz-Date=1'),
      `/?Action=ListQueues&X-Amz-Signature=${REDACTED}&X-Amz-Security-Token=${REDACTED}&X-Amz-Date=1`,
    );
  });

  void test('Given a url without sensitive parameters, when redacted, then it is unchanged', () => {
    assert.equal(
      redactUrl('/123/q?Action=ReceiveMessage&WaitTimeSeconds=20'),
      '/123/q?Action=ReceiveMessage&WaitTimeSeconds=20',
    );
  });
});

void describe('flushLogger', () => {
  void test('Given lines written to an asynchronous file destination, when flushed, then they are all in the file', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'ssq-log-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'out.log');
    const logger = createLogger('info', pino.destination({ dest: file, sync: false }));
    for (let i = 0; i < 1000; i++) logger.info({ i }, 'line');
    await flushLogger(logger);
    assert.equal(readFileSync(file, 'utf8').split('\n').filter(Boolean).length, 1000);
  });
});
