import fc from 'fast-check';
import { rmSync } from 'node:fs';
import { describe, it } from 'vitest';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { openRedisStore } from '../../src/store/redis.js';
import { tempDir } from '../support/process.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';
import { collateral, commandsOf, holds, invariants, reconciliation, reversals, setup } from './books-model.js';

/**
 * Model-based properties of the payment books (issue 23): fc.commands run on the real relay services
 * over a real store (LMDB in a temp dir, and Redis, where a second client plays a second hub process
 * for the webhook that races the pull) and on the model in books-model.ts. After every
 * command: the stored transfers are exactly the model's and byte-identical to their first writing,
 * every balance is the fold of the log and equals the model's, the ledger check passes, a payment is
 * credited at most once whatever the order of webhook and pull, a hold past its deadline is voided
 * once with a warning (its funds back in escrow), and a challenge's refund is what it still holds.
 */

const redis = await redisOrSkip();
/** BOOKS_PROPERTY_RUNS=n multiplies every property's runs (a longer search than CI's). */
const SCALE = Math.max(1, Number(process.env.BOOKS_PROPERTY_RUNS ?? 1) || 1);

interface Backend {
  name: string;
  skip: boolean;
  /** A fresh store, and a second client of it where the store is shared by processes. */
  open(): Promise<{ store: Store; peer: Store; drop(): Promise<void> }>;
}
const backends: Backend[] = [
  {
    name: 'LMDB',
    skip: false,
    async open() {
      const dir = tempDir('books-prop');
      const store = await openLmdbStore({ path: dir });
      return { store, peer: store, drop: async () => (await store.close(), rmSync(dir, { recursive: true, force: true })) };
    },
  },
  {
    name: 'Redis',
    skip: !redis.available,
    async open() {
      const prefix = uniquePrefix('books-prop');
      const store = await openRedisStore({ url: redis.url, prefix });
      const peer = await openRedisStore({ url: redis.url, prefix });
      return {
        store,
        peer,
        drop: async () => {
          await Promise.all([store.close(), peer.close()]);
          await deletePrefix(redis.url, prefix);
        },
      };
    },
  },
];

const PROPERTIES = [
  { name: 'reconciliation: a webhook and a pull for the same payment credit once, in any order', arbs: reconciliation, runs: 25, max: 30 },
  { name: 'holds with a deadline: paid, held, approved, rejected, or voided once with a warning at the deadline', arbs: holds, runs: 40, max: 30 },
  { name: 'reversals of payouts, approved holds and on-ramp credits: once, never of a reversal, a hold or a void', arbs: [...holds, ...reconciliation, ...reversals, ...reversals], runs: 20, max: 40 },
  { name: 'collateral per challenge: deductions lower their own challenge, a refund is what it still holds', arbs: collateral, runs: 25, max: 30 },
  { name: 'all of it at once', arbs: [...reconciliation, ...holds, ...reversals, ...collateral], runs: 15, max: 50 },
];

for (const b of backends) {
  describe.skipIf(b.skip)(`payment books as a model (fc.commands, ${b.name})`, () => {
    for (const p of PROPERTIES) {
      it(p.name, { timeout: 60_000 * SCALE }, async () => {
        await fc.assert(
          fc.asyncProperty(commandsOf(p.arbs, p.max), async (cmds) => {
            const { store, peer, drop } = await b.open();
            try {
              const world = await setup(store, peer);
              await invariants(world.model, world.real);
              await fc.asyncModelRun(() => world, cmds);
            } finally {
              await drop();
            }
          }),
          { numRuns: p.runs * SCALE },
        );
      });
    }
  });
}
