/**
 * The dead-letter queue scenarios (test/support/scenarios-dlq.ts) through @aws-sdk/client-sqs, the
 * JSON 1.0 protocol.
 */
import * as nodeTest from 'node:test';
import { SDK_V3, withClient } from '../support/clients.js';
import { dlqScenarios } from '../support/scenarios-dlq.js';

withClient(nodeTest, SDK_V3, dlqScenarios);
