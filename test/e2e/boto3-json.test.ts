/**
 * The JSON 1.0 protocol (`X-Amz-Target: AmazonSQS.*`) through a current boto3 (botocore >= 1.31,
 * whose SQS model says `"protocol": "json"`), by way of test/fixtures/boto3_calls.py, run by the
 * first python that has one: `python3` on PATH, then pyenv's shim (see findCurrentBoto3 in
 * test/support/boto3.ts; Debian's /usr/bin/python3 is never taken). The scenarios are
 * test/support/boto3-scenarios.ts, shared with boto3-query.test.ts. PyPI cannot be reached, so a
 * machine without such a python skips these tests rather than installing one.
 */
import assert from 'node:assert/strict';
import { findCurrentBoto3 } from '../support/boto3.js';
import { boto3Scenarios } from '../support/boto3-scenarios.js';

const current = findCurrentBoto3();

boto3Scenarios({
  python: current?.python ?? 'python3',
  protocol: 'json',
  client: current === undefined ? 'current boto3' : `boto3 ${current.boto3} (${current.python})`,
  ...(current === undefined
    ? { skip: 'no python3 with boto3 >= 1.31 (botocore SQS model "json") on PATH or under pyenv' }
    : {}),
  expectVersions: (run) => {
    const [major = 0, minor = 0] = run.botocore.split('.').map(Number);
    assert.ok(major > 1 || (major === 1 && minor >= 31), `botocore ${run.botocore} >= 1.31`);
    assert.equal(run.botocore, current?.botocore);
    assert.equal(run.boto3, current?.boto3);
  },
});
