import { createHash } from 'node:crypto';
import { AppError } from './errors.js';
import type { Clock } from './clock.js';
import { codec, F, optional } from './store/codec.js';
import type { Json, Store, Write } from './store/port.js';

/**
 * The Idempotency-Key header (IETF draft "The Idempotency-Key HTTP Header Field"), for every route
 * that declares `idempotency` (the hub runs it: src/hub/pipeline.ts) and every POST of the payment
 * relay: missing where required: 400; reused with another request: 422; the first request with the
 * key still running: 409; otherwise the first answer is replayed. Keys are scoped to the caller and
 * kept 24 hours.
 *
 * `begin` marks the key running (a lease of `runningMs`, so a crashed first attempt does not block
 * the key for ever); the effect's own store.update includes the key and writes the final answer with
 * `finishWrites`, in the same atomic write as the effect. A refusal (4xx) is not kept: `abandon` frees
 * the key so a corrected retry may use it.
 */

export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
export const KEY_RE = /^[\x21-\x7e]{1,255}$/;

export interface IdemTicket {
  storeKey: string;
  fingerprint: string;
  token: string;
}

export interface StoredAnswer {
  status: number;
  body: Json;
  headers?: Record<string, string>;
}

/** A key as the Store keeps it: running (a lease held by `token` until `until`) or done with its answer. */
interface KeyRecord {
  state: 'running' | 'done';
  /** The request's fingerprint (a key without one matches no request). */
  fp?: string;
  until?: number;
  token?: string;
  answer?: StoredAnswer;
}

const keyRecords = codec<KeyRecord>('idempotency key', {
  fields: {
    state: (v) => v === 'running' || v === 'done',
    fp: optional(F.str),
    until: optional(F.num),
    token: optional(F.str),
    answer: optional((v) => F.obj(v) && F.int(v.status)),
  },
});

/** Tickets whose answer went into an effect's update (finishWrites): the hub records no answer after them. */
const finishedTickets = new WeakSet<IdemTicket>();
export const finishedInEffect = (ticket: IdemTicket): boolean => finishedTickets.has(ticket);

export const fingerprint = (method: string, path: string, body: unknown) =>
  createHash('sha256')
    .update(`${method} ${path}\n${JSON.stringify(body ?? null, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}`)
    .digest('hex');

export class Idempotency {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly runningMs = 30_000,
    /** The store namespace; the payment relay keeps `pay:idem`, where its keys have always been. */
    private readonly prefix = 'idem',
  ) {}

  /** How long a first attempt holds its key before a retry may run the effect again. */
  get leaseMs(): number {
    return this.runningMs;
  }

  /** Returns a ticket to finish, or a stored answer to replay. */
  async begin(scope: string, header: string | undefined, fp: string, prefix = this.prefix): Promise<{ ticket: IdemTicket } | { replay: StoredAnswer }> {
    if (header === undefined || header === '') throw new AppError('invalid', 'idempotency_key_missing', 'this request needs an Idempotency-Key header');
    const key = header.replace(/^"(.*)"$/, '$1');
    if (!KEY_RE.test(key)) throw new AppError('invalid', 'idempotency_key_invalid', 'an Idempotency-Key is 1 to 255 visible ASCII characters');
    const storeKey = `${prefix}:${scope}:${key}`;
    const token = `${this.clock.now()}-${Math.random().toString(36).slice(2)}`;
    const now = this.clock.now();
    return this.store.update<{ ticket: IdemTicket } | { replay: StoredAnswer }>([storeKey], ([cur]) => {
      const c = keyRecords.decode(cur);
      if (c && c.fp !== fp) throw new AppError('unprocessable', 'idempotency_key_reused', 'this Idempotency-Key was used with another request body');
      if (c?.state === 'done') return { writes: [], result: { replay: c.answer! } };
      if (c?.state === 'running' && (c.until ?? 0) > now) throw new AppError('conflict', 'idempotency_in_progress', 'the first request with this Idempotency-Key is still running');
      const rec = keyRecords.encode({ state: 'running', fp, until: now + this.runningMs, token });
      return { writes: [{ op: 'set', key: storeKey, value: rec, ttlMs: IDEMPOTENCY_TTL_MS }], result: { ticket: { storeKey, fingerprint: fp, token } } };
    });
  }

  /** The write that records the final answer; put it into the effect's update (read `ticket.storeKey` there too). */
  finishWrites(ticket: IdemTicket, answer: StoredAnswer): Write[] {
    finishedTickets.add(ticket);
    const value = keyRecords.encode({ state: 'done', fp: ticket.fingerprint, answer });
    return [{ op: 'set', key: ticket.storeKey, value, ttlMs: IDEMPOTENCY_TTL_MS }];
  }

  /** Records the answer of an effect that has no store write of its own to carry `finishWrites`. */
  async finish(ticket: IdemTicket, answer: StoredAnswer): Promise<void> {
    await this.store.update([ticket.storeKey], ([cur]) => {
      const c = keyRecords.decode(cur);
      return { writes: c?.state === 'running' && c.token === ticket.token ? this.finishWrites(ticket, answer) : [], result: undefined };
    });
  }

  /** Frees the key after a refusal (only while our run still holds it). */
  async abandon(ticket: IdemTicket): Promise<void> {
    await this.store.update([ticket.storeKey], ([cur]) => {
      const c = keyRecords.decode(cur);
      return { writes: c?.state === 'running' && c.token === ticket.token ? [{ op: 'del', key: ticket.storeKey }] : [], result: undefined };
    });
  }

  /** Inside an effect's update: if the key already holds a final answer (a racing replay), return it. */
  static done(cur: Json | undefined): StoredAnswer | undefined {
    const c = keyRecords.decode(cur);
    return c?.state === 'done' ? c.answer : undefined;
  }
}
