import { expect } from 'vitest';

export interface Refusal {
  status: number;
  code: string;
  message: string;
  details?: unknown;
}

/**
 * The AppError a promise rejects with, as {status, code, message} (and `details` when asked), for
 * tests that compare refusals with toEqual. The error type is imported when called, so a test that
 * reloads its modules (vi.resetModules, as the rule tests do) checks against the current class.
 */
export async function refusal(p: Promise<unknown>, opts: { details?: boolean } = {}): Promise<Refusal> {
  const { AppError } = await import('../../src/errors.js');
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e, 'expected a refusal').toBeInstanceOf(AppError);
  const a = e as InstanceType<typeof AppError>;
  const out: Refusal = { status: a.status, code: a.code, message: a.message };
  if (opts.details) out.details = a.details;
  return out;
}
