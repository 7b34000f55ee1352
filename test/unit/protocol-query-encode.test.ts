import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { XMLParser } from 'fast-xml-parser';

import { encodeQueryError, encodeQueryJson, encodeQueryResult, escapeXml } from '../../src/protocol/query.js';
import { SqsError } from '../../src/sqs/errors.js';

// Golden documents are the AWS API reference's "Using AWS query protocol" sample responses, with
// the whitespace between elements removed, each starting with the `<?xml version="1.0"?>` line
// AWS sends (some samples omit it).
const DECL = '<?xml version="1.0"?>';
function compact(xml: string): string {
  const body = xml.replace(/>\s+</g, '><').trim();
  return body.startsWith(DECL) ? body : DECL + body;
}

const NS = 'http://queue.amazonaws.com/doc/2012-11-05/';

/** Byte-for-byte, since clients (aws-cli, older SDKs) parse the sample responses' exact layout. */
function assertEncodes(
  action: Parameters<typeof encodeQueryResult>[0],
  output: unknown,
  requestId: string,
  golden: string,
): void {
  assert.equal(encodeQueryResult(action, output, requestId), golden);
}

/** The <Message> an InvalidParameterValue error with `message` is encoded with. */
function assertErrorMessage(message: string, element: string): void {
  const encoded = encodeQueryError(new SqsError('InvalidParameterValue', message), 'r');
  assert.ok(encoded.body.includes(element), encoded.body);
}

describe('encodeQueryResult: golden documents', () => {
  test('Given the API reference ListQueues result, when encoding, then the sample response', () => {
    // API_ListQueues.html, query protocol sample response.
    const urls = [
      'MyQueue1648169377027',
      'MyQueue1648169549830',
      'MyQueue1648227401019',
      'MyQueue1648248132466',
      'MyQueue1649201932174',
      'MyQueue22',
      'MyQueue23',
      'MyQueue233',
      'MyQueue5',
      'MyQueueTest',
    ].map((name) => `https://sqs.us-east-1.amazonaws.com/177715257436/${name}`);
    const golden = compact(`
      <ListQueuesResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">
        <ListQueuesResult>
          <QueueUrl>https://sqs.us-east-1.amazonaws.com/177715257436/MyQueue1648169377027</QueueUrl>
          <QueueUrl>https://sqs.us-east-1.amazonaws.com/177715257436/MyQueue1648169549830</QueueUrl>
          <QueueUrl>https://sqs.us-east-1.amazonaws.com/177715257436/MyQueue1648227401019</QueueUrl>
          <QueueUrl>https://sqs.us-east-1.amazonaws.com/177715257436/MyQueue1648248132466</QueueUrl>
          <QueueUrl>https://sqs.us-east-1.amazonaws.com/177715257436/MyQueue1649201932174</QueueUrl>
          <QueueUrl>https://sqs.us-east-1.amazonaws.com/177715257436/MyQueue22</QueueUrl>
          <QueueUrl>https://sqs.us-east-1.amazonaws.com/177715257436/MyQueue23</QueueUrl>
          <QueueUrl>https://sqs.us-east-1.amazonaws.com/177715257436/MyQueue233</QueueUrl>
          <QueueUrl>https://sqs.us-east-1.amazonaws.com/177715257436/MyQueue5</QueueUrl>
          <QueueUrl>https://sqs.us-east-1.amazonaws.com/177715257436/MyQueueTest</QueueUrl>
        </ListQueuesResult>
        <ResponseMetadata>
          <RequestId>f525e5e2-86cd-5d1b-aee9-b992443254c0</RequestId>
        </ResponseMetadata>
      </ListQueuesResponse>`);
    assert.equal(
      encodeQueryResult('ListQueues', { QueueUrls: urls }, 'f525e5e2-86cd-5d1b-aee9-b992443254c0'),
      golden,
    );
  });

  test('Given the API reference ReceiveMessage result, when encoding, then the sample response', () => {
    // API_ReceiveMessage.html, query protocol sample response.
    const receiptHandle =
      'AQEBwPTK2fT2gy97H1iyU5in9umgT+Y4IOxyKGOzpZa8iemEqoR5/aPn0xAodmiVTzyrW7S4e8XwcWbB04XK92jIQzUpiGwRFA4Dl7r3GOw84Qzq/0OBQe/JaKxJw6iilafYA5fo1SJQo5Wg8xXbJHTVlJqgvTXd/UtlByLMhWMi0JMra1UUjYiPsGtYUpLVnOaRkYSPvzRnFFYUbcqCW9lm2Bi/jQKK6KNOZyCCfIh8TooE5i4P2L9N3o9yUHwMdv6p0nb5lKaGurQ2sJwwsyhXf38ZHnVN6pWwsqQnWKYuEXpxPofxd2lcLdgUurMpydS22DzCrkAaf6gmrdxbmCAoeQxE0sFf8alwX9yQmcOjny9aLGe7ro4Vl5o5KMr5hHM4vHEyhwi4wHeKM6MGX0vATA==';
    const golden = compact(`
      <ReceiveMessageResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">
        <ReceiveMessageResult>
          <Message>
            <MessageId>60e827c3-c8a5-410a-af0e-fb43746e70b1</MessageId>
            <ReceiptHandle>${receiptHandle}</ReceiptHandle>
            <MD5OfBody>0e024d309850c78cba5eabbeff7cae71</MD5OfBody>
            <Body>test message body 1</Body>
            <Attribute><Name>SenderId</Name><Value>AIDASSYFHUBOBT7F4XT75</Value></Attribute>
            <Attribute><Name>ApproximateFirstReceiveTimestamp</Name><Value>1677112300463</Value></Attribute>
            <Attribute><Name>ApproximateReceiveCount</Name><Value>1</Value></Attribute>
            <Attribute><Name>SentTimestamp</Name><Value>1677111805489</Value></Attribute>
          </Message>
        </ReceiveMessageResult>
        <ResponseMetadata>
          <RequestId>5ba605cc-1e4b-58ba-93db-59bca8677ec9</RequestId>
        </ResponseMetadata>
      </ReceiveMessageResponse>`);
    const output = {
      Messages: [
        {
          MessageId: '60e827c3-c8a5-410a-af0e-fb43746e70b1',
          ReceiptHandle: receiptHandle,
          MD5OfBody: '0e024d309850c78cba5eabbeff7cae71',
          Body: 'test message body 1',
          Attributes: {
            SenderId: 'AIDASSYFHUBOBT7F4XT75',
            ApproximateFirstReceiveTimestamp: '1677112300463',
            ApproximateReceiveCount: '1',
            SentTimestamp: '1677111805489',
          },
        },
      ],
    };
    assertEncodes('ReceiveMessage', output, '5ba605cc-1e4b-58ba-93db-59bca8677ec9', golden);
  });

  test('Given the API reference GetQueueAttributes result, when encoding, then the sample response', () => {
    // API_GetQueueAttributes.html, second query protocol sample response.
    const golden = compact(`
      <GetQueueAttributesResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">
        <GetQueueAttributesResult>
          <Attribute><Name>VisibilityTimeout</Name><Value>35</Value></Attribute>
          <Attribute><Name>DelaySeconds</Name><Value>45</Value></Attribute>
          <Attribute><Name>ReceiveMessageWaitTimeSeconds</Name><Value>20</Value></Attribute>
        </GetQueueAttributesResult>
        <ResponseMetadata>
          <RequestId>60462930-c7fd-5ef8-b6a0-75a20b5e17b8</RequestId>
        </ResponseMetadata>
      </GetQueueAttributesResponse>`);
    const output = {
      Attributes: { VisibilityTimeout: '35', DelaySeconds: '45', ReceiveMessageWaitTimeSeconds: '20' },
    };
    assertEncodes('GetQueueAttributes', output, '60462930-c7fd-5ef8-b6a0-75a20b5e17b8', golden);
  });

  test('Given a SendMessageBatch result with a Failed entry, when encoding, then the sample response plus the failure', () => {
    // Successful entries: API_SendMessageBatch.html, query protocol sample response. AWS shows no
    // failed entry there; it follows BatchResultErrorEntry's member order (Id, SenderFault, Code, Message).
    const golden = compact(`
      <SendMessageBatchResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">
        <SendMessageBatchResult>
          <SendMessageBatchResultEntry>
            <Id>test_msg_001</Id>
            <MessageId>60e827c3-c8a5-410a-af0e-fb43746e70b1</MessageId>
            <MD5OfMessageBody>0e024d309850c78cba5eabbeff7cae71</MD5OfMessageBody>
          </SendMessageBatchResultEntry>
          <SendMessageBatchResultEntry>
            <Id>test_msg_00</Id>
            <MessageId>c6e7fc6a-b802-4724-be06-59833004578b</MessageId>
            <MD5OfMessageBody>7fb8146a82f95e0af155278f406862c2</MD5OfMessageBody>
            <MD5OfMessageAttributes>ba056227cfd9533dba1f72ad9816d233</MD5OfMessageAttributes>
          </SendMessageBatchResultEntry>
          <BatchResultErrorEntry>
            <Id>test_msg_003</Id>
            <SenderFault>true</SenderFault>
            <Code>InvalidParameterValue</Code>
            <Message>Value -1 for parameter DelaySeconds is invalid. Reason: must be between 0 and 900, if provided.</Message>
          </BatchResultErrorEntry>
        </SendMessageBatchResult>
        <ResponseMetadata>
          <RequestId>5150a701-14f7-5609-b136-fb71a0ca744a</RequestId>
        </ResponseMetadata>
      </SendMessageBatchResponse>`);
    const output = {
      Successful: [
        {
          Id: 'test_msg_001',
          MessageId: '60e827c3-c8a5-410a-af0e-fb43746e70b1',
          MD5OfMessageBody: '0e024d309850c78cba5eabbeff7cae71',
        },
        {
          Id: 'test_msg_00',
          MessageId: 'c6e7fc6a-b802-4724-be06-59833004578b',
          MD5OfMessageBody: '7fb8146a82f95e0af155278f406862c2',
          MD5OfMessageAttributes: 'ba056227cfd9533dba1f72ad9816d233',
        },
      ],
      Failed: [
        {
          Id: 'test_msg_003',
          SenderFault: true,
          Code: 'InvalidParameterValue',
          Message:
            'Value -1 for parameter DelaySeconds is invalid. Reason: must be between 0 and 900, if provided.',
        },
      ],
    };
    assertEncodes('SendMessageBatch', output, '5150a701-14f7-5609-b136-fb71a0ca744a', golden);
  });

  test('Given ChangeMessageVisibility, which has no output, when encoding, then only the response metadata', () => {
    // API_ChangeMessageVisibility.html, query protocol sample response.
    const golden = compact(`
      <ChangeMessageVisibilityResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">
        <ResponseMetadata>
          <RequestId>6a7a282a-d013-4a59-aba9-335b0fa48bed</RequestId>
        </ResponseMetadata>
      </ChangeMessageVisibilityResponse>`);
    assert.equal(
      encodeQueryResult('ChangeMessageVisibility', {}, '6a7a282a-d013-4a59-aba9-335b0fa48bed'),
      golden,
    );
  });
});

describe('encodeQueryResult: serialisation rules', () => {
  test('Given a message with message attributes, when encoding, then Name and a Value with StringValue or BinaryValue then DataType', () => {
    const output = {
      Messages: [
        {
          MessageId: 'm',
          Body: 'b',
          MD5OfMessageAttributes: 'x',
          MessageAttributes: {
            Count: { DataType: 'Number', StringValue: '1' },
            Blob: { DataType: 'Binary', BinaryValue: 'AAH/' },
          },
        },
      ],
    };
    assert.equal(
      encodeQueryResult('ReceiveMessage', output, 'r'),
      `${DECL}<ReceiveMessageResponse xmlns="${NS}"><ReceiveMessageResult><Message><MessageId>m</MessageId><Body>b</Body>` +
        '<MD5OfMessageAttributes>x</MD5OfMessageAttributes>' +
        '<MessageAttribute><Name>Count</Name><Value><StringValue>1</StringValue><DataType>Number</DataType></Value></MessageAttribute>' +
        '<MessageAttribute><Name>Blob</Name><Value><BinaryValue>AAH/</BinaryValue><DataType>Binary</DataType></Value></MessageAttribute>' +
        '</Message></ReceiveMessageResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></ReceiveMessageResponse>',
    );
  });

  test('Given an output whose keys are in another order, when encoding, then elements follow the model order', () => {
    const output = { NextToken: 't', QueueUrls: ['a', 'b'] };
    assert.equal(
      encodeQueryResult('ListQueues', output, 'r'),
      `${DECL}<ListQueuesResponse xmlns="${NS}"><ListQueuesResult><QueueUrl>a</QueueUrl><QueueUrl>b</QueueUrl>` +
        '<NextToken>t</NextToken></ListQueuesResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></ListQueuesResponse>',
    );
  });

  test('Given no messages, when encoding ReceiveMessage, then one empty result element, as AWS writes it', () => {
    assert.equal(
      encodeQueryResult('ReceiveMessage', { Messages: [] }, 'r'),
      `${DECL}<ReceiveMessageResponse xmlns="${NS}"><ReceiveMessageResult/>` +
        '<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></ReceiveMessageResponse>',
    );
  });

  test('Given undefined and null members, when encoding, then they are left out', () => {
    assert.equal(
      encodeQueryResult('ListQueues', { QueueUrls: undefined, NextToken: null }, 'r'),
      `${DECL}<ListQueuesResponse xmlns="${NS}"><ListQueuesResult/>` +
        '<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></ListQueuesResponse>',
    );
  });

  test('Given a lower-case JSON member (queueUrls), when encoding, then its Query name QueueUrl', () => {
    assert.equal(
      encodeQueryResult('ListDeadLetterSourceQueues', { queueUrls: ['a'] }, 'r'),
      `${DECL}<ListDeadLetterSourceQueuesResponse xmlns="${NS}"><ListDeadLetterSourceQueuesResult><QueueUrl>a</QueueUrl>` +
        '</ListDeadLetterSourceQueuesResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></ListDeadLetterSourceQueuesResponse>',
    );
  });

  test('Given tags, when encoding ListQueueTags, then Tag entries with Key and Value', () => {
    assert.equal(
      encodeQueryResult('ListQueueTags', { Tags: { team: 'a', env: 'b' } }, 'r'),
      `${DECL}<ListQueueTagsResponse xmlns="${NS}"><ListQueueTagsResult>` +
        '<Tag><Key>team</Key><Value>a</Value></Tag><Tag><Key>env</Key><Value>b</Value></Tag>' +
        '</ListQueueTagsResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></ListQueueTagsResponse>',
    );
  });

  test('Given integer and boolean members, when encoding, then decimal text and true/false', () => {
    const xml = encodeQueryResult(
      'ListMessageMoveTasks',
      {
        Results: [{ TaskHandle: 'h', ApproximateNumberOfMessagesMoved: 0, StartedTimestamp: 1700000000123 }],
      },
      'r',
    );
    assert.ok(
      xml.includes(
        '<ListMessageMoveTasksResultEntry><TaskHandle>h</TaskHandle>' +
          '<ApproximateNumberOfMessagesMoved>0</ApproximateNumberOfMessagesMoved>' +
          '<StartedTimestamp>1700000000123</StartedTimestamp></ListMessageMoveTasksResultEntry>',
      ),
      xml,
    );
    const failed = encodeQueryResult(
      'DeleteMessageBatch',
      { Successful: [], Failed: [{ Id: 'a', SenderFault: false, Code: 'InternalError' }] },
      'r',
    );
    assert.ok(failed.includes('<SenderFault>false</SenderFault>'), failed);
  });

  test('Given text with markup characters, quotes and a carriage return, when encoding, then each is escaped', () => {
    const xml = encodeQueryResult('ReceiveMessage', { Messages: [{ Body: `a&b<c>d"e'f\r\ng` }] }, 'r');
    assert.ok(xml.includes('<Body>a&amp;b&lt;c&gt;d&quot;e&apos;f&#xD;\ng</Body>'), xml);
  });

  test('Given a body with every escaped character and non-ASCII text, when encoding and parsing back, then the body round-trips', () => {
    const body = 'x\r\ny\rz & <tag attr="v"> \'q\' \t é 😀 ]]>';
    const xml = encodeQueryResult('ReceiveMessage', { Messages: [{ Body: body }] }, 'r');
    const parsed = new XMLParser({
      processEntities: true,
      htmlEntities: true,
      trimValues: false,
      parseTagValue: false,
    }).parse(xml) as { ReceiveMessageResponse: { ReceiveMessageResult: { Message: { Body: string } } } };
    assert.equal(parsed.ReceiveMessageResponse.ReceiveMessageResult.Message.Body, body);
  });

  test('Given an error message echoing characters XML cannot carry, when encoding, then they become U+FFFD', () => {
    assertErrorMessage(
      'Value a\u0001b\uffff for parameter QueueName',
      '<Message>Value a\ufffdb\ufffd for parameter QueueName</Message>',
    );
  });

  test('Given text without special characters, when escaping, then the very same string comes back', () => {
    assert.equal(escapeXml('plain text 123 é'), 'plain text 123 é');
  });
});

describe('encodeQueryJson: the Query API answered in JSON (Accept: application/json)', () => {
  test('Given ListQueues, when encoding, then the recorded AWS shape: Response, Result, queueUrls, unset members null', () => {
    assert.deepEqual(JSON.parse(encodeQueryJson('ListQueues', { QueueUrls: ['http://h/1/a'] }, 'r')), {
      ListQueuesResponse: {
        ListQueuesResult: { queueUrls: ['http://h/1/a'], NextToken: null },
        ResponseMetadata: { RequestId: 'r' },
      },
    });
  });

  test('Given ReceiveMessage, when encoding, then its messages under `messages`, each with every member', () => {
    const out = JSON.parse(
      encodeQueryJson(
        'ReceiveMessage',
        { Messages: [{ MessageId: 'i', Body: 'b', Attributes: { SenderId: 's' } }] },
        'r',
      ),
    ) as { ReceiveMessageResponse: { ReceiveMessageResult: { messages: Array<Record<string, unknown>> } } };
    const [m] = out.ReceiveMessageResponse.ReceiveMessageResult.messages;
    assert.equal(m?.MessageId, 'i');
    assert.equal(m?.Body, 'b');
    assert.deepEqual(m?.Attributes, { SenderId: 's' });
    assert.equal(m?.ReceiptHandle, null);
    assert.deepEqual(JSON.parse(encodeQueryJson('ReceiveMessage', {}, 'r')), {
      ReceiveMessageResponse: {
        ReceiveMessageResult: { messages: null },
        ResponseMetadata: { RequestId: 'r' },
      },
    });
  });

  test('Given an action without output, when encoding, then only ResponseMetadata', () => {
    assert.deepEqual(JSON.parse(encodeQueryJson('DeleteMessage', {}, 'r')), {
      DeleteMessageResponse: { ResponseMetadata: { RequestId: 'r' } },
    });
  });
});

describe('encodeQueryError', () => {
  test('Given a sender error as AWS recorded it, when encoding, then the same document, status and content type', () => {
    // A real AWS answer to a batch with a repeated Id (recorded by a client's test suite), without
    // its XML declaration.
    const err = new SqsError('BatchEntryIdsNotDistinct', 'Id a6f4964d-63da-4d66-86bf-e9155b4bb499 repeated.');
    assert.deepEqual(encodeQueryError(err, '635d186a-54a0-52e5-b8c0-4601e8f85440'), {
      status: 400,
      headers: { 'content-type': 'text/xml' },
      body:
        `${DECL}<ErrorResponse xmlns="${NS}"><Error><Type>Sender</Type>` +
        '<Code>AWS.SimpleQueueService.BatchEntryIdsNotDistinct</Code>' +
        '<Message>Id a6f4964d-63da-4d66-86bf-e9155b4bb499 repeated.</Message><Detail/></Error>' +
        '<RequestId>635d186a-54a0-52e5-b8c0-4601e8f85440</RequestId></ErrorResponse>',
    });
  });

  test('Given QueueDoesNotExist, when encoding, then the NonExistentQueue code, status 400 and the Query wording ("for this wsdl version.")', () => {
    const encoded = encodeQueryError(
      new SqsError('QueueDoesNotExist', 'The specified queue does not exist.'),
      'r',
    );
    assert.equal(encoded.status, 400);
    assert.ok(
      encoded.body.includes(
        '<Code>AWS.SimpleQueueService.NonExistentQueue</Code>' +
          '<Message>The specified queue does not exist for this wsdl version.</Message>',
      ),
      encoded.body,
    );
  });

  test('Given a receiver-side error, when encoding, then Type Receiver and its status', () => {
    const encoded = encodeQueryError(new SqsError('ServiceUnavailable', 'Try again.'), 'r');
    assert.equal(encoded.status, 503);
    assert.ok(encoded.body.includes('<Type>Receiver</Type><Code>ServiceUnavailable</Code>'), encoded.body);
  });

  test('Given a message with markup characters, when encoding, then the message is escaped', () => {
    assertErrorMessage(
      'Value <x> & "y" is invalid.',
      '<Message>Value &lt;x&gt; &amp; &quot;y&quot; is invalid.</Message>',
    );
  });
});
