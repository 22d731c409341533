import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { ManualClock } from '../../src/clock.js';
import { Debounce, DocStore } from '../../src/collab/persistence.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { tempDir } from '../support/process.js';

const edit = (doc: Y.Doc, s: string) => {
  let u: Uint8Array | undefined;
  const h = (x: Uint8Array) => (u = x);
  doc.on('update', h);
  doc.getText('content').insert(doc.getText('content').length, s);
  doc.off('update', h);
  return u!;
};

describe('document persistence', () => {
  it('loads the compacted state plus every logged update, and compaction keeps later ones', async () => {
    const store = await openLmdbStore({ path: tempDir('docstore') });
    const docs = new DocStore(store);
    expect(await docs.load('d')).toBeUndefined();
    const src = new Y.Doc();
    await docs.append('d', edit(src, 'a'));
    await docs.append('d', edit(src, 'b'));
    const read = (u: Uint8Array | undefined) => {
      const d = new Y.Doc();
      if (u) Y.applyUpdate(d, u);
      return d.getText('content').toString();
    };
    expect(read(await docs.load('d'))).toBe('ab');
    await docs.compact('d', Y.encodeStateAsUpdate(src));
    await docs.append('d', edit(src, 'c'));
    expect(read(await docs.load('d'))).toBe('abc');
    // a compaction by a process that never saw 'c' keeps it (it is read from the log)
    const stale = new Y.Doc();
    Y.applyUpdate(stale, (await docs.load('d'))!);
    await docs.compact('d', Y.encodeStateAsUpdate(new Y.Doc()));
    expect(read(await docs.load('d'))).toBe('abc');
    expect(read(Y.encodeStateAsUpdate(stale))).toBe('abc');
    await store.close();
  });

  it('debounces on the injected clock, never later than the maximum wait after the first change', async () => {
    const clock = new ManualClock(0);
    let fired = 0;
    const d = new Debounce(clock, 10_000, 120, () => fired++);
    d.touch();
    expect(d.pending).toBe(true);
    // touched again and again: the wait shrinks to what is left of the maximum
    clock.advance(100);
    d.touch();
    // 20 ms are left of the maximum wait (not the 10 s debounce): it fires
    for (let i = 0; i < 200 && fired === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(fired).toBe(1);
    expect(d.take()).toBe(true);
    expect(d.pending).toBe(false);
    expect(d.take()).toBe(false);
  });
});
