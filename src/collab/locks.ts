import { AppError, notFound } from '../errors.js';
import { partitionKeys } from '../store/port.js';
import { DOC_TOPIC, K, LIST_TOPIC, LOCK_MAX_MS, LOCK_TTL_MS, OLD, checkSlug, docEvents, dropOldLock, lockRecords, lockedError, oldLock, type Editor, type Lock, Part } from './model.js';

/**
 * Edit locks (docs/collab.md "Locks"): held by a signed-in identity for LOCK_TTL_MS, renewed by the
 * holder up to LOCK_MAX_MS after the acquisition, released by the holder or broken by an operator,
 * swept when they expire. Every change is one atomic Store.update of the document's aggregate (the
 * lock `md:doc:<slug>:lock`, its entry in `md:locks:{#p}` of the document's partition), announced on
 * the Bus. A lock of the global layout (`md:lock:<slug>`, `md:locks`) is still honoured: read before
 * the update, carried into the new key by it, then dropped.
 */
export class Locks extends Part {
  view(lock: Lock | undefined, now: number) {
    if (!lock || lock.expires <= now) return { locked: false as const };
    return {
      locked: true as const,
      holder: lock.holder,
      holder_name: lock.holder_name ?? lock.holder,
      acquired_at: new Date(lock.acquired).toISOString(),
      expires_at: new Date(lock.expires).toISOString(),
      expires: lock.expires,
      remaining_ms: lock.expires - now,
      max_until: new Date(lock.acquired + LOCK_MAX_MS).toISOString(),
    };
  }

  /**
   * Acquire (unlocked or expired) or renew (the caller holds it): another 10 minutes from now, but
   * never past LOCK_MAX_MS after the acquisition; a renewal when the lock already runs to that
   * maximum is a 409 `lock_max_reached`. A lock request on a document someone else holds is a 423
   * `document_locked` naming the holder and the expiry; it does not queue.
   */
  async lock(slug: string, editor: Editor) {
    checkSlug(slug);
    if (!(await this.store.get(K.doc(slug)))) throw notFound('unknown_document', `no document ${slug}`, { slug });
    const now = this.now();
    const old = await oldLock(this.store, slug);
    const out = await this.store.update([K.lock(slug)], ([cur]) => {
      const lock = lockRecords.decode(cur) ?? old;
      const live = lock && lock.expires > now ? lock : undefined;
      if (live && live.holder !== editor.id) throw lockedError(slug, live);
      const renewed = !!live;
      const acquired = live ? live.acquired : now;
      const maxUntil = acquired + LOCK_MAX_MS;
      if (live && live.expires >= maxUntil) {
        throw new AppError('conflict', 'lock_max_reached', `a lock is held at most ${LOCK_MAX_MS / 60_000} minutes; this one ends at ${new Date(maxUntil).toISOString()}`, {
          acquired_at: new Date(acquired).toISOString(),
          max_until: new Date(maxUntil).toISOString(),
          max_ms: LOCK_MAX_MS,
        });
      }
      const next: Lock = { slug, holder: editor.id, holder_name: editor.name, acquired, expires: Math.min(now + LOCK_TTL_MS, maxUntil) };
      return {
        writes: [
          // the stored TTL only cleans up; validity is judged against the (injectable) clock
          { op: 'set', key: K.lock(slug), value: lockRecords.encode(next), ttlMs: LOCK_TTL_MS + 60_000 },
          { op: 'index', key: K.locks(slug), member: slug, score: next.expires },
        ],
        result: { lock: next, renewed },
      };
    });
    if (old) await dropOldLock(this.store, slug);
    const view = this.view(out.lock, now);
    this.publish(DOC_TOPIC(slug), docEvents.encode({ type: 'lock', slug, state: out.renewed ? 'renewed' : 'locked', ...view }));
    this.publish(LIST_TOPIC, docEvents.encode({ type: 'lock', slug, state: out.renewed ? 'renewed' : 'locked' }));
    return { ok: true, slug, renewed: out.renewed, ...view };
  }

  /**
   * Release by the holder; an operator may break anyone's lock (state `broken`). Another editor is
   * a 403 `not_lock_holder`; an unlocked (or expired) document is `released: false`.
   */
  async unlock(slug: string, editor: Editor) {
    checkSlug(slug);
    const now = this.now();
    const old = await oldLock(this.store, slug);
    const gone = await this.store.update([K.lock(slug)], ([cur]) => {
      const lock = lockRecords.decode(cur) ?? old;
      if (!lock || lock.expires <= now) return { writes: [], result: undefined };
      if (lock.holder !== editor.id && !editor.operator) {
        throw new AppError('forbidden', 'not_lock_holder', `the lock on ${slug} is held by ${lock.holder_name ?? lock.holder}; only the holder (or an operator) releases it`, {
          holder: lock.holder,
          expires_at: new Date(lock.expires).toISOString(),
        });
      }
      return { writes: [{ op: 'del', key: K.lock(slug) }, { op: 'unindex', key: K.locks(slug), member: slug }], result: lock };
    });
    if (gone && old) await dropOldLock(this.store, slug);
    const broken = !!gone && gone.holder !== editor.id;
    if (gone) {
      const state = broken ? 'broken' : 'released';
      this.publish(DOC_TOPIC(slug), docEvents.encode({ type: 'lock', slug, state, locked: false, holder: gone.holder, ...(broken ? { broken_by: editor.id } : {}) }));
      this.publish(LIST_TOPIC, docEvents.encode({ type: 'lock', slug, state }));
    }
    return { ok: true, slug, released: !!gone, ...(broken ? { broken: true, holder: gone.holder } : {}), locked: false };
  }

  async state(slug: string) {
    checkSlug(slug);
    const [lock, old] = lockRecords.decodeMany(await this.store.getMany([K.lock(slug), OLD.lock(slug)]));
    return { slug, ...this.view(lock ?? old, this.now()) };
  }

  /**
   * Removes locks past their time, telling the room; the atomic update makes exactly one process
   * announce each. Walks every partition's lock index, and the global one of before (whose locks
   * are removed by the unindex that only one process wins).
   */
  async sweep(): Promise<number> {
    const now = this.now();
    let locks = 0;
    const due = await Promise.all(partitionKeys('md:locks').map((key) => this.store.indexRange(key, { max: now })));
    for (const e of due.flat()) {
      const slug = e.member;
      const gone = await this.store.update([K.lock(slug)], ([cur]) => {
        const lock = lockRecords.decode(cur);
        if (lock && lock.expires > now) return { writes: [{ op: 'index', key: K.locks(slug), member: slug, score: lock.expires }], result: undefined };
        return { writes: [{ op: 'del', key: K.lock(slug) }, { op: 'unindex', key: K.locks(slug), member: slug }], result: lock };
      });
      if (gone) locks += this.expired(slug, gone);
    }
    for (const e of await this.store.indexRange(OLD.locks, { max: now })) {
      const slug = e.member;
      const lock = await oldLock(this.store, slug);
      if (lock && lock.expires > now) {
        await this.store.index(OLD.locks, slug, lock.expires);
        continue;
      }
      if (!(await this.store.unindex(OLD.locks, slug))) continue;
      await this.store.del(OLD.lock(slug));
      if (lock) locks += this.expired(slug, lock);
    }
    return locks;
  }

  private expired(slug: string, gone: Lock): number {
    this.publish(DOC_TOPIC(slug), docEvents.encode({ type: 'lock', slug, state: 'expired', locked: false, holder: gone.holder }));
    this.publish(LIST_TOPIC, docEvents.encode({ type: 'lock', slug, state: 'expired' }));
    return 1;
  }
}
