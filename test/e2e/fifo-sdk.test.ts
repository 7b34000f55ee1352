/**
 * The FIFO scenarios (test/support/scenarios-fifo.ts) through @aws-sdk/client-sqs, the JSON 1.0
 * protocol.
 */
import * as nodeTest from 'node:test';
import { SDK_V3, withClient } from '../support/clients.js';
import { fifoScenarios } from '../support/scenarios-fifo.js';

withClient(nodeTest, SDK_V3, fifoScenarios);
