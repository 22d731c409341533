import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { CollabService, K } from '../../src/collab/service.js';
import type { AppError } from '../../src/errors.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Json, Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

/**
 * The document service reads and writes its records through its codecs (src/collab/model.ts): the
 * stored JSON keeps its keys, and a stored value that is not the record is a corrupt record (500),
 * never a half-typed document.
 */
describe('document records in the store', () => {
  let store: Store;
  let service: CollabService;
  const events: [string, Json | Promise<Json>][] = [];
  const clock = new ManualClock(1_700_000_000_000);
  const ann = { id: 'u-ann', name: 'ann' };

  beforeAll(async () => {
    store = await openLmdbStore({ path: tempDir('collab-records') });
    service = new CollabService({ store, clock, bus: { emit: (topic, message) => void events.push([topic, message]) }, maxBytes: 1 << 20 });
  });
  afterAll(() => store.close());

  it('stores documents, versions, locks and presence as the same JSON as before', async () => {
    await service.save({ slug: 'rec', content: '# 제목\n본문', editor: ann });
    expect(await store.get(K.doc('rec'))).toEqual({
      slug: 'rec', category: 'general', title: '제목', content: '# 제목\n본문', version: 1, created: clock.now(), modified: clock.now(), author: 'u-ann', size: 15,
      // since documents have access (docs/collab.md "Access"): the one who made it owns it
      access: { owner: 'u-ann', visibility: 'team', editors: [], readers: [] },
    });
    expect(await store.range(K.versions('rec'))).toEqual([{ version: 1, title: '제목', category: 'general', content: '# 제목\n본문', modified: clock.now(), author: 'u-ann', size: 15 }]);
    await service.locks.lock('rec', ann);
    expect(Object.keys((await store.get(K.lock('rec'))) as object).sort()).toEqual(['acquired', 'expires', 'holder', 'holder_name', 'slug']);
    const p = await service.presence.join('rec', ann);
    expect(Object.keys(((await store.get(K.presence('rec'))) as Record<string, object>)[p.id]!).sort()).toEqual(['color', 'id', 'joined', 'name', 'seen', 'user']);
    expect(events.map(([topic, m]) => `${topic} ${(m as { type: string }).type}`)).toEqual(['md:rec saved', 'md:all saved', 'md:rec lock', 'md:all lock', 'md:rec presence']);
    expect((await service.get('rec')).version).toBe(1);
    expect((await service.history('rec')).versions).toEqual([{ version: 1, title: '제목', category: 'general', modified: clock.now(), author: 'u-ann', size: 15 }]);
  });

  it('refuses a stored value that is not a document record as corrupt_record', async () => {
    const refused = async (p: Promise<unknown>) => ((await p.then(() => undefined, (err: unknown) => err)) as AppError | undefined)?.code;
    await store.set(K.doc('bad'), { slug: 'bad', content: 7 });
    expect(await refused(service.get('bad'))).toBe('corrupt_record');
    await store.set(K.lock('rec'), 'held');
    expect(await refused(service.locks.state('rec'))).toBe('corrupt_record');
    await store.set(K.presence('rec'), { x: { user: 'u-ann' } });
    expect(await refused(service.presence.peers('rec'))).toBe('corrupt_record');
  });
});
