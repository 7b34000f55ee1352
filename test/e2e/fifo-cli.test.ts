/**
 * The FIFO scenarios (test/support/scenarios-fifo.ts) through Debian's aws-cli 2.9 at /usr/bin/aws,
 * the Query protocol (form POST, XML replies).
 */
import { AWS_CLI, withClient } from '../support/clients.js';
import { testsRequiring } from '../support/requires.js';
import { fifoScenarios } from '../support/scenarios-fifo.js';

withClient(testsRequiring('aws'), AWS_CLI, fifoScenarios);
