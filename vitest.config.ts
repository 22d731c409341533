import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/support/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: integration tests start real hub processes; keep the parallelism modest.
    maxWorkers: 2,
    // one Chromium for the run, which the browser tests connect to (test/support/browser.ts)
    globalSetup: ['test/support/browser-server.ts'],
    // the longest files first, so the two workers finish together (test/support/sequencer.ts)
    sequence: { sequencer: SlowFirstSequencer },
  },
});
