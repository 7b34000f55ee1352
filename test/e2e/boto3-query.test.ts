/**
 * The Query protocol (form POST + XML) through Debian's python3-boto3 1.26 (`/usr/bin/python3`,
 * botocore 1.29, whose SQS model says `"protocol": "query"`), by way of test/fixtures/boto3_calls.py.
 * The scenarios are test/support/boto3-scenarios.ts, shared with boto3-json.test.ts. Skipped
 * without Debian's boto3 outside CI, failed under CI=true (test/support/requires.ts).
 */
import assert from 'node:assert/strict';
import { boto3Scenarios } from '../support/boto3-scenarios.js';
import { requires } from '../support/requires.js';
import { DEBIAN_PYTHON } from '../support/server.js';

boto3Scenarios({
  python: DEBIAN_PYTHON,
  protocol: 'query',
  client: 'Debian boto3 1.26',
  ...requires('boto3'),
  expectVersions: (run) => {
    assert.match(run.boto3, /^1\.26\./);
    assert.match(run.botocore, /^1\.29\./);
  },
});
