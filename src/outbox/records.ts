import type { Logger } from 'pino';
import { PARTITIONS, partitionKey, partitionOf, type Json, type Write } from '../store/port.js';

/**
 * The durable outbox's records: messages to external peers, written in the same atomic store update as the
 * state change that causes them, and delivered in the background.
 *
 * Store layout (every key under the adapter's own namespace), per partition (docs/partitions.md): a
 * message lives in the partition of the business update that wrote it (`outboxWrites(item, near)`:
 * the partition of the key `near`), so the state change and its message are one update of one
 * partition; p below is that partition, and a message is named by its id and p.
 * - `outbox:msg:{#p}:<id>`  the message record (OutboxRecord): item + attempts, due, lastError, claim;
 * - `outbox:due:{#p}`       ordered index, member = id, score = time of the next attempt (ms);
 * - `outbox:created:{#p}`   ordered index, member = id, score = createdAt (listing, oldest pending);
 * - `outbox:held:<dest>:{#p}` ordered index, member = id, score = createdAt: items kept for a peer
 *                       that is not configured (out of the due index, so nothing attempts them);
 * - `outbox:stat:delivered`, `outbox:stat:failed`  counters (each raised on its own, after an update).
 * The dispatcher walks the 64 partitions (and the global layout below) and merges them by time.
 *
 * The global layout, written before the partitions and still by an `outboxWrites` without `near`
 * (a service not yet partitioned): `outbox:msg:<id>`, `outbox:due`, `outbox:created`,
 * `outbox:held:<dest>`. It is read as before: when the dispatcher meets such an item it first moves
 * it, as it is, into the partition of its record key (one update: that key's aggregate and its
 * partition's keys), then drops its global index entries; so no migration is needed.
 *
 * Delivery is at-least-once. Each attempt first claims the record atomically (store.update on the
 * record: only when its due time has passed, moving it forward by a lease and stamping a claim
 * token), so processes sharing one Redis never deliver the same item at the same time. Success
 * deletes the record only while the claim token is still ours; failure reschedules it with
 * exponential backoff and jitter. A process that dies mid-delivery leaves a claim whose lease
 * expires, after which any process delivers the item again. Peers receive the item id as an
 * idempotency key, so a repeated delivery is harmless.
 */

export interface OutboxItem {
  /** Unique and stable: the peer's idempotency key. */
  id: string;
  /** Which deliverer handles it ('value', 'task-ledger', ...). */
  dest: string;
  payload: Json;
  /** Unix milliseconds. */
  createdAt: number;
}

/** What the store keeps for a pending item. */
export interface OutboxRecord extends OutboxItem {
  /** Attempts started so far. */
  attempts: number;
  /** Next attempt not before this instant (ms); while claimed, the end of the lease. */
  due: number;
  lastAttemptAt?: number;
  lastError?: string;
  /** The backoff chosen after the last failure (ms). */
  lastDelayMs?: number;
  /** Claim token of the delivery in flight. */
  claim?: string;
}

export interface OutboxPending extends Omit<OutboxRecord, 'claim'> {
  /** The partition the item lives in (absent: the global layout, not yet moved). */
  partition?: number;
  /** A process holds an unexpired claim on it (a delivery is in flight). */
  inFlight: boolean;
}

export interface OutboxStats {
  /** Items not yet delivered, held ones included. */
  pending: number;
  /** Of those, the items kept for a peer this process has not configured (see `held`). */
  held: number;
  delivered: number;
  failedAttempts: number;
  /** createdAt of the oldest pending item. */
  oldestPendingAt?: number;
}

/**
 * Delivers one item; resolves when the peer acknowledged it, rejects otherwise. The signal aborts
 * when the attempt runs out of time or the outbox stops; a deliverer should pass it to its I/O.
 */
export interface Deliver {
  (item: OutboxItem, signal: AbortSignal): Promise<void>;
  /**
   * Set on the deliverer of a peer that is not configured (see `notConfigured`): the outbox then
   * keeps that destination's items without attempting them, says so once in the log and at
   * /readyz, and delivers them once a process with the peer configured starts.
   */
  readonly held?: string;
}

/**
 * The deliverer of a peer that is not configured: `reason` says what is missing (it is what the log
 * line and /readyz show). Called directly it rejects with `error()`.
 */
export function notConfigured(reason: string, error: () => Error = () => new Error(reason)): Deliver {
  return Object.assign(async () => {
    throw error();
  }, { held: reason });
}

/** The queue of one destination, as the operator console shows it (Outbox.destinations). */
export interface OutboxDestination {
  dest: string;
  /** Items not yet delivered. */
  pending: number;
  /** Of those: being delivered now, waiting for a retry after a failed attempt, kept for a peer not configured. */
  in_flight: number;
  retrying: number;
  held: number;
  /** createdAt of the oldest pending item (ms), null when none. */
  oldest_at: number | null;
}

/** One destination whose items are kept because its peer is not configured. */
export interface OutboxHold {
  dest: string;
  reason: string;
  items: number;
}

export type OutboxLogger = Pick<Logger, 'warn' | 'error' | 'debug'>;

/** The global layout's indexes (items written without a partition, read and moved by the dispatcher). */
export const OUTBOX_DUE = 'outbox:due';
export const OUTBOX_CREATED = 'outbox:created';
export const STAT_DELIVERED = 'outbox:stat:delivered';
export const STAT_FAILED = 'outbox:stat:failed';

/** Where an item lives: a partition (0..63), or undefined for the global layout. */
export type OutboxPart = number | undefined;

/** The global layout first, then every partition: what the dispatcher and the listings walk. */
export const OUTBOX_PARTS: readonly OutboxPart[] = [undefined, ...Array.from({ length: PARTITIONS }, (_, n) => n)];

/** The due index of partition p (of the global layout without p). */
export function outboxDueKey(p?: number): string {
  return p === undefined ? OUTBOX_DUE : partitionKey(OUTBOX_DUE, p);
}

/** The created index of partition p (of the global layout without p). */
export function outboxCreatedKey(p?: number): string {
  return p === undefined ? OUTBOX_CREATED : partitionKey(OUTBOX_CREATED, p);
}

/** The index of the items kept for `dest` while its peer is not configured (in partition p). */
export function outboxHeldKey(dest: string, p?: number): string {
  return p === undefined ? `outbox:held:${dest}` : partitionKey(`outbox:held:${dest}`, p);
}

/**
 * The store key of an item's record in partition p (in the global layout without p): include it in
 * an update's read set to look before enqueuing.
 */
export function outboxKey(id: string, p?: number): string {
  return p === undefined ? `outbox:msg:${id}` : `${partitionKey('outbox:msg', p)}:${id}`;
}

/** The partition an item written beside the key `near` lives in (the partition of near's aggregate). */
export function outboxPartition(near: string): number {
  return partitionOf(near);
}

/** The partition a global-layout item is moved into: the partition of its record key's aggregate. */
export function legacyPartition(id: string): number {
  return partitionOf(outboxKey(id));
}

function checkItem(item: OutboxItem): void {
  if (typeof item.id !== 'string' || item.id.length === 0 || item.id.length > 512) {
    throw new TypeError('outbox item id must be a non-empty string (at most 512 characters)');
  }
  if (typeof item.dest !== 'string' || item.dest.length === 0) throw new TypeError('outbox item needs a dest');
  if (!Number.isFinite(item.createdAt)) throw new TypeError('outbox item createdAt must be a number');
}

/** The stored form of a record (the codec's encoder). */
export function recordJson(rec: OutboxRecord): Json {
  const out: { [key: string]: Json } = {
    id: rec.id,
    dest: rec.dest,
    payload: rec.payload,
    createdAt: rec.createdAt,
    attempts: rec.attempts,
    due: rec.due,
  };
  if (rec.lastAttemptAt !== undefined) out.lastAttemptAt = rec.lastAttemptAt;
  if (rec.lastError !== undefined) out.lastError = rec.lastError;
  if (rec.lastDelayMs !== undefined) out.lastDelayMs = rec.lastDelayMs;
  if (rec.claim !== undefined) out.claim = rec.claim;
  return out;
}

/** A stored record read back, or undefined when the value is not one (the codec's decoder). */
export function parseRecord(value: Json | undefined): OutboxRecord | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const { id, dest, createdAt, attempts, due } = value;
  if (typeof id !== 'string' || typeof dest !== 'string') return undefined;
  if (typeof createdAt !== 'number' || typeof attempts !== 'number' || typeof due !== 'number') return undefined;
  const rec: OutboxRecord = { id, dest, payload: value.payload ?? null, createdAt, attempts, due };
  if (typeof value.lastAttemptAt === 'number') rec.lastAttemptAt = value.lastAttemptAt;
  if (typeof value.lastError === 'string') rec.lastError = value.lastError;
  if (typeof value.lastDelayMs === 'number') rec.lastDelayMs = value.lastDelayMs;
  if (typeof value.claim === 'string') rec.claim = value.claim;
  return rec;
}

/**
 * The writes that durably enqueue an item: its record, its entry in the due index (due at
 * createdAt, i.e. at once) and in the created index. Pure; put them into the same store.update
 * plan as the state change so both land or neither. `near` is a key of that update: the item lives
 * in its partition, so the update stays in one partition (docs/partitions.md). Without `near` the
 * item is written in the global layout (one Redis only; read and moved by the dispatcher).
 *
 * Enqueuing an id that is already pending (in the same place) replaces that record (payload,
 * attempts reset): there is still one message, so one delivery, never two. (If the earlier copy was
 * being delivered at that moment, that delivery does not delete the new copy, which is delivered
 * once more; the idempotency key makes the repeat harmless.) To keep the first copy instead, read
 * `outboxKey(item.id, outboxPartition(near))` in the update and use `outboxWritesIfAbsent`. An id
 * that was already delivered is no longer in the store, so enqueuing it again sends it again (the
 * peer dedupes).
 */
export function outboxWrites(item: OutboxItem, near?: string): Write[] {
  checkItem(item);
  const p = near === undefined ? undefined : outboxPartition(near);
  const rec: OutboxRecord = {
    id: item.id,
    dest: item.dest,
    payload: item.payload,
    createdAt: item.createdAt,
    attempts: 0,
    due: item.createdAt,
  };
  return [
    { op: 'set', key: outboxKey(item.id, p), value: recordJson(rec) },
    { op: 'index', key: outboxDueKey(p), member: item.id, score: rec.due },
    { op: 'index', key: outboxCreatedKey(p), member: item.id, score: rec.createdAt },
  ];
}

/** outboxWrites, or nothing when `current` (the value read at the item's outboxKey) shows it pending. */
export function outboxWritesIfAbsent(item: OutboxItem, current: Json | undefined, near?: string): Write[] {
  return current === undefined ? outboxWrites(item, near) : [];
}

/**
 * Backoff before retry number `attempt` (1 = after the first failure): base = min(max, min * 2^(attempt-1)),
 * then "equal jitter" (a uniform value in [base/2, base]), clamped to [min, max]. The ranges of
 * successive attempts touch but never overlap downwards, so delays never shrink.
 */
export function backoffDelay(attempt: number, minMs: number, maxMs: number, random: () => number = Math.random): number {
  const max = Math.max(minMs, maxMs);
  const base = Math.min(max, minMs * 2 ** Math.max(0, attempt - 1));
  const delay = base / 2 + random() * (base / 2);
  return Math.max(minMs, Math.min(max, Math.round(delay)));
}

/** An error as the record's lastError: short, with its name unless it is a plain Error. */
export function errorText(err: unknown): string {
  const text = err instanceof Error ? `${err.name === 'Error' ? '' : `${err.name}: `}${err.message}` : String(err);
  return text.slice(0, 500);
}

