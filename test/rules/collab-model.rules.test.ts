import { describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import type { Json, Store } from '../../src/store/port.js';
import { refusal } from '../support/refusal.js';

// The document service's shared numbers and rules (src/collab/model.ts; docs/collab.md): lock and
// presence times, the version cap, slug and category patterns, store keys and topics, the 423 of a
// lock held by another, the title taken from the first level-1 or level-2 heading. The module
// builds its patterns and tables at load: each test imports it afresh.
const load = async () => {
  vi.resetModules();
  return import('../../src/collab/model.js');
};
const thrown = (f: () => void) => refusal(Promise.resolve().then(f));

describe('the numbers', () => {
  it('are 10-minute locks held at most an hour, 50 versions, 8 recent edits, 30 s presence, a week', async () => {
    const m = await load();
    expect([m.LOCK_TTL_MS, m.LOCK_MAX_MS, m.MAX_VERSIONS, m.RECENT_EDITS, m.PRESENCE_TIMEOUT_MS, m.WEEK_MS]).toEqual([
      600_000, 3_600_000, 50, 8, 30_000, 604_800_000,
    ]);
  });

  it('has 16 distinct presence colours', async () => {
    const { PALETTE } = await load();
    expect(PALETTE).toEqual([
      '#e6194b', '#3cb44b', '#4363d8', '#f58231', '#911eb4', '#42d4f4', '#f032e6', '#9a6324',
      '#469990', '#800000', '#808000', '#000075', '#bfef45', '#fabed4', '#dcbeff', '#aaffc3',
    ]);
  });

  it('names the store keys and topics', async () => {
    const { K, DOC_TOPIC, LIST_TOPIC } = await load();
    // the document's parts under its aggregate; the lists per partition, in the document's (docs/partitions.md)
    expect([K.doc('a'), K.versions('a'), K.lock('a'), K.comments('a'), K.links('a'), K.presence('a'), K.rooms]).toEqual([
      'md:doc:a', 'md:doc:a:versions', 'md:doc:a:lock', 'md:doc:a:comments', 'md:doc:a:links', 'md:presence:a', 'md:presence-rooms',
    ]);
    const { partitionOf } = await import('../../src/store/partition.js');
    const p = partitionOf('md:doc:a');
    expect([K.docs('a'), K.locks('a')]).toEqual([`md:docs:{#${p}}`, `md:locks:{#${p}}`]);
    expect([DOC_TOPIC('회의록'), LIST_TOPIC]).toEqual(['md:회의록', 'md:all']);
  });
});

describe('slugs and categories', () => {
  it('takes a slug of 1 to 80 of a-z 0-9 한글 _ -, not starting with _ or -', async () => {
    const { SLUG_RE, checkSlug } = await load();
    for (const s of ['a', '0', '가', '회의-록_2026', 'a'.repeat(80), `가${'_'.repeat(79)}`]) {
      expect(SLUG_RE.test(s), s).toBe(true);
      expect(() => checkSlug(s)).not.toThrow();
    }
    for (const s of ['', '_a', '-a', 'A', 'aB', 'a'.repeat(81), 'a/b', '../a', 'a.b', 'a b', 'ㄱ', 'a\n', ' a']) {
      expect(SLUG_RE.test(s), JSON.stringify(s)).toBe(false);
      expect(await thrown(() => checkSlug(s))).toEqual({ status: 400, code: 'invalid_slug', message: 'a slug is 1-80 of a-z 0-9 한글 _ - (no path characters)' });
    }
  });

  it('takes a category of 1 to 40 letters, digits, spaces, _ and - of any script', async () => {
    const { CATEGORY_RE } = await load();
    for (const c of ['a', '회의록', 'Général', 'Q3 계획_v2-final', 'x'.repeat(40), '٣']) expect(CATEGORY_RE.test(c), c).toBe(true);
    for (const c of ['', 'x'.repeat(41), 'a/b', 'a.b', 'a\nb', '😀', 'x\n']) expect(CATEGORY_RE.test(c), JSON.stringify(c)).toBe(false);
  });
});

describe('locks', () => {
  const lock = { slug: 'd', holder: 'u1', holder_name: '김', acquired: 1_000, expires: 2_000 };

  it('refuse with 423 naming the holder and the expiry', async () => {
    const { lockedError } = await load();
    const e = lockedError('d', lock);
    expect([e.status, e.code, e.message]).toEqual([423, 'document_locked', 'd is locked by 김 until 1970-01-01T00:00:02.000Z']);
    expect(e.details).toEqual({ holder: 'u1', holder_name: '김', expires_at: '1970-01-01T00:00:02.000Z', expires: 2_000 });
    // a lock record without a holder name names the holder id
    const old = lockedError('d', { ...lock, holder_name: undefined as unknown as string });
    expect(old.message).toBe('d is locked by u1 until 1970-01-01T00:00:02.000Z');
    expect((old.details as { holder_name: string }).holder_name).toBe('u1');
  });

  it('let through the holder, and anyone once the lock expired, but no other (operators neither)', async () => {
    const { assertHolder } = await load();
    expect(() => assertHolder('d', undefined, undefined, 1_500)).not.toThrow();
    expect(() => assertHolder('d', lock, { id: 'u1', name: '김' }, 1_500)).not.toThrow();
    expect(() => assertHolder('d', lock, { id: 'u2', name: '이' }, 2_000)).not.toThrow();
    expect(() => assertHolder('d', lock, undefined, 2_001)).not.toThrow();
    expect((await thrown(() => assertHolder('d', lock, { id: 'u2', name: '이' }, 1_999))).code).toBe('document_locked');
    expect((await thrown(() => assertHolder('d', lock, { id: 'op', name: 'op', operator: true }, 1_500))).code).toBe('document_locked');
    expect((await thrown(() => assertHolder('d', lock, undefined, 1_500))).status).toBe(423);
  });

  it('answers 403 not_your_presence for another’s presence entry', async () => {
    const { notYours } = await load();
    const e = notYours('d');
    expect([e.status, e.code, e.message]).toEqual([403, 'not_your_presence', 'that presence entry of d belongs to someone else']);
  });
});

describe('titles and summaries', () => {
  it('takes the first # or ## heading, trimmed, at most 200 characters; else the slug', async () => {
    const { titleOf } = await load();
    expect(titleOf('# 회의록  ', 's')).toBe('회의록');
    expect(titleOf('intro\n## 둘째 제목\n# 첫째', 's')).toBe('둘째 제목');
    expect(titleOf('###  셋째\n', 's')).toBe('s');
    expect(titleOf('#붙음', 's')).toBe('s');
    expect(titleOf('text # not a heading', 's')).toBe('s');
    expect(titleOf('#\t탭 제목', 's')).toBe('탭 제목');
    expect(titleOf(`# ${'가'.repeat(250)}`, 's')).toBe('가'.repeat(200));
    expect(titleOf('', ' slug ')).toBe('slug');
  });

  it('summarise a document without its content and creation time', async () => {
    const { summary } = await load();
    const doc = { slug: 'd', category: 'c', title: 't', content: 'x', version: 3, created: 1, modified: 2, author: 'a', size: 1 };
    expect(summary(doc)).toStrictEqual({ slug: 'd', title: 't', category: 'c', version: 3, modified: 2, author: 'a', size: 1 });
  });
});

describe('the parts of the service', () => {
  it('share the store, the clock and the Bus’s emit', async () => {
    const { Part } = await load();
    class Probe extends Part {
      look() {
        return { store: this.store, now: this.now() };
      }
      send(topic: string, msg: Json) {
        this.publish(topic, msg);
      }
    }
    const store = {} as Store;
    const sent: [string, Json][] = [];
    const p = new Probe({ store, clock: new ManualClock(42), publish: (t, m) => void sent.push([t, m]) });
    expect(p.look()).toEqual({ store, now: 42 });
    expect(p.look().store).toBe(store);
    p.send('md:x', { a: 1 });
    expect(sent).toEqual([['md:x', { a: 1 }]]);
  });
});

describe('document presence records', () => {
  it('reads a map of peers, each with a user, a heartbeat, a name and a colour; anything less is corrupt', async () => {
    const { presenceRecords } = await load();
    const peer = { id: 'p1', user: 'u1', name: '김', color: '#e6194b', joined: 1, seen: 2 };
    expect(presenceRecords.decode({ p1: peer })).toEqual({ p1: peer });
    expect(presenceRecords.decode(undefined)).toBeUndefined();
    for (const bad of [{ ...peer, name: undefined }, { ...peer, color: 7 }, { ...peer, user: 1 }, { ...peer, seen: '2' }, 'peer']) {
      expect((await thrown(() => presenceRecords.decode({ p1: bad as Json }))).code).toBe('corrupt_record');
    }
  });
});

describe('the stored records', () => {
  const corrupt = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return (e as { code?: string; message: string }).code + ': ' + (e as Error).message;
    }
    return 'read';
  };

  it('a document needs its slug, content and version', async () => {
    const { docRecords } = await load();
    const good = { slug: 'a', content: '# A', version: 3, title: 'A' };
    expect(docRecords.decode(good)).toEqual(good);
    expect(docRecords.decode(undefined)).toBeUndefined();
    for (const bad of [
      { content: '# A', version: 3 },
      { slug: 1, content: '# A', version: 3 },
      { slug: 'a', version: 3 },
      { slug: 'a', content: 5, version: 3 },
      { slug: 'a', content: '# A' },
      { slug: 'a', content: '# A', version: '3' },
    ]) {
      expect(corrupt(() => docRecords.decode(bad as Json)), JSON.stringify(bad)).toBe('corrupt_record: a stored document is not readable');
    }
  });

  it('a version needs its number and content', async () => {
    const { versionRecords } = await load();
    expect(versionRecords.decode({ version: 2, content: 'x' })).toEqual({ version: 2, content: 'x' });
    for (const bad of [{ content: 'x' }, { version: '2', content: 'x' }, { version: 2 }, { version: 2, content: 1 }]) {
      expect(corrupt(() => versionRecords.decode(bad as Json)), JSON.stringify(bad)).toBe('corrupt_record: a stored document version is not readable');
    }
  });

  it('a lock needs its holder and expiry', async () => {
    const { lockRecords } = await load();
    expect(lockRecords.decode({ holder: 'u1', expires: 10 })).toEqual({ holder: 'u1', expires: 10 });
    for (const bad of [{ expires: 10 }, { holder: 1, expires: 10 }, { holder: 'u1' }, { holder: 'u1', expires: '10' }]) {
      expect(corrupt(() => lockRecords.decode(bad as Json)), JSON.stringify(bad)).toBe('corrupt_record: a stored document lock is not readable');
    }
  });

  it('presence: every peer needs its user, name, colour and time seen', async () => {
    const { presenceRecords } = await load();
    const peer = { user: 'u1', name: 'Kim', color: '#fff', seen: 5 };
    expect(presenceRecords.decode({})).toEqual({});
    expect(presenceRecords.decode({ a: peer, b: { ...peer, user: 'u2' } })).toEqual({ a: peer, b: { ...peer, user: 'u2' } });
    for (const field of ['user', 'name', 'color', 'seen'] as const) {
      const { [field]: _, ...missing } = peer;
      expect(corrupt(() => presenceRecords.decode({ a: peer, b: missing })), field).toBe('corrupt_record: a stored document presence is not readable');
    }
    expect(corrupt(() => presenceRecords.decode({ a: peer, b: 'u2' }))).toBe('corrupt_record: a stored document presence is not readable');
  });

  it('an event needs its type', async () => {
    const { docEvents } = await load();
    expect(docEvents.decode({ type: 'saved', slug: 'a' })).toEqual({ type: 'saved', slug: 'a' });
    expect(corrupt(() => docEvents.decode({ slug: 'a' }))).toBe('corrupt_record: a stored document event is not readable');
    expect(corrupt(() => docEvents.decode({ type: 1, slug: 'a' }))).toBe('corrupt_record: a stored document event is not readable');
  });
});
