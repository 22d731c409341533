import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest (measured on the two-core CI machine), started first so that the two
 * workers end together instead of one waiting out a long file started last. Vitest orders by the
 * durations of its last run when it has them, which a fresh CI checkout never has (the cache lives in
 * node_modules/.vite). A file missing here or renamed only runs in the default order.
 */
const SLOW_FIRST = [
  'e2e/demo-tour.test.ts',
  'e2e/pages-quality.test.ts',
  'ha/failover.test.ts',
  'e2e/pages-quality-phone.test.ts',
  'e2e/docs-journeys.test.ts',
  'ha/startup.test.ts',
  'trading/programs-processes.test.ts',
  'e2e/scan-offline.test.ts',
  'payment/crash-kill.test.ts',
  'ha/queue-failover.test.ts',
  'trading/queue.test.ts',
  'ha/failover-writes.test.ts',
  'e2e/docs-coedit.test.ts',
  'payment/books.property.test.ts',
  'integration/processes.test.ts',
  'e2e/chat-guided.test.ts',
  'hub/route-fuzz.test.ts',
  'e2e/wallet.test.ts',
  'e2e/start-banner.test.ts',
  'ha/redis-down-streams.test.ts',
  'ha/rooms-resync.test.ts',
  'e2e/scan-resume.test.ts',
].map((f) => `/test/${f}`);

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = SLOW_FIRST.findIndex((s) => f.moduleId.replaceAll('\\', '/').endsWith(s));
      return i === -1 ? SLOW_FIRST.length : i;
    };
    // stable: the rest keep the order vitest gave them
    return sorted.map((f, i) => ({ f, i, r: rank(f) })).sort((a, b) => a.r - b.r || a.i - b.i).map((x) => x.f);
  }
}
