import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { decodeQuery } from '../../src/protocol/query.js';
import { SqsError } from '../../src/sqs/errors.js';
import { operations } from '../../src/sqs/model.generated.js';
import { isSqsError, throwsSqsError } from '../support/assertions.js';

// Bodies marked "botocore" were produced by the Query serializer of botocore 1.29.27, the one inside
// Debian's aws-cli 2.9 (the Query client our e2e tests use), from the parameters shown beside them.

function decode(body: string, queueUrl?: string): { action: string; input: unknown } {
  return decodeQuery(new URLSearchParams(body), queueUrl);
}

function inputOf(body: string, queueUrl?: string): unknown {
  return decode(body, queueUrl).input;
}

describe('decodeQuery: actions', () => {
  test('Given an unknown Action, when decoding, then InvalidAction in AWS wording, naming it', () => {
    throwsSqsError(
      () => decode('Action=SendMessages&QueueUrl=u'),
      'InvalidAction',
      'The action SendMessages is not valid for this endpoint.',
    );
  });

  test('Given no Action parameter, when decoding, then InvalidAction', () => {
    throwsSqsError(
      () => decode('QueueUrl=u&MessageBody=b'),
      'InvalidAction',
      'The action or operation requested is invalid. Verify that the action is typed correctly.',
    );
  });

  test('Given an Action naming an Object.prototype member, when decoding, then InvalidAction', () => {
    throwsSqsError(() => decode('Action=constructor'), 'InvalidAction');
  });

  test('Given every action of the model, when decoding its name, then the action is recognised', () => {
    for (const action of Object.keys(operations)) {
      try {
        assert.equal(decode(`Action=${action}`).action, action);
      } catch (err) {
        assert.ok(isSqsError('MissingParameter')(err), `${action}: ${String(err)}`);
      }
    }
  });
});

describe('decodeQuery: scalars and protocol parameters', () => {
  test('Given the API reference SendMessage with two message attributes, when decoding, then the JSON-shaped input', () => {
    // API_SendMessage.html, "Using AWS query protocol" sample request (QueueUrl from the path).
    const body =
      'Action=SendMessage&MessageBody=This+is+a+test+message' +
      '&MessageAttribute.1.Name=my_attribute_name_1&MessageAttribute.1.Value.StringValue=my_attribute_value_1' +
      '&MessageAttribute.1.Value.DataType=String' +
      '&MessageAttribute.2.Name=my_attribute_name_2&MessageAttribute.2.Value.StringValue=my_attribute_value_2' +
      '&MessageAttribute.2.Value.DataType=String';
    assert.deepEqual(decode(body, 'https://sqs.us-east-1.amazonaws.com/177715257436/MyQueue'), {
      action: 'SendMessage',
      input: {
        MessageBody: 'This is a test message',
        MessageAttributes: {
          my_attribute_name_1: { StringValue: 'my_attribute_value_1', DataType: 'String' },
          my_attribute_name_2: { StringValue: 'my_attribute_value_2', DataType: 'String' },
        },
        QueueUrl: 'https://sqs.us-east-1.amazonaws.com/177715257436/MyQueue',
      },
    });
  });

  test('Given signing and version parameters, when decoding, then they are not part of the input', () => {
    const body =
      'Action=GetQueueUrl&QueueName=q&Version=2012-11-05&AWSAccessKeyId=AKID&Signature=abc' +
      '&SignatureMethod=HmacSHA256&SignatureVersion=2&X-Amz-Date=20240101T000000Z' +
      '&X-Amz-Algorithm=AWS4-HMAC-SHA256&Timestamp=2024-01-01&Expires=2024-01-02&SomethingNew=1';
    assert.deepEqual(inputOf(body), { QueueName: 'q' });
  });

  test('Given an integer parameter, when decoding, then it becomes a number', () => {
    assert.deepEqual(inputOf('Action=ListQueues&MaxResults=25&QueueNamePrefix=a'), {
      MaxResults: 25,
      QueueNamePrefix: 'a',
    });
  });

  test('Given a negative integer, when decoding, then it stays a number for the action layer to judge', () => {
    assert.deepEqual(inputOf('Action=ListQueues&MaxResults=-1'), { MaxResults: -1 });
  });

  test('Given a word where an integer belongs, when decoding, then InvalidParameterValue in AWS wording', () => {
    throwsSqsError(
      () => decode('Action=ReceiveMessage&QueueUrl=u&MaxNumberOfMessages=five'),
      'InvalidParameterValue',
      'Value five for parameter MaxNumberOfMessages is invalid. Reason: Not a valid integer.',
    );
  });

  test('Given a decimal fraction where an integer belongs, when decoding, then InvalidParameterValue', () => {
    throwsSqsError(
      () => decode('Action=ReceiveMessage&QueueUrl=u&WaitTimeSeconds=1.5'),
      'InvalidParameterValue',
    );
  });

  test('Given an empty value where an integer belongs, when decoding, then InvalidParameterValue', () => {
    throwsSqsError(
      () => decode('Action=ReceiveMessage&QueueUrl=u&VisibilityTimeout='),
      'InvalidParameterValue',
    );
  });

  test('Given a bad integer inside a batch entry, when decoding, then the error names the full parameter', () => {
    throwsSqsError(
      () =>
        decode(
          'Action=SendMessageBatch&QueueUrl=u&SendMessageBatchRequestEntry.1.Id=a' +
            '&SendMessageBatchRequestEntry.1.MessageBody=b&SendMessageBatchRequestEntry.1.DelaySeconds=soon',
        ),
      'InvalidParameterValue',
      'Value soon for parameter SendMessageBatchRequestEntry.1.DelaySeconds is invalid. Reason: Not a valid integer.',
    );
  });

  test('Given "+" and percent escapes in a form body, when decoding, then spaces and the escaped characters', () => {
    assert.deepEqual(inputOf('Action=SendMessage&QueueUrl=u&MessageBody=a+b%26c%2Bd%0D%0A%F0%9F%98%80'), {
      QueueUrl: 'u',
      MessageBody: 'a b&c+d\r\n\u{1F600}',
    });
  });

  test('Given broken percent-encoding, when decoding, then no exception and the text kept as sent', () => {
    assert.deepEqual(inputOf('Action=SendMessage&QueueUrl=u&MessageBody=100%zz%'), {
      QueueUrl: 'u',
      MessageBody: '100%zz%',
    });
  });

  test('Given a repeated scalar parameter, when decoding, then the last one counts', () => {
    assert.deepEqual(inputOf('Action=GetQueueUrl&QueueName=a&QueueName=b'), { QueueName: 'b' });
  });

  test('Given a scalar parameter with a suffix, when decoding, then it is ignored', () => {
    assert.deepEqual(inputOf('Action=GetQueueUrl&QueueName=a&QueueName.1=b'), { QueueName: 'a' });
  });
});

describe('decodeQuery: QueueUrl and required parameters', () => {
  test('Given no QueueUrl parameter and a URL from the path, when decoding, then the path URL is used', () => {
    assert.deepEqual(inputOf('Action=PurgeQueue', 'http://localhost:4100/000000000000/q'), {
      QueueUrl: 'http://localhost:4100/000000000000/q',
    });
  });

  test('Given a QueueUrl parameter and a URL from the path, when decoding, then the parameter wins', () => {
    assert.deepEqual(inputOf('Action=PurgeQueue&QueueUrl=http%3A%2F%2Fh%2F1%2Fother', 'http://h/1/q'), {
      QueueUrl: 'http://h/1/other',
    });
  });

  test('Given a path URL for an action without QueueUrl other than GetQueueUrl, when decoding, then InvalidAction naming it (AWS, recorded)', () => {
    for (const action of ['ListQueues', 'CreateQueue']) {
      throwsSqsError(
        () => decode(`Action=${action}&QueueName=x`, 'http://h/1/q'),
        'InvalidAction',
        `The action ${action} is not valid for this endpoint.`,
      );
    }
  });

  test("Query: GetQueueUrl works at a queue's URL: given a path URL, when decoding GetQueueUrl, then its own parameters, without the path's queue (AWS, recorded)", () => {
    assert.deepEqual(
      decode('Action=GetQueueUrl&QueueName=other&QueueOwnerAWSAccountId=000000000000', 'http://h/1/q'),
      { action: 'GetQueueUrl', input: { QueueName: 'other', QueueOwnerAWSAccountId: '000000000000' } },
    );
  });

  test('Given neither a QueueUrl parameter nor a path URL, when decoding, then MissingParameter', () => {
    throwsSqsError(
      () => decode('Action=PurgeQueue'),
      'MissingParameter',
      'The request must contain the parameter QueueUrl.',
    );
  });

  test('Given a SendMessage without MessageBody, when decoding, then MissingParameter for MessageBody', () => {
    throwsSqsError(
      () => decode('Action=SendMessage&QueueUrl=u'),
      'MissingParameter',
      'The request must contain the parameter MessageBody.',
    );
  });
});

describe('decodeQuery: lists', () => {
  test('Given AttributeName.N (botocore GetQueueAttributes), when decoding, then AttributeNames', () => {
    // botocore: {'QueueUrl': 'u', 'AttributeNames': ['All']}
    assert.deepEqual(inputOf('Action=GetQueueAttributes&Version=2012-11-05&QueueUrl=u&AttributeName.1=All'), {
      QueueUrl: 'u',
      AttributeNames: ['All'],
    });
  });

  test('Given the API reference GetQueueAttributes with three names, when decoding, then all three in order', () => {
    const body =
      'Action=GetQueueAttributes&AttributeName.1=VisibilityTimeout&AttributeName.2=DelaySeconds' +
      '&AttributeName.3=ReceiveMessageWaitTimeSeconds';
    assert.deepEqual(inputOf(body, 'u'), {
      AttributeNames: ['VisibilityTimeout', 'DelaySeconds', 'ReceiveMessageWaitTimeSeconds'],
      QueueUrl: 'u',
    });
  });

  test('Given list indices out of order and with gaps, when decoding, then elements sorted by index', () => {
    const body =
      'Action=GetQueueAttributes&QueueUrl=u&AttributeName.10=c&AttributeName.2=b&AttributeName.1=a';
    assert.deepEqual(inputOf(body), { QueueUrl: 'u', AttributeNames: ['a', 'b', 'c'] });
  });

  test('Given an index with a leading zero, when decoding, then it is the same element as without', () => {
    const body = 'Action=GetQueueAttributes&QueueUrl=u&AttributeName.01=a&AttributeName.1=b';
    assert.deepEqual(inputOf(body), { QueueUrl: 'u', AttributeNames: ['b'] });
  });

  test('Given a non-numeric index, when decoding, then that parameter is ignored', () => {
    const body = 'Action=GetQueueAttributes&QueueUrl=u&AttributeName.x=a&AttributeName.2=b';
    assert.deepEqual(inputOf(body), { QueueUrl: 'u', AttributeNames: ['b'] });
  });

  test('Given the API reference ReceiveMessage with an unindexed AttributeName=All, when decoding, then a one-element list', () => {
    // API_ReceiveMessage.html, "Using AWS query protocol" sample request.
    assert.deepEqual(
      inputOf('Action=ReceiveMessage&MaxNumberOfMessages=5&VisibilityTimeout=15&AttributeName=All', 'u'),
      { MaxNumberOfMessages: 5, VisibilityTimeout: 15, AttributeNames: ['All'], QueueUrl: 'u' },
    );
  });

  test('Given ReceiveMessage (botocore) with attribute and message attribute names, when decoding, then both lists', () => {
    // botocore: {'QueueUrl':'u','AttributeNames':['All'],'MessageAttributeNames':['a','b'],'MaxNumberOfMessages':10}
    const body =
      'Action=ReceiveMessage&Version=2012-11-05&QueueUrl=u&AttributeName.1=All&MessageAttributeName.1=a' +
      '&MessageAttributeName.2=b&MaxNumberOfMessages=10';
    assert.deepEqual(inputOf(body), {
      QueueUrl: 'u',
      AttributeNames: ['All'],
      MessageAttributeNames: ['a', 'b'],
      MaxNumberOfMessages: 10,
    });
  });

  test('Given UntagQueue (botocore) with TagKey.N, when decoding, then TagKeys', () => {
    // botocore: {'QueueUrl': 'u', 'TagKeys': ['a', 'b']}
    assert.deepEqual(inputOf('Action=UntagQueue&Version=2012-11-05&QueueUrl=u&TagKey.1=a&TagKey.2=b'), {
      QueueUrl: 'u',
      TagKeys: ['a', 'b'],
    });
  });

  test('Given AddPermission (botocore) with AWSAccountId.N and ActionName.N, when decoding, then both lists', () => {
    // botocore: {'QueueUrl':'u','Label':'l','AWSAccountIds':['1','2'],'Actions':['SendMessage']}
    const body =
      'Action=AddPermission&Version=2012-11-05&QueueUrl=u&Label=l&AWSAccountId.1=1&AWSAccountId.2=2' +
      '&ActionName.1=SendMessage';
    assert.deepEqual(inputOf(body), {
      QueueUrl: 'u',
      Label: 'l',
      AWSAccountIds: ['1', '2'],
      Actions: ['SendMessage'],
    });
  });

  test('Given botocore\'s empty-list marker "Entries=", when decoding, then an empty Entries list', () => {
    // botocore: {'QueueUrl': 'u', 'Entries': []}
    assert.deepEqual(inputOf('Action=SendMessageBatch&Version=2012-11-05&QueueUrl=u&Entries='), {
      QueueUrl: 'u',
      Entries: [],
    });
  });

  test('Given a batch with no entries at all, when decoding, then an empty Entries list (the action answers EmptyBatchRequest)', () => {
    assert.deepEqual(inputOf('Action=DeleteMessageBatch&QueueUrl=u'), { QueueUrl: 'u', Entries: [] });
  });

  test('Given a TagQueue with no tags at all, when decoding, then an empty Tags map', () => {
    assert.deepEqual(inputOf('Action=TagQueue&QueueUrl=u'), { QueueUrl: 'u', Tags: {} });
  });
});

describe('decodeQuery: maps', () => {
  test('Given CreateQueue (botocore) with Attribute.N and Tag.N, when decoding, then Attributes and tags maps', () => {
    // botocore: {'QueueName':'q','Attributes':{'DelaySeconds':'5','VisibilityTimeout':'60'},'tags':{'team':'a','env':'b'}}
    const body =
      'Action=CreateQueue&Version=2012-11-05&QueueName=q&Attribute.1.Name=DelaySeconds&Attribute.1.Value=5' +
      '&Attribute.2.Name=VisibilityTimeout&Attribute.2.Value=60&Tag.1.Key=team&Tag.1.Value=a&Tag.2.Key=env&Tag.2.Value=b';
    assert.deepEqual(inputOf(body), {
      QueueName: 'q',
      Attributes: { DelaySeconds: '5', VisibilityTimeout: '60' },
      tags: { team: 'a', env: 'b' },
    });
  });

  test('Given map entries whose Value comes before Name and out of index order, when decoding, then the same map', () => {
    const body =
      'Action=SetQueueAttributes&QueueUrl=u&Attribute.7.Value=60&Attribute.3.Value=5' +
      '&Attribute.7.Name=VisibilityTimeout&Attribute.3.Name=DelaySeconds';
    assert.deepEqual(inputOf(body), {
      QueueUrl: 'u',
      Attributes: { DelaySeconds: '5', VisibilityTimeout: '60' },
    });
  });

  test('Given a TagQueue (botocore) with Tag.N.Key/Value, when decoding, then Tags', () => {
    assert.deepEqual(inputOf('Action=TagQueue&QueueUrl=u&Tag.1.Key=k&Tag.1.Value=v'), {
      QueueUrl: 'u',
      Tags: { k: 'v' },
    });
  });

  test('Given a map entry with a Value but no Name, when decoding, then that entry is dropped', () => {
    const body =
      'Action=SetQueueAttributes&QueueUrl=u&Attribute.1.Value=5&Attribute.2.Name=Policy&Attribute.2.Value=p';
    assert.deepEqual(inputOf(body), { QueueUrl: 'u', Attributes: { Policy: 'p' } });
  });

  test('Given a map entry with a Name but no Value, when decoding, then its value is empty text', () => {
    assert.deepEqual(inputOf('Action=SetQueueAttributes&QueueUrl=u&Attribute.1.Name=Policy'), {
      QueueUrl: 'u',
      Attributes: { Policy: '' },
    });
  });

  test('Given a map entry field that is neither Name nor Value, when decoding, then it is ignored', () => {
    assert.deepEqual(
      inputOf('Action=SetQueueAttributes&QueueUrl=u&Attribute.1.Key=Policy&Attribute.1.Value=p'),
      {
        QueueUrl: 'u',
        Attributes: {},
      },
    );
  });

  test('Given "__proto__" as a map key, when decoding, then an own entry and an untouched prototype', () => {
    const input = inputOf('Action=TagQueue&QueueUrl=u&Tag.1.Key=__proto__&Tag.1.Value=x') as {
      Tags: Record<string, unknown>;
    };
    assert.equal(Object.getPrototypeOf(input.Tags), Object.prototype);
    assert.deepEqual(Object.entries(input.Tags), [['__proto__', 'x']]);
  });

  test('Given SendMessage (botocore) with a string-list message attribute, when decoding, then StringListValues', () => {
    // botocore: MessageAttributes={'l': {'DataType':'String','StringListValues':['x','y']}}
    const body =
      'Action=SendMessage&Version=2012-11-05&QueueUrl=u&MessageBody=b&MessageAttribute.1.Name=l' +
      '&MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringListValue.1=x' +
      '&MessageAttribute.1.Value.StringListValue.2=y';
    assert.deepEqual(inputOf(body), {
      QueueUrl: 'u',
      MessageBody: 'b',
      MessageAttributes: { l: { DataType: 'String', StringListValues: ['x', 'y'] } },
    });
  });

  test('Given a binary message attribute, when decoding, then its base64 text is kept as sent', () => {
    const body =
      'Action=SendMessage&QueueUrl=u&MessageBody=b&MessageAttribute.1.Name=bin' +
      '&MessageAttribute.1.Value.DataType=Binary&MessageAttribute.1.Value.BinaryValue=AAH%2F';
    assert.deepEqual(inputOf(body), {
      QueueUrl: 'u',
      MessageBody: 'b',
      MessageAttributes: { bin: { DataType: 'Binary', BinaryValue: 'AAH/' } },
    });
  });

  test('Given a message attribute with a Name and no Value fields, when decoding, then an empty value for the action layer', () => {
    assert.deepEqual(inputOf('Action=SendMessage&QueueUrl=u&MessageBody=b&MessageAttribute.1.Name=n'), {
      QueueUrl: 'u',
      MessageBody: 'b',
      MessageAttributes: { n: {} },
    });
  });

  test('Given a system attribute (AWSTraceHeader), when decoding, then MessageSystemAttributes', () => {
    const body =
      'Action=SendMessage&QueueUrl=u&MessageBody=b&MessageSystemAttribute.1.Name=AWSTraceHeader' +
      '&MessageSystemAttribute.1.Value.DataType=String&MessageSystemAttribute.1.Value.StringValue=Root%3D1-a-b';
    assert.deepEqual(inputOf(body), {
      QueueUrl: 'u',
      MessageBody: 'b',
      MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: 'Root=1-a-b' } },
    });
  });
});

describe('decodeQuery: batch entries', () => {
  test('Given SendMessageBatch (botocore) with nested string, binary and system attributes, when decoding, then Entries', () => {
    // botocore: {'QueueUrl': 'http://localhost:4100/000000000000/q', 'Entries': [
    //   {'Id':'a','MessageBody':'hello world & more','DelaySeconds':3,
    //    'MessageAttributes':{'s':{'DataType':'String','StringValue':'v'},'b':{'DataType':'Binary','BinaryValue':b'\x00\x01\xff'}},
    //    'MessageSystemAttributes':{'AWSTraceHeader':{'DataType':'String','StringValue':'Root=1-5759e988-bd862e3fe1be46a994272793'}}},
    //   {'Id':'b','MessageBody':'x'}]}
    const body =
      'Action=SendMessageBatch&Version=2012-11-05&QueueUrl=http%3A%2F%2Flocalhost%3A4100%2F000000000000%2Fq' +
      '&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=hello+world+%26+more' +
      '&SendMessageBatchRequestEntry.1.DelaySeconds=3&SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=s' +
      '&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType=String' +
      '&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue=v' +
      '&SendMessageBatchRequestEntry.1.MessageAttribute.2.Name=b' +
      '&SendMessageBatchRequestEntry.1.MessageAttribute.2.Value.DataType=Binary' +
      '&SendMessageBatchRequestEntry.1.MessageAttribute.2.Value.BinaryValue=AAH%2F' +
      '&SendMessageBatchRequestEntry.1.MessageSystemAttribute.1.Name=AWSTraceHeader' +
      '&SendMessageBatchRequestEntry.1.MessageSystemAttribute.1.Value.DataType=String' +
      '&SendMessageBatchRequestEntry.1.MessageSystemAttribute.1.Value.StringValue=Root%3D1-5759e988-bd862e3fe1be46a994272793' +
      '&SendMessageBatchRequestEntry.2.Id=b&SendMessageBatchRequestEntry.2.MessageBody=x';
    assert.deepEqual(decode(body), {
      action: 'SendMessageBatch',
      input: {
        QueueUrl: 'http://localhost:4100/000000000000/q',
        Entries: [
          {
            Id: 'a',
            MessageBody: 'hello world & more',
            DelaySeconds: 3,
            MessageAttributes: {
              s: { DataType: 'String', StringValue: 'v' },
              b: { DataType: 'Binary', BinaryValue: 'AAH/' },
            },
            MessageSystemAttributes: {
              AWSTraceHeader: { DataType: 'String', StringValue: 'Root=1-5759e988-bd862e3fe1be46a994272793' },
            },
          },
          { Id: 'b', MessageBody: 'x' },
        ],
      },
    });
  });

  test('Given the API reference SendMessageBatch, when decoding, then the second entry carries its attribute', () => {
    // API_SendMessageBatch.html, "Using AWS query protocol" sample request.
    const body =
      'Action=SendMessageBatch&SendMessageBatchRequestEntry.1.Id=test_msg_001' +
      '&SendMessageBatchRequestEntry.1.MessageBody=test%20message%20body%201' +
      '&SendMessageBatchRequestEntry.2.Id=test_msg_002' +
      '&SendMessageBatchRequestEntry.2.MessageBody=test%20message%20body%202' +
      '&SendMessageBatchRequestEntry.2.DelaySeconds=60' +
      '&SendMessageBatchRequestEntry.2.MessageAttribute.1.Name=test_attribute_name_1' +
      '&SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.StringValue=test_attribute_value_1' +
      '&SendMessageBatchRequestEntry.2.MessageAttribute.1.Value.DataType=String';
    assert.deepEqual(inputOf(body, 'https://sqs.us-east-1.amazonaws.com/177715257436/MyQueue'), {
      Entries: [
        { Id: 'test_msg_001', MessageBody: 'test message body 1' },
        {
          Id: 'test_msg_002',
          MessageBody: 'test message body 2',
          DelaySeconds: 60,
          MessageAttributes: {
            test_attribute_name_1: { StringValue: 'test_attribute_value_1', DataType: 'String' },
          },
        },
      ],
      QueueUrl: 'https://sqs.us-east-1.amazonaws.com/177715257436/MyQueue',
    });
  });

  test('Given batch entries numbered out of order with a gap, when decoding, then entries sorted by index', () => {
    const body =
      'Action=DeleteMessageBatch&QueueUrl=u' +
      '&DeleteMessageBatchRequestEntry.12.Id=c&DeleteMessageBatchRequestEntry.12.ReceiptHandle=rc' +
      '&DeleteMessageBatchRequestEntry.2.ReceiptHandle=rb&DeleteMessageBatchRequestEntry.1.Id=a' +
      '&DeleteMessageBatchRequestEntry.2.Id=b&DeleteMessageBatchRequestEntry.1.ReceiptHandle=ra';
    assert.deepEqual(inputOf(body), {
      QueueUrl: 'u',
      Entries: [
        { Id: 'a', ReceiptHandle: 'ra' },
        { Id: 'b', ReceiptHandle: 'rb' },
        { Id: 'c', ReceiptHandle: 'rc' },
      ],
    });
  });

  test('Given ChangeMessageVisibilityBatch entries with integers, when decoding, then VisibilityTimeout numbers', () => {
    const body =
      'Action=ChangeMessageVisibilityBatch&QueueUrl=u' +
      '&ChangeMessageVisibilityBatchRequestEntry.1.Id=a' +
      '&ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle=r' +
      '&ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout=45';
    assert.deepEqual(inputOf(body), {
      QueueUrl: 'u',
      Entries: [{ Id: 'a', ReceiptHandle: 'r', VisibilityTimeout: 45 }],
    });
  });

  test('Given entries with message attributes numbered out of order, when decoding, then each entry keeps its own', () => {
    const body =
      'Action=SendMessageBatch&QueueUrl=u' +
      '&SendMessageBatchRequestEntry.2.MessageAttribute.2.Name=y' +
      '&SendMessageBatchRequestEntry.2.MessageAttribute.2.Value.DataType=Number' +
      '&SendMessageBatchRequestEntry.2.MessageAttribute.2.Value.StringValue=2' +
      '&SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=x' +
      '&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType=String' +
      '&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue=1' +
      '&SendMessageBatchRequestEntry.1.Id=one&SendMessageBatchRequestEntry.1.MessageBody=b1' +
      '&SendMessageBatchRequestEntry.2.Id=two&SendMessageBatchRequestEntry.2.MessageBody=b2';
    assert.deepEqual(inputOf(body), {
      QueueUrl: 'u',
      Entries: [
        { Id: 'one', MessageBody: 'b1', MessageAttributes: { x: { DataType: 'String', StringValue: '1' } } },
        { Id: 'two', MessageBody: 'b2', MessageAttributes: { y: { DataType: 'Number', StringValue: '2' } } },
      ],
    });
  });
});

describe('decodeQuery: hostile parameters', () => {
  test('Given many random parameter names and values, when decoding, then only SqsErrors are thrown', () => {
    let seed = 4242;
    const next = (): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    const names = [
      'SendMessageBatchRequestEntry',
      'MessageAttribute',
      'Attribute',
      'Tag',
      'Value',
      'Name',
      'Key',
      'StringValue',
      'StringListValue',
      'DataType',
      'Id',
      'DelaySeconds',
      'AttributeName',
      'QueueUrl',
      'x',
      '__proto__',
    ];
    const indices = ['1', '2', '0', '10', '', 'a', '99999999999', '-1'];
    const values = ['', 'x', '1', '1.5', '%zz', '+', 'true'];
    const actions = ['SendMessage', 'SendMessageBatch', 'CreateQueue', 'ReceiveMessage', 'TagQueue', 'Nope'];
    for (let i = 0; i < 3000; i++) {
      const params = new URLSearchParams();
      params.append('Action', actions[next() % actions.length] ?? 'SendMessage');
      const count = next() % 8;
      for (let j = 0; j < count; j++) {
        const parts: string[] = [];
        const depth = 1 + (next() % 6);
        for (let d = 0; d < depth; d++) {
          parts.push(
            d % 2 === 0 ? (names[next() % names.length] ?? 'x') : (indices[next() % indices.length] ?? '1'),
          );
        }
        params.append(parts.join('.'), values[next() % values.length] ?? '');
      }
      try {
        decodeQuery(params, 'u');
      } catch (err) {
        assert.ok(err instanceof SqsError, `${params.toString()}: ${String(err)}`);
      }
    }
  });
});
