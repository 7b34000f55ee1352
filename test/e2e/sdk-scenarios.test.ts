/**
 * The JSON 1.0 protocol through @aws-sdk/client-sqs, running the scenarios of
 * test/support/boto3-scenarios.ts (shared with boto3-query.test.ts and boto3-json.test.ts) by way
 * of test/support/sdk-calls.ts, so they hold for the SDK v3 clients too.
 */
import assert from 'node:assert/strict';
import { boto3Scenarios } from '../support/boto3-scenarios.js';
import { sdkCalls } from '../support/sdk-calls.js';

boto3Scenarios({
  run: sdkCalls,
  protocol: 'json',
  client: 'SDK v3',
  expectVersions: (run) => assert.match(run.boto3, /^@aws-sdk\/client-sqs 3\.\d+\.\d+$/),
});
