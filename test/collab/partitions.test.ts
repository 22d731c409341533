import { createHash } from 'node:crypto';
import * as Y from 'yjs';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { LOCK_TTL_MS } from '../../src/collab/model.js';
import { DocStore, b64 } from '../../src/collab/persistence.js';
import { CollabService, K } from '../../src/collab/service.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { partitionOf, type Json, type Store, type Write } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { refusal } from '../support/refusal.js';

// Documents in the partitioned keyspace (docs/partitions.md): a document's versions, lock, comments,
// links and live state are keys under `md:doc:<slug>`, the lists per partition; every flow is one
// update of one aggregate. Real LMDB with the partition check on (as STORE_PARTITION_CHECK=1): an
// update that spans aggregates fails the flow. What the global layout kept is still read.

const T0 = Date.UTC(2026, 10, 29, 9, 0, 0);
const ann = { id: 'u_ann', name: '앤' };
const bob = { id: 'u_bob', name: '밥' };
const annViewer = { id: 'u_ann', name: '앤', roles: ['editor'] };
const bobViewer = { id: 'u_bob', name: '밥', roles: ['editor'] };
const accounts = async (id: string) =>
  ({ u_ann: { id: 'u_ann', name: '앤', roles: ['editor'], email: 'ann@example.test' }, u_bob: { id: 'u_bob', name: '밥', roles: ['editor'], email: 'bob@example.test' } })[id];
const anchor = { start: 'AA==', end: 'AA==', quote: '본문' };

const refused = async (p: Promise<unknown>) => (await refusal(p)).code;
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));

async function open(path: string, partitionCheck: boolean) {
  const store = await openLmdbStore({ path, partitionCheck });
  stores.push(store);
  const clock = new ManualClock(T0);
  const service = new CollabService({ store, clock, bus: { emit: () => undefined }, maxBytes: 100_000 });
  return { store, clock, service };
}

describe('documents in the partitioned keyspace', () => {
  it('save, access, locks, comments with mentions, links, the sweep and removal are each one aggregate', async () => {
    const { store, clock, service } = await open(tempDir('collab-parts'), true);
    await service.save({ slug: 'plan', content: '# 계획\n본문', editor: ann });
    await service.setAccess('plan', { editors: ['u_bob'] }, annViewer);
    await service.locks.lock('plan', ann);
    expect(await store.indexScore(K.locks('plan'), 'plan')).toBe(T0 + LOCK_TTL_MS);
    expect(await refused(service.save({ slug: 'plan', content: '# 계획\n밥', editor: bob }))).toBe('document_locked');
    await service.save({ slug: 'plan', content: '# 계획\n앤', editor: ann });
    await service.locks.unlock('plan', ann);
    const thread = await service.comments.create('plan', { body: '@u_bob 확인', anchor }, annViewer, accounts);
    await service.comments.reply('plan', thread.id, '@u_ann 네', bobViewer, accounts);
    await service.comments.resolve('plan', thread.id, true, annViewer);
    // the mention mails in the outbox partition of the comments they were written with
    const p = partitionOf(K.comments('plan'));
    expect(p).toBe(partitionOf(K.doc('plan')));
    expect(await store.indexCount(`outbox:due:{#${p}}`)).toBe(2);
    const { token, link } = await service.links.create('plan', { role: 'read' }, annViewer);
    expect((await service.links.authenticate(token))?.id).toBe(`mdlink:${link.id}:read:plan`);
    await service.links.revoke('plan', link.id, annViewer);
    expect(await service.links.authenticate(token)).toBeUndefined();
    await service.locks.lock('plan', bob);
    clock.advance(LOCK_TTL_MS);
    expect(await service.locks.sweep()).toBe(1);
    // the live state and its log under the document
    const docs = new DocStore(store);
    const y = new Y.Doc();
    y.getText('content').insert(0, '실시간');
    await docs.appendAll('plan', [Y.encodeStateAsUpdate(y)]);
    await docs.compact('plan', Y.encodeStateAsUpdate(y));
    expect(await store.get(`md:doc:plan:ydoc`)).toBeTypeOf('string');
    const listed = await service.list(undefined);
    expect(listed.docs.map((d) => d.slug)).toEqual(['plan']);
    expect((await service.history('plan')).versions.map((v) => v.version)).toEqual([2, 1]);
    expect((await service.stats()).totals.documents).toBe(1);
    await service.remove('plan', ann);
    expect((await service.list(undefined)).docs).toEqual([]);
    expect(await store.get(K.comments('plan'))).toBeUndefined();
  });

  it('still reads what the global layout kept, and moves it under the document as it is written', async () => {
    const path = tempDir('collab-parts-old');
    const before = await openLmdbStore({ path, partitionCheck: false });
    const doc = { slug: 'old', category: 'general', title: '옛', content: '# 옛\n본문', version: 1, created: T0 - 5000, modified: T0 - 5000, author: 'u_ann', size: 12, access: { owner: 'u_ann', visibility: 'team', editors: [], readers: [] } };
    const token = `ms_${Buffer.from('old').toString('base64url')}.${'a'.repeat(43)}`;
    const y = new Y.Doc();
    y.getText('content').insert(0, '옛 실시간');
    const old: Write[] = [
        { op: 'set', key: 'md:doc:old', value: doc as unknown as Json },
        { op: 'push', key: 'md:versions:old', value: { version: 1, title: '옛', category: 'general', content: doc.content, modified: doc.modified, author: 'u_ann', size: 12 }, cap: 50 },
        { op: 'index', key: 'md:docs', member: 'old', score: doc.modified },
        { op: 'set', key: 'md:lock:old', value: { slug: 'old', holder: 'u_ann', holder_name: '앤', acquired: T0 - 1000, expires: T0 + 60_000 } },
        { op: 'index', key: 'md:locks', member: 'old', score: T0 + 60_000 },
        { op: 'set', key: 'md:comments:old', value: { threads: [{ id: 't_old', author: 'u_ann', author_name: '앤', created: T0 - 3000, body: '옛 댓글', mentions: [], anchor, resolved: false, replies: [] }] } },
        { op: 'set', key: 'md:links:old', value: { links: [{ id: 'l_old', hash: createHash('sha256').update(token).digest('hex'), role: 'read', created: T0 - 3000, created_by: 'u_ann', expires: null }] } },
        { op: 'set', key: 'md:ydoc:old', value: b64(Y.encodeStateAsUpdate(y)) },
      ];
    await before.update([], () => ({ writes: old, result: undefined }));
    await before.close();
    const { store, clock, service } = await open(path, true);
    expect((await service.list(undefined)).docs.map((d) => d.slug)).toEqual(['old']);
    expect((await service.history('old')).versions.map((v) => v.version)).toEqual([1]);
    expect((await service.stats()).locks).toBe(1);
    // the lock of before holds: another editor is refused, its holder saves
    expect((await service.locks.state('old')).holder).toBe('u_ann');
    expect(await refused(service.save({ slug: 'old', content: '# 옛\n밥', editor: bob }))).toBe('document_locked');
    expect(await refused(service.locks.lock('old', bob))).toBe('document_locked');
    await service.save({ slug: 'old', content: '# 옛\n앤', editor: ann });
    expect((await service.history('old')).versions.map((v) => v.version)).toEqual([2, 1]);
    expect(await store.indexScore('md:docs', 'old')).toBeUndefined();
    expect((await service.list(undefined)).docs.map((d) => d.version)).toEqual([2]);
    // its holder renews it: it moves under the document, the old key goes
    await service.locks.lock('old', ann);
    expect(await store.get('md:lock:old')).toBeUndefined();
    expect((await store.get<{ acquired: number }>(K.lock('old')))?.acquired).toBe(T0 - 1000);
    await service.locks.unlock('old', ann);
    // comments and links of before: read, then carried into the document's record by the first change
    expect((await service.comments.list('old')).map((t) => t.id)).toEqual(['t_old']);
    await service.comments.reply('old', 't_old', '답', bobViewer, accounts);
    expect((await service.comments.list('old')).map((t) => t.replies.length)).toEqual([1]);
    expect(((await store.get(K.comments('old'))) as { threads: unknown[] } | undefined)?.threads).toHaveLength(1);
    expect((await service.links.authenticate(token))?.id).toBe('mdlink:l_old:read:old');
    expect((await service.links.list('old', annViewer)).links.map((l) => l.id)).toEqual(['l_old']);
    await service.links.revoke('old', 'l_old', annViewer);
    expect(await service.links.authenticate(token)).toBeUndefined();
    // the live state of before is loaded, and dropped once compacted under the document
    const docs = new DocStore(store);
    const loaded = new Y.Doc();
    Y.applyUpdate(loaded, (await docs.load('old'))!);
    expect(loaded.getText('content').toString()).toBe('옛 실시간');
    loaded.getText('content').insert(0, '새 ');
    await docs.compact('old', Y.encodeStateAsUpdate(loaded));
    expect(await store.get('md:ydoc:old')).toBeUndefined();
    const again = new Y.Doc();
    Y.applyUpdate(again, (await docs.load('old'))!);
    expect(again.getText('content').toString()).toBe('새 옛 실시간');
    // a lock of before that expired is swept from the global index, announced once
    await store.set('md:lock:gone', { slug: 'gone', holder: 'u_bob', holder_name: '밥', acquired: T0, expires: T0 + 1000 });
    await store.index('md:locks', 'gone', T0 + 1000);
    clock.advance(2000);
    expect(await service.locks.sweep()).toBe(1);
    expect(await store.indexCount('md:locks')).toBe(0);
    expect(await store.get('md:lock:gone')).toBeUndefined();
    // removal takes what the global layout kept of the document too
    await service.remove('old', ann);
    expect(await store.get('md:comments:old')).toBeUndefined();
    expect(await store.range('md:versions:old')).toEqual([]);
    expect((await service.list(undefined)).docs).toEqual([]);
  });
});
