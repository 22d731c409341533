import { describe, expect, it } from 'vitest';
import { warmUp } from '../../src/trading/tasks.js';
import { TradingPool } from '../../src/workers/pool.js';

describe('the Piscina pool of trading workers', () => {
  it('warms each thread with a task of its own, and that task gives what it gives in process', async () => {
    const pool = new TradingPool(2);
    try {
      // the pool has queued one warm-up per thread already; one more runs after them
      expect(await pool.run({ kind: 'warmup' })).toEqual({ ok: true, value: warmUp() });
    } finally {
      await pool.close();
    }
  });

  it('closes at once, even while its threads are warming up', async () => {
    for (let i = 0; i < 5; i++) {
      const pool = new TradingPool(2);
      await pool.close();
    }
    const pool = new TradingPool(1);
    try {
      expect((await pool.run({ kind: 'warmup' })).ok).toBe(true);
    } finally {
      await pool.close();
    }
  });
});
