import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/support/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: integration tests start real hub processes; keep the parallelism modest.
    maxWorkers: 2,
    // Each worker process runs its files one after another without being restarted for each: every
    // file still imports its own test module, but the modules they share (the hub's, playwright's,
    // the AWS SDK's) are loaded once per worker instead of once per file, which was close to a second
    // of a worker's time for each of the 200-odd files. The tests keep no state across files (each
    // starts its own hub, data directory, Redis prefix and browser context).
    isolate: false,
    // one Chromium for the run, which the browser tests connect to (test/support/browser.ts)
    globalSetup: ['test/support/browser-server.ts'],
    // the longest files first, so the two workers finish together (test/support/sequencer.ts)
    sequence: { sequencer: SlowFirstSequencer },
  },
});
