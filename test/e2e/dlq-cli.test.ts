/**
 * The dead-letter queue scenarios (test/support/scenarios-dlq.ts) through Debian's aws-cli 2.9 at
 * /usr/bin/aws, the Query protocol (form POST, XML replies).
 */
import { AWS_CLI, withClient } from '../support/clients.js';
import { testsRequiring } from '../support/requires.js';
import { dlqScenarios } from '../support/scenarios-dlq.js';

withClient(testsRequiring('aws'), AWS_CLI, dlqScenarios);
