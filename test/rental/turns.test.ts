import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { Turns } from '../../src/rental/routes.js';

describe('download turns', () => {
  it('runs at most N at once, queues a bounded number, refuses the rest with 503 busy', async () => {
    const turns = new Turns(2, 1);
    const gates: (() => void)[] = [];
    const started: number[] = [];
    const job = (n: number) => () =>
      new Promise<number>((resolve) => {
        started.push(n);
        gates.push(() => resolve(n));
      });
    const a = turns.run(job(1));
    const b = turns.run(job(2));
    const c = turns.run(job(3));
    await Promise.resolve();
    expect(started).toEqual([1, 2]);
    const refused = await turns.run(job(4)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ status: 503, code: 'busy', details: { retry_after_s: 1 } });
    gates[0]!();
    expect(await a).toBe(1);
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([1, 2, 3]);
    gates[1]!();
    gates[2]!();
    expect(await Promise.all([b, c])).toEqual([2, 3]);
  });
});
