import type { Write } from './port.js';

/**
 * Argument checks shared by both Store adapters, so a bad call fails the same way on LMDB and on
 * Redis (and before anything is written).
 */

export function checkKey(key: unknown, what = 'key'): string {
  if (typeof key !== 'string') throw new TypeError(`${what} must be a string`);
  return key;
}

export function encodeJson(value: unknown): string {
  const text = JSON.stringify(value);
  if (typeof text !== 'string') throw new TypeError('value is not JSON-serialisable');
  return text;
}

export function checkTtl(ttlMs: unknown): number | undefined {
  if (ttlMs === undefined) return undefined;
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new RangeError('ttlMs must be a positive number of milliseconds');
  }
  return Math.ceil(ttlMs);
}

export function checkCap(cap: unknown): number {
  if (typeof cap !== 'number' || !Number.isSafeInteger(cap) || cap < 1) {
    throw new RangeError('cap must be a positive integer');
  }
  return cap;
}

/** A finite score; -0 becomes 0 so both adapters order and compare it the same way. */
export function checkScore(score: unknown): number {
  if (typeof score !== 'number' || !Number.isFinite(score)) {
    throw new RangeError('score must be a finite number');
  }
  return score === 0 ? 0 : score;
}

export function checkInt(n: unknown, what: string): number {
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) {
    throw new RangeError(`${what} must be an integer`);
  }
  return n;
}

/** A write with its fields checked and its value already serialised. */
export type PreparedWrite =
  | { op: 'set'; key: string; json: string; ttlMs: number | undefined }
  | { op: 'del'; key: string }
  | { op: 'push'; key: string; json: string; cap: number }
  | { op: 'index'; key: string; member: string; score: number }
  | { op: 'unindex'; key: string; member: string }
  | { op: 'incr'; key: string; by: number };

export function prepareWrite(w: Write): PreparedWrite {
  if (!w || typeof w !== 'object') throw new TypeError('write must be an object');
  switch (w.op) {
    case 'set':
      return { op: 'set', key: checkKey(w.key), json: encodeJson(w.value), ttlMs: checkTtl(w.ttlMs) };
    case 'del':
      return { op: 'del', key: checkKey(w.key) };
    case 'push':
      return { op: 'push', key: checkKey(w.key), json: encodeJson(w.value), cap: checkCap(w.cap) };
    case 'index':
      return { op: 'index', key: checkKey(w.key), member: checkKey(w.member, 'member'), score: checkScore(w.score) };
    case 'unindex':
      return { op: 'unindex', key: checkKey(w.key), member: checkKey(w.member, 'member') };
    case 'incr':
      return { op: 'incr', key: checkKey(w.key), by: checkInt(w.by, 'by') };
    default:
      throw new TypeError(`unknown write op ${JSON.stringify((w as { op?: unknown }).op)}`);
  }
}
