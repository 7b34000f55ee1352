// The registry lives beside the bench's other process helpers, which use it too.
export { track } from '../../scripts/bench/proc.js';
