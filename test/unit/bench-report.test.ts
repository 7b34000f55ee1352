import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { computeChecks, computeRatios } from '../../scripts/bench/report.js';
import type { Result } from '../../scripts/bench/scenarios.js';

/** A send run at `reqPerSec`, with the server's CPU at 100 % so per-core equals measured. */
function send(target: Result['target'], reqPerSec: number, round?: number): Result {
  const r: Result = {
    target,
    protocol: 'json',
    scenario: 'send',
    variant: '',
    errors: 0,
    errorSamples: [],
    durationS: 10,
    requests: reqPerSec * 10,
    messages: reqPerSec * 10,
    reqPerSec,
    msgsPerSec: reqPerSec,
    latencyOf: 'request',
    latency: null,
    serverRssBefore: null,
    serverRssAfter: null,
    serverCpuPct: 100,
    loadCpuPct: 50,
    otherCpuPct: 0,
    stealCpuPct: 0,
    extra: {},
  };
  if (round !== undefined) r.round = round;
  return r;
}

/** One round per [shared-sqs, bare fastify] pair of req/s. */
function rounds(...pairs: [number, number][]): Result[] {
  return pairs.flatMap(([s, f], i) => [send('shared-sqs', s, i + 1), send('fastify', f, i + 1)]);
}

const sendCheck = (results: Result[]) =>
  computeChecks(results).find((c) => c.target.startsWith('SendMessage ≥ 0.8×'));
const sendRatio = (results: Result[]) =>
  computeRatios(results).find((r) => r.name === 'send json: shared-sqs / fastify (req/s)');

describe('bench report over rounds', () => {
  test('one round: the ratio of its two runs', () => {
    const rs = [send('shared-sqs', 30_000), send('fastify', 40_000)];
    assert.equal(sendRatio(rs)?.value, 0.75);
    assert.equal(sendCheck(rs)?.met, false);
  });

  test('each round is paired with itself, and the round of median ratio is reported', () => {
    // The machine is twice as fast in round 2: pairing across rounds (30k / 80k, 60k / 40k) would
    // give 0.375 or 1.5; within rounds the ratios are 0.75, 0.75 and 0.9.
    const rs = rounds([30_000, 40_000], [60_000, 80_000], [36_000, 40_000]);
    const ratio = sendRatio(rs);
    assert.equal(ratio?.value, 0.75);
    assert.match(ratio?.detail ?? '', /median of 3 rounds: 0\.75×, 0\.75×, 0\.90×/);
    const check = sendCheck(rs);
    assert.equal(check?.value, 0.75);
    assert.equal(check?.met, false);
    assert.match(check?.measured ?? '', /median of 3 rounds: 0\.750, 0\.750, 0\.900/);
  });

  test('a single disturbed round does not decide the verdict', () => {
    const rs = rounds([34_000, 40_000], [10_000, 40_000], [33_000, 40_000]);
    const check = sendCheck(rs);
    assert.equal(check?.value, 0.825);
    assert.equal(check?.met, true);
  });

  test('with an even count of rounds, the middle value on the failing side is taken', () => {
    const rs = rounds([34_000, 40_000], [30_000, 40_000]);
    assert.equal(sendCheck(rs)?.value, 0.75);
    assert.equal(sendCheck(rs)?.met, false);
  });
});

describe('bench report: the floor', () => {
  const ratio = (results: Result[], name: string) => computeRatios(results).find((r) => r.name === name);

  test('floor / fastify and shared-sqs / floor, when the floor ran', () => {
    const rs = [send('shared-sqs', 30_000), send('fastify', 40_000), send('floor', 32_000)];
    assert.equal(ratio(rs, 'send json: floor / fastify (msgs/s)')?.value, 0.8);
    assert.equal(ratio(rs, 'send json: shared-sqs / floor (msgs/s)')?.value, 0.9375);
  });

  test('no floor lines without a floor run', () => {
    const rs = [send('shared-sqs', 30_000), send('fastify', 40_000)];
    assert.equal(
      computeRatios(rs).some((r) => r.name.includes('floor')),
      false,
    );
  });
});
