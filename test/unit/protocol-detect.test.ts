import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { detectProtocol } from '../../src/protocol/detect.js';

describe('detectProtocol', () => {
  test('Given an X-Amz-Target header, when detecting, then the request is JSON', () => {
    assert.equal(detectProtocol({ 'x-amz-target': 'AmazonSQS.ListQueues' }), 'json');
  });

  test('Given an X-Amz-Target header with a form content type (older Query clients), when detecting, then the content type wins: Query', () => {
    for (const contentType of [
      'application/x-www-form-urlencoded',
      'application/x-www-form-urlencoded; charset=utf-8',
      'Application/X-WWW-Form-Urlencoded;charset=UTF-8',
    ]) {
      assert.equal(
        detectProtocol({ 'x-amz-target': 'AmazonSQSv20121105.ListQueues', 'content-type': contentType }),
        'query',
        contentType,
      );
    }
  });

  test('Given an X-Amz-Target header with a content type that is neither form nor x-amz-json, when detecting, then the target makes it JSON', () => {
    for (const contentType of ['text/plain', 'application/json', 'application/x-www-form-urlencodedx', '']) {
      assert.equal(
        detectProtocol({ 'x-amz-target': 'AmazonSQS.ListQueues', 'content-type': contentType }),
        'json',
        contentType,
      );
    }
  });

  test('Given an X-Amz-Target header with the JSON content type, when detecting, then the request is JSON', () => {
    assert.equal(
      detectProtocol({
        'x-amz-target': 'AmazonSQS.ListQueues',
        'content-type': 'application/x-amz-json-1.0',
      }),
      'json',
    );
  });

  test('Given only an x-amz-json-1.0 content type, when detecting, then the request is JSON', () => {
    assert.equal(detectProtocol({ 'content-type': 'application/x-amz-json-1.0' }), 'json');
  });

  test('Given an upper-case x-amz-json content type with parameters, when detecting, then the request is JSON', () => {
    assert.equal(detectProtocol({ 'content-type': 'Application/X-Amz-Json-1.1; charset=utf-8' }), 'json');
  });

  test('Given a form content type, when detecting, then the request is Query', () => {
    assert.equal(
      detectProtocol({ 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' }),
      'query',
    );
  });

  test('Given no headers at all (a GET with a query string), when detecting, then the request is Query', () => {
    assert.equal(detectProtocol({}), 'query');
  });

  test('Given a plain application/json content type, when detecting, then the request is Query', () => {
    assert.equal(detectProtocol({ 'content-type': 'application/json' }), 'query');
  });

  test('Given a repeated X-Amz-Target header, when detecting, then the request is JSON', () => {
    assert.equal(
      detectProtocol({ 'x-amz-target': ['AmazonSQS.ListQueues', 'AmazonSQS.ListQueues'] }),
      'json',
    );
  });
});
