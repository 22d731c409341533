import * as encoding from 'lib0/encoding';
import { describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { DocStore } from '../../src/collab/persistence.js';
import { Room, type Peer } from '../../src/collab/room.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { tempDir } from '../support/process.js';

const frame = (update: Uint8Array) => {
  const enc = encoding.createEncoder();
  encoding.writeVarUint(enc, 0);
  encoding.writeVarUint(enc, 2);
  encoding.writeVarUint8Array(enc, update);
  return encoding.toUint8Array(enc);
};

describe('a room writes peer updates durably in groups', () => {
  it('updates arriving during a write go together in the next one; every one is stored, applied and fanned out in order', async () => {
    const store = await openLmdbStore({ path: tempDir('room-group') });
    const docs = new DocStore(store);
    const batches: number[] = [];
    const room = new Room('grouped', {
      persistUpdates: (us) => (batches.push(us.length), docs.appendAll('grouped', us)),
      relayUpdate: () => undefined,
      relayAwareness: () => undefined,
      changed: () => undefined,
      warn: () => undefined,
    });
    const got: Uint8Array[] = [];
    const writer: Peer = { send: () => undefined, close: () => undefined };
    const reader: Peer = { send: (b) => got.push(b), close: () => undefined };
    room.join(writer, 'ann');
    room.join(reader, 'bob');
    got.length = 0;
    const src = new Y.Doc();
    const updates: Uint8Array[] = [];
    src.on('update', (u: Uint8Array) => updates.push(u));
    for (let i = 0; i < 50; i++) src.getText('content').insert(i, String.fromCharCode(97 + (i % 26)));
    for (const u of updates) room.receive(writer, frame(u));
    await room.settled();
    const expected = src.getText('content').toString();
    expect(room.text).toBe(expected);
    // fewer writes than updates: the first alone, the rest grouped while it was under way
    expect(batches.reduce((a, b) => a + b, 0)).toBe(50);
    expect(batches[0]).toBe(1);
    expect(batches.length).toBeLessThan(50);
    // the reader got each update once, in the order sent
    expect(got.map((b) => Buffer.from(b).toString('hex'))).toEqual(updates.map((u) => Buffer.from(frame(u)).toString('hex')));
    // durable: a fresh load from the log has every edit; the author is the writer's identity
    const loaded = new Y.Doc();
    Y.applyUpdate(loaded, (await docs.load('grouped'))!);
    expect(loaded.getText('content').toString()).toBe(expected);
    expect([...room.authors]).toEqual(['ann']);
    room.destroy();
    await store.close();
  });
});
