/**
 * Query protocol (form POST `Action=...&Version=2012-11-05`, XML replies) through Debian's aws-cli
 * 2.9 at /usr/bin/aws: the standard-queue data-plane scenarios of
 * test/support/scenarios-data-plane.ts (also run over the SDK by sdk.test.ts), with the error code
 * the CLI prints and the HTTP status (read from `--debug`); and what only the CLI or Query shows.
 * The `aws` first on PATH may be a newer one that speaks JSON, so the full path is used
 * (test/support/requires.ts checks for it).
 */
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { AWS_CLI } from '../support/clients.js';
import { md5OfAttributes, type AttributeValue } from '../support/md5.js';
import { dataPlaneScenarios } from '../support/scenarios-data-plane.js';
import { awsCli, awsCliOk, uniqueName } from '../support/server.js';
import { queryErrorCode, queryGet, queryOk, queryPost, xmlAttributes, xmlText } from '../support/wire.js';
import { testsRequiring } from '../support/requires.js';
import { expectCliError } from '../support/assertions.js';

const tests = testsRequiring('aws');
const { test } = tests;
const sqs = dataPlaneScenarios(tests, AWS_CLI);

const aws = (args: string[]): Promise<Record<string, unknown>> => awsCliOk(sqs.server.url, args);

const awsError = (args: string[], code: string, status: number, message?: string): Promise<void> =>
  expectCliError(sqs.server.url, args, code, status, message);

const createQueue = (prefix: string): Promise<string> => sqs.createQueue(uniqueName(prefix));

test('Debian aws-cli speaks the Query protocol (form-encoded Action=..., not X-Amz-Target)', async () => {
  const res = await awsCli(sqs.server.url, ['list-queues'], { debug: true });
  assert.equal(res.code, 0, res.stderr.slice(-2000));
  assert.match(res.stdout + res.stderr, /aws-cli\/2\.9\./, 'aws-cli 2.9');
  assert.match(res.stderr, /'Action': 'ListQueues'/, 'the request body is Query parameters');
  assert.doesNotMatch(res.stderr, /X-Amz-Target/i, 'no JSON-protocol target header');
  assert.equal(res.status, 200);
});

describe('Query protocol (aws-cli): what only the CLI or Query shows', () => {
  test('Given no such queue, When the raw Query request is sent, Then an XML ErrorResponse with Type Sender and a RequestId', async () => {
    const res = await queryPost(sqs.server.url, {
      Action: 'GetQueueUrl',
      QueueName: uniqueName('cli-raw-nosuch'),
    });
    assert.equal(res.status, 400);
    assert.match(res.headers.get('content-type') ?? '', /xml/);
    assert.equal(queryErrorCode(res.text), 'AWS.SimpleQueueService.NonExistentQueue');
    assert.equal(xmlText(res.text, 'Type'), 'Sender');
    assert.match(res.text, /<ErrorResponse xmlns="http:\/\/queue\.amazonaws\.com\/doc\/2012-11-05\/">/);
    assert.ok(xmlText(res.text, 'RequestId'), 'RequestId');
  });

  test("Query: GetQueueUrl works at a queue's URL: Given queues q and other, When GetQueueUrl for either is sent to q's URL by GET and by form POST (raw: no client sends it there), Then 200 with the named queue's URL; CreateQueue and ListQueues there stay refused", async () => {
    const q = await createQueue('cli-at-url');
    const other = await createQueue('cli-at-url-other');
    const path = new URL(q).pathname;
    const account = path.split('/')[1] ?? '';
    for (const named of [q, other]) {
      const params = {
        Action: 'GetQueueUrl',
        QueueName: named.slice(named.lastIndexOf('/') + 1),
        QueueOwnerAWSAccountId: account,
      };
      for (const res of [
        await queryGet(sqs.server.url, path, params),
        await queryPost(sqs.server.url, params, { path }),
      ]) {
        assert.equal(res.status, 200, res.text);
        assert.equal(xmlText(res.text, 'QueueUrl'), named);
      }
    }
    for (const action of ['CreateQueue', 'ListQueues']) {
      const res = await queryGet(sqs.server.url, path, { Action: action, QueueName: uniqueName('cli-no') });
      assert.equal(res.status, 400, res.text);
      assert.equal(queryErrorCode(res.text), 'InvalidAction');
      assert.equal(xmlText(res.text, 'Message'), `The action ${action} is not valid for this endpoint.`);
    }
  });

  test('Given 5 queues under a prefix, When list-queues pages with --max-results 2, Then NextToken walks all 5', async () => {
    const prefix = uniqueName('cli-page');
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      made.push(
        xmlText(
          await queryOk(sqs.server.url, { Action: 'CreateQueue', QueueName: `${prefix}-${i}` }),
          'QueueUrl',
        ) ?? '',
      );
    }
    await createQueue('cli-other');
    const all = await aws(['list-queues', '--queue-name-prefix', prefix]);
    assert.deepEqual([...(all.QueueUrls as string[])].sort(), [...made].sort());

    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const args = ['list-queues', '--no-paginate', '--queue-name-prefix', prefix, '--max-results', '2'];
      if (token !== undefined) args.push('--next-token', token);
      const out = await aws(args);
      const urls = (out.QueueUrls ?? []) as string[];
      assert.ok(urls.length <= 2, `at most 2 per page, got ${urls.length}`);
      seen.push(...urls);
      token = out.NextToken as string | undefined;
      pages++;
    } while (token !== undefined && pages < 10);
    assert.equal(pages, 3);
    assert.deepEqual([...seen].sort(), [...made].sort());
  });
});

describe("Query protocol (aws-cli): AWS's recorded answers in validation corners", () => {
  test('Given an empty body, an empty String value, a Unicode attribute name and a missing queue, When sent, Then the codes and messages AWS gives over Query', async () => {
    const url = await createQueue('cli-texts');
    const send = (body: string, attributes?: Record<string, AttributeValue>): string[] => [
      'send-message',
      '--queue-url',
      url,
      '--message-body',
      body,
      ...(attributes === undefined ? [] : ['--message-attributes', JSON.stringify(attributes)]),
    ];
    await awsError(send(''), 'MissingParameter', 400, 'The request must contain the parameter MessageBody.');
    await awsError(
      send('b', { s: { DataType: 'String', StringValue: '' } }),
      'InvalidParameterValue',
      400,
      "Message (user) attribute 's' must contain a non-empty value of type 'String'.",
    );
    const unicode = { 'attr.1øßä': { DataType: 'String', StringValue: 'v' } };
    assert.equal((await aws(send('b', unicode))).MD5OfMessageAttributes, md5OfAttributes(unicode));
    await awsError(
      ['get-queue-url', '--queue-name', uniqueName('cli-nosuch')],
      'AWS.SimpleQueueService.NonExistentQueue',
      400,
      'The specified queue does not exist for this wsdl version.',
    );
  });

  test('SetQueueAttributes FifoQueue on a FIFO queue: Given FifoQueue=false for a standard queue and FifoQueue on a FIFO queue, When created or set, Then InvalidAttributeName in AWS wording; true on the FIFO queue is accepted, false InvalidAttributeValue', async () => {
    await awsError(
      ['create-queue', '--queue-name', uniqueName('cli-std'), '--attributes', 'FifoQueue=false'],
      'InvalidAttributeName',
      400,
      'Unknown Attribute FifoQueue.',
    );
    const fifo = String(
      (
        await aws([
          'create-queue',
          '--queue-name',
          `${uniqueName('cli-type')}.fifo`,
          '--attributes',
          'FifoQueue=true',
        ])
      ).QueueUrl,
    );
    await aws(['set-queue-attributes', '--queue-url', fifo, '--attributes', 'FifoQueue=true']);
    await awsError(
      ['set-queue-attributes', '--queue-url', fifo, '--attributes', 'FifoQueue=false'],
      'InvalidAttributeValue',
      400,
      'Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported.',
    );
  });

  test('Given SSE-KMS on, When KmsMasterKeyId is set back to "" with SqsManagedSseEnabled=true, Then the queue shows no key and SSE-SQS again', async () => {
    const url = await createQueue('cli-kms');
    await aws(['set-queue-attributes', '--queue-url', url, '--attributes', 'KmsMasterKeyId=alias/aws/sqs']);
    await aws([
      'set-queue-attributes',
      '--queue-url',
      url,
      '--attributes',
      JSON.stringify({ KmsMasterKeyId: '', SqsManagedSseEnabled: 'true' }),
    ]);
    const attrs = xmlAttributes(
      await queryOk(sqs.server.url, {
        Action: 'GetQueueAttributes',
        QueueUrl: url,
        'AttributeName.1': 'All',
      }),
    );
    assert.equal(attrs.KmsMasterKeyId, undefined);
    assert.equal(attrs.KmsDataKeyReusePeriodSeconds, undefined);
    assert.equal(attrs.SqsManagedSseEnabled, 'true');
  });
});
