import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { decodeJson, encodeJson, encodeJsonError } from '../../src/protocol/json.js';
import { SqsError } from '../../src/sqs/errors.js';
import { operations } from '../../src/sqs/model.generated.js';
import { isSqsError, throwsSqsError } from '../support/assertions.js';

describe('decodeJson: targets', () => {
  test('Given the AWS API reference SendMessage request, when decoding, then action and input are the body as sent', () => {
    // API_SendMessage.html, "Using AWS JSON protocol" sample request.
    const body = `{
      "QueueUrl": "https://sqs.us-east-1.amazonaws.com/177715257436/MyQueue/",
      "MessageBody": "This is a test message",
      "MessageAttributes": {
        "my_attribute_name_1": { "DataType": "String", "StringValue": "my_attribute_value_1" },
        "my_attribute_name_2": { "DataType": "String", "StringValue": "my_attribute_value_2" }
      }
    }`;
    assert.deepEqual(decodeJson('AmazonSQS.SendMessage', Buffer.from(body)), {
      action: 'SendMessage',
      input: {
        QueueUrl: 'https://sqs.us-east-1.amazonaws.com/177715257436/MyQueue/',
        MessageBody: 'This is a test message',
        MessageAttributes: {
          my_attribute_name_1: { DataType: 'String', StringValue: 'my_attribute_value_1' },
          my_attribute_name_2: { DataType: 'String', StringValue: 'my_attribute_value_2' },
        },
      },
    });
  });

  test('Given an unknown operation in the target, when decoding, then InvalidAction', () => {
    throwsSqsError(
      () => decodeJson('AmazonSQS.SendMessages', '{}'),
      'InvalidAction',
      'The action or operation requested is invalid. Verify that the action is typed correctly.',
    );
  });

  test('Given no target, when decoding, then InvalidAction', () => {
    throwsSqsError(() => decodeJson(undefined, '{}'), 'InvalidAction');
  });

  test('Given another service prefix, when decoding, then InvalidAction', () => {
    throwsSqsError(() => decodeJson('AmazonSNS.ListQueues', '{}'), 'InvalidAction');
  });

  test('Given a target naming an Object.prototype member, when decoding, then InvalidAction', () => {
    throwsSqsError(() => decodeJson('AmazonSQS.__proto__', '{}'), 'InvalidAction');
    throwsSqsError(() => decodeJson('AmazonSQS.toString', '{}'), 'InvalidAction');
  });

  test('Given every action of the model, when decoding its target, then the action is recognised', () => {
    for (const action of Object.keys(operations)) {
      try {
        assert.equal(decodeJson(`AmazonSQS.${action}`, '{}').action, action);
      } catch (err) {
        assert.ok(isSqsError('MissingParameter')(err), `${action}: ${String(err)}`);
      }
    }
  });
});

describe('decodeJson: bodies', () => {
  test('Given an empty body for an action without required members, when decoding, then the input is {}', () => {
    assert.deepEqual(decodeJson('AmazonSQS.ListQueues', Buffer.alloc(0)), {
      action: 'ListQueues',
      input: {},
    });
  });

  test('Given a body that is not JSON, when decoding, then MalformedRequest', () => {
    throwsSqsError(() => decodeJson('AmazonSQS.ListQueues', '{"MaxResults": '), 'MalformedRequest');
  });

  test('Given a JSON array as body, when decoding, then MalformedRequest', () => {
    throwsSqsError(() => decodeJson('AmazonSQS.ListQueues', '[]'), 'MalformedRequest');
  });

  test('Given a JSON string as body, when decoding, then MalformedRequest', () => {
    throwsSqsError(() => decodeJson('AmazonSQS.ListQueues', '"x"'), 'MalformedRequest');
  });

  test('Given JSON null as body, when decoding, then MalformedRequest', () => {
    throwsSqsError(() => decodeJson('AmazonSQS.ListQueues', 'null'), 'MalformedRequest');
  });

  test('Given members the model does not know, at the top and nested, when decoding, then they are dropped', () => {
    const { input } = decodeJson(
      'AmazonSQS.SendMessageBatch',
      JSON.stringify({
        QueueUrl: 'u',
        Future: { x: 1 },
        Entries: [
          {
            Id: 'a',
            MessageBody: 'b',
            Extra: true,
            MessageAttributes: { n: { DataType: 'String', StringValue: 'v', Nope: 1 } },
          },
        ],
      }),
    );
    assert.deepEqual(input, {
      QueueUrl: 'u',
      Entries: [
        { Id: 'a', MessageBody: 'b', MessageAttributes: { n: { DataType: 'String', StringValue: 'v' } } },
      ],
    });
  });

  test('Given a member sent as null, when decoding, then it is treated as absent', () => {
    const { input } = decodeJson('AmazonSQS.ListQueues', '{"QueueNamePrefix":null,"MaxResults":5}');
    assert.deepEqual(input, { MaxResults: 5 });
  });

  test('Given a "__proto__" member, when decoding, then it is dropped and the prototype untouched', () => {
    const { input } = decodeJson('AmazonSQS.ListQueues', '{"__proto__":{"polluted":1},"MaxResults":5}');
    assert.deepEqual(input, { MaxResults: 5 });
    assert.equal(Object.getPrototypeOf(input), Object.prototype);
  });

  test('Given a binary message attribute, when decoding, then its base64 text is kept as it came', () => {
    const { input } = decodeJson(
      'AmazonSQS.SendMessage',
      '{"QueueUrl":"u","MessageBody":"b","MessageAttributes":{"bin":{"DataType":"Binary","BinaryValue":"AAH/"}}}',
    );
    assert.deepEqual((input as { MessageAttributes: unknown }).MessageAttributes, {
      bin: { DataType: 'Binary', BinaryValue: 'AAH/' },
    });
  });
});

describe('decodeJson: type errors', () => {
  test('Given a string where an integer belongs, when decoding, then MalformedRequest naming the member', () => {
    throwsSqsError(
      () => decodeJson('AmazonSQS.ReceiveMessage', '{"QueueUrl":"u","MaxNumberOfMessages":"5"}'),
      'MalformedRequest',
      /MaxNumberOfMessages/,
    );
  });

  test('Given a fractional number where an integer belongs, when decoding, then MalformedRequest', () => {
    throwsSqsError(
      () => decodeJson('AmazonSQS.ReceiveMessage', '{"QueueUrl":"u","WaitTimeSeconds":1.5}'),
      'MalformedRequest',
    );
  });

  test('Given a number where a string belongs, when decoding, then MalformedRequest', () => {
    throwsSqsError(
      () => decodeJson('AmazonSQS.GetQueueUrl', '{"QueueName":42}'),
      'MalformedRequest',
      /QueueName/,
    );
  });

  test('Given a boolean where a string belongs, when decoding, then MalformedRequest', () => {
    throwsSqsError(() => decodeJson('AmazonSQS.GetQueueUrl', '{"QueueName":true}'), 'MalformedRequest');
  });

  test('Given a string where a list belongs, when decoding, then MalformedRequest', () => {
    throwsSqsError(
      () => decodeJson('AmazonSQS.GetQueueAttributes', '{"QueueUrl":"u","AttributeNames":"All"}'),
      'MalformedRequest',
      /AttributeNames/,
    );
  });

  test('Given a number inside a list of strings, when decoding, then MalformedRequest', () => {
    throwsSqsError(
      () => decodeJson('AmazonSQS.GetQueueAttributes', '{"QueueUrl":"u","AttributeNames":["All",1]}'),
      'MalformedRequest',
    );
  });

  test('Given a null inside a list, when decoding, then MalformedRequest', () => {
    throwsSqsError(
      () => decodeJson('AmazonSQS.GetQueueAttributes', '{"QueueUrl":"u","AttributeNames":[null]}'),
      'MalformedRequest',
    );
  });

  test('Given a list where a map belongs, when decoding, then MalformedRequest', () => {
    throwsSqsError(
      () => decodeJson('AmazonSQS.CreateQueue', '{"QueueName":"q","Attributes":[["DelaySeconds","5"]]}'),
      'MalformedRequest',
      /Attributes/,
    );
  });

  test('Given a number as a map value of strings, when decoding, then MalformedRequest', () => {
    throwsSqsError(
      () => decodeJson('AmazonSQS.CreateQueue', '{"QueueName":"q","Attributes":{"DelaySeconds":5}}'),
      'MalformedRequest',
      /DelaySeconds/,
    );
  });

  test('Given a string where a structure belongs in a list, when decoding, then MalformedRequest', () => {
    throwsSqsError(
      () => decodeJson('AmazonSQS.DeleteMessageBatch', '{"QueueUrl":"u","Entries":["a"]}'),
      'MalformedRequest',
    );
  });

  test('Given a string where a message attribute value structure belongs, when decoding, then MalformedRequest', () => {
    throwsSqsError(
      () =>
        decodeJson(
          'AmazonSQS.SendMessage',
          '{"QueueUrl":"u","MessageBody":"b","MessageAttributes":{"a":"text"}}',
        ),
      'MalformedRequest',
    );
  });

  test('Given a number where a blob belongs, when decoding, then MalformedRequest', () => {
    throwsSqsError(
      () =>
        decodeJson(
          'AmazonSQS.SendMessage',
          '{"QueueUrl":"u","MessageBody":"b","MessageAttributes":{"a":{"DataType":"Binary","BinaryValue":7}}}',
        ),
      'MalformedRequest',
    );
  });
});

describe('decodeJson: required members', () => {
  test('Given a SendMessage without MessageBody, when decoding, then MissingParameter in AWS wording', () => {
    throwsSqsError(
      () => decodeJson('AmazonSQS.SendMessage', '{"QueueUrl":"u"}'),
      'MissingParameter',
      'The request must contain the parameter MessageBody.',
    );
  });

  test('Given a required member sent as null, when decoding, then MissingParameter', () => {
    throwsSqsError(() => decodeJson('AmazonSQS.DeleteQueue', '{"QueueUrl":null}'), 'MissingParameter');
  });

  test('Given two missing required members, when decoding, then the first in model order is named', () => {
    throwsSqsError(
      () => decodeJson('AmazonSQS.ChangeMessageVisibility', '{}'),
      'MissingParameter',
      'The request must contain the parameter QueueUrl.',
    );
  });

  test('Given an empty batch list, when decoding, then the list passes (the action layer judges it)', () => {
    assert.deepEqual(decodeJson('AmazonSQS.DeleteMessageBatch', '{"QueueUrl":"u","Entries":[]}').input, {
      QueueUrl: 'u',
      Entries: [],
    });
  });
});

describe('encodeJson', () => {
  test('Given an output with undefined members, when encoding, then they are left out', () => {
    assert.equal(encodeJson({ QueueUrl: 'u', NextToken: undefined }), '{"QueueUrl":"u"}');
  });

  test('Given no output, when encoding, then the body is {}', () => {
    assert.equal(encodeJson(undefined), '{}');
  });

  test('Given the AWS API reference SendMessage result, when encoding, then it parses back equal', () => {
    const output = {
      MD5OfMessageAttributes: 'c48838208d2b4e14e3ca0093a8443f09',
      MD5OfMessageBody: 'fafb00f5732ab283681e124bf8747ed1',
      MessageId: '219f8380-5770-4cc2-8c3e-5c715e145f5e',
    };
    assert.deepEqual(JSON.parse(encodeJson(output)), output);
  });
});

describe('encodeJsonError', () => {
  test('Given QueueDoesNotExist, when encoding, then the AWS JSON error and the query-error header', () => {
    const encoded = encodeJsonError(new SqsError('QueueDoesNotExist', 'The specified queue does not exist.'));
    assert.deepEqual(encoded, {
      status: 400,
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amzn-query-error': 'AWS.SimpleQueueService.NonExistentQueue;Sender',
      },
      body: '{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."}',
    });
  });

  test('Given ServiceUnavailable, when encoding, then status 503 and the Receiver fault in the header', () => {
    const encoded = encodeJsonError(new SqsError('ServiceUnavailable', 'Not the leader.'));
    assert.equal(encoded.status, 503);
    assert.equal(encoded.headers['x-amzn-query-error'], 'ServiceUnavailable;Receiver');
    assert.deepEqual(JSON.parse(encoded.body), {
      __type: 'com.amazon.coral.service#ServiceUnavailableException',
      message: 'Not the leader.',
    });
  });

  test('Given a message with quotes and a newline, when encoding, then the body is valid JSON carrying it', () => {
    const encoded = encodeJsonError(new SqsError('InvalidParameterValue', 'Value "a\nb" is invalid.'));
    assert.equal((JSON.parse(encoded.body) as { message: string }).message, 'Value "a\nb" is invalid.');
  });
});

describe('decodeJson: hostile bodies', () => {
  test('Given many random bodies and targets, when decoding, then only SqsErrors are thrown', () => {
    let seed = 12345;
    const next = (): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    const pieces = [
      '{',
      '}',
      '[',
      ']',
      '"QueueUrl"',
      '"Entries"',
      ':',
      ',',
      '1',
      '1.5',
      'null',
      'true',
      '"x"',
      '"MessageAttributes"',
      '{"a":{}}',
      '"__proto__"',
    ];
    const actions = Object.keys(operations);
    for (let i = 0; i < 3000; i++) {
      let body = '';
      const length = next() % 12;
      for (let j = 0; j < length; j++) body += pieces[next() % pieces.length];
      const target = `AmazonSQS.${actions[next() % actions.length]}`;
      try {
        decodeJson(target, body);
      } catch (err) {
        assert.ok(err instanceof SqsError, `${target} ${body}: ${String(err)}`);
      }
    }
  });
});
