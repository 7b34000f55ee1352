#!/usr/bin/env -S node --initial-old-space-size=512
// The flag: V8 runs no major collection (each one marks every queued message, stalling the one
// thread) until the old generation reaches 512 MB; docs/operations.md, "Memory and GC". Node
// refuses it in NODE_OPTIONS, so every launcher (this line, `npm start`, the systemd unit) carries
// it, and test/unit/deploy-kit.test.ts keeps them alike.
import '../dist/main.js';
