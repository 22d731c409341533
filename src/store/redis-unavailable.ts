import type { Redis } from 'ioredis';
import { AppError } from '../errors.js';

/**
 * Redis out of reach, failing over, or not enough replicas: the Store answers AppError
 * unavailable/store_unavailable (503 with Retry-After), never a 500 and never later than the
 * operation's time limit (REDIS_OP_TIMEOUT_MS). The write of an update that ended so may have
 * happened (docs/deploy.md); on a cluster a master failing over (CLUSTERDOWN, redirections that run
 * out while the slots move) is the same. The idempotency keys and the atomic updates make the retry safe.
 */

/** Seconds a client is told to wait (Retry-After) after store_unavailable. */
export const STORE_RETRY_AFTER_S = 1;

export function storeUnavailable(message: string, details: Record<string, unknown> = {}): AppError {
  return new AppError('unavailable', 'store_unavailable', message, { ...details, retry_after_s: STORE_RETRY_AFTER_S });
}

const CONNECTION_FAILURE =
  /Connection is closed|Command timed out|Stream isn't writeable|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|connect ETIMEDOUT|All sentinels are unreachable|Failed to connect|READONLY|LOADING|MASTERDOWN|NOREPLICAS|TRYAGAIN|CLUSTERDOWN|Too many Cluster redirections|Reached the max retries/;

/** Whether `err` says Redis could not be reached or could not take the command now. */
export function isConnectionFailure(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'MaxRetriesPerRequestError') return true;
  return CONNECTION_FAILURE.test(err.message);
}

/** Runs one Store operation within `ms`; a connection failure or the time limit becomes store_unavailable. */
export function bounded<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(storeUnavailable(`the store did not answer within ${ms} ms`, { timeout_ms: ms })), ms);
  });
  return Promise.race([p, limit])
    .catch((err: unknown) => {
      if (isConnectionFailure(err)) throw storeUnavailable(`the store is not reachable: ${(err as Error).message}`);
      throw err;
    })
    .finally(() => clearTimeout(timer));
}

/**
 * WAIT for `replicas` acknowledgements of the writes this connection sent so far; fewer within
 * `timeoutMs` is store_unavailable (the write is on the primary but not yet on enough replicas).
 */
export async function waitReplicas(conn: Redis, replicas: number, timeoutMs: number): Promise<void> {
  const acked = Number(await conn.call('WAIT', replicas, timeoutMs));
  if (acked < replicas) {
    throw storeUnavailable(`the write reached ${acked} of ${replicas} required replica(s) within ${timeoutMs} ms; it may have happened, retry is safe`, {
      acked,
      required: replicas,
    });
  }
}
