import * as encoding from 'lib0/encoding';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as Y from 'yjs';
import { startMaru, type Maru } from '../../src/app.js';
import { DocStore } from '../../src/collab/persistence.js';
import { Room, WS_CLOSE_DOC_TOO_LARGE, type Peer } from '../../src/collab/room.js';
import { loadConfig } from '../../src/config.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { AUTH_TEST_ENV, signIn } from '../support/auth.js';
import { tempDir } from '../support/process.js';
import { waitFor as until } from '../support/wait.js';
import { editorClient } from '../support/yjs.js';


/** A y-websocket sync update frame. */
const frame = (update: Uint8Array) => {
  const enc = encoding.createEncoder();
  encoding.writeVarUint(enc, 0);
  encoding.writeVarUint(enc, 2);
  encoding.writeVarUint8Array(enc, update);
  return encoding.toUint8Array(enc);
};

/** A y-websocket awareness frame of `doc`'s client. */
const awarenessFrame = (a: awarenessProtocol.Awareness) => {
  const enc = encoding.createEncoder();
  encoding.writeVarUint(enc, 1);
  encoding.writeVarUint8Array(enc, awarenessProtocol.encodeAwarenessUpdate(a, [a.clientID]));
  return encoding.toUint8Array(enc);
};

/** The update that inserts `s` at the end of a source document (kept across calls). */
const writer = () => {
  const src = new Y.Doc();
  return (s: string) => {
    const before = Y.encodeStateVector(src);
    src.getText('content').insert(src.getText('content').length, s);
    return Y.encodeStateAsUpdate(src, before);
  };
};

const closer = () => {
  const closes: { code: number; reason: string }[] = [];
  const peer: Peer = { send: () => undefined, close: (code, reason) => void closes.push({ code, reason }) };
  return { peer, closes };
};

describe('a room bounds its document', () => {
  it('refuses an update that would pass the limit (close 4413, nothing stored) and keeps every accepted edit', async () => {
    const store = await openLmdbStore({ path: tempDir('room-limit') });
    const docs = new DocStore(store);
    const room = new Room('bounded', {
      persistUpdates: (us) => docs.appendAll('bounded', us),
      relayUpdate: () => undefined,
      relayAwareness: () => undefined,
      changed: () => undefined,
      warn: () => undefined,
      maxTextBytes: 1000,
    });
    const a = closer();
    const b = closer();
    room.join(a.peer, 'ann');
    room.join(b.peer, 'bob');
    const write = writer();
    // 300 Korean syllables are 900 bytes of UTF-8: within the limit
    room.receive(a.peer, frame(write('가'.repeat(300))));
    await room.settled();
    expect(Buffer.byteLength(room.text)).toBe(900);
    // 40 more syllables would make 1,020 bytes: refused, the sender closed, the text unchanged
    room.receive(a.peer, frame(write('나'.repeat(40))));
    await room.settled();
    expect(a.closes).toEqual([{ code: WS_CLOSE_DOC_TOO_LARGE, reason: expect.stringMatching(/^document_too_large: .*1000 bytes/) }]);
    expect(room.text).toBe('가'.repeat(300));
    // the other editor carries on up to the limit, and a delete makes room again
    const loaded = new Y.Doc();
    Y.applyUpdate(loaded, (await docs.load('bounded'))!);
    const sv = Y.encodeStateVector(loaded);
    const bDoc = new Y.Doc();
    Y.applyUpdate(bDoc, (await docs.load('bounded'))!);
    bDoc.getText('content').insert(0, 'x'.repeat(100));
    room.receive(b.peer, frame(Y.encodeStateAsUpdate(bDoc, sv)));
    await room.settled();
    expect(Buffer.byteLength(room.text)).toBe(1000);
    const sv2 = Y.encodeStateVector(bDoc);
    bDoc.getText('content').delete(0, 50);
    bDoc.getText('content').insert(0, 'y'.repeat(50));
    room.receive(b.peer, frame(Y.encodeStateAsUpdate(bDoc, sv2)));
    await room.settled();
    expect(b.closes).toEqual([]);
    expect(room.text).toBe('y'.repeat(50) + 'x'.repeat(50) + '가'.repeat(300));
    // the store holds exactly what the room accepted
    const fresh = new Y.Doc();
    Y.applyUpdate(fresh, (await docs.load('bounded'))!);
    expect(fresh.getText('content').toString()).toBe(room.text);
    room.destroy();
    await store.close();
  });

  it('an update held back for a missing predecessor counts: it cannot slip past the limit with a small one', async () => {
    const room = new Room('pending', {
      persistUpdates: async () => undefined,
      relayUpdate: () => undefined,
      relayAwareness: () => undefined,
      changed: () => undefined,
      warn: () => undefined,
      maxTextBytes: 1000,
    });
    const a = closer();
    room.join(a.peer, 'ann');
    const write = writer();
    const first = write('a');
    const big = write('b'.repeat(900));
    // the big one first: it waits for `first` (not in the text yet), then `first` joins it... and
    // then one more that would pass the limit only together with what waited
    room.receive(a.peer, frame(big));
    await room.settled();
    expect(room.text).toBe('');
    room.receive(a.peer, frame(first));
    await room.settled();
    expect(room.text.length).toBe(901);
    room.receive(a.peer, frame(write('c'.repeat(200))));
    await room.settled();
    expect(a.closes.map((c) => c.code)).toEqual([WS_CLOSE_DOC_TOO_LARGE]);
    expect(room.text.length).toBe(901);
    room.destroy();
  });

  it('a peer the room closes (a garbage frame) leaves no awareness state behind', () => {
    const room = new Room('ghost', {
      persistUpdates: async () => undefined,
      relayUpdate: () => undefined,
      relayAwareness: () => undefined,
      changed: () => undefined,
      warn: () => undefined,
    });
    const a = closer();
    room.join(a.peer, 'ann');
    const mine = new awarenessProtocol.Awareness(new Y.Doc());
    mine.setLocalStateField('user', { name: 'ann' });
    room.receive(a.peer, awarenessFrame(mine));
    expect(room.awareness.getStates().has(mine.clientID)).toBe(true);
    room.receive(a.peer, new Uint8Array([9, 9, 9]));
    expect(a.closes.map((c) => c.code)).toEqual([4400]);
    room.leave(a.peer);
    expect(room.awareness.getStates().size).toBe(0);
    expect(room.localClients).toEqual([]);
    room.destroy();
  });
});

describe('live co-editing over the limit, with the stock y-websocket client', () => {
  let maru: Maru;
  let base: string;
  let editor = '';
  beforeAll(async () => {
    maru = await startMaru(
      loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('collab-limit'), LOG_LEVEL: 'silent', MD_MAX_BYTES: '2048', MD_PERSIST_DEBOUNCE_MS: '100', MD_PERSIST_MAX_MS: '400', ...AUTH_TEST_ENV }),
      { logger: pino({ level: 'silent' }) },
    );
    base = maru.url;
    editor = await signIn(base, ['editor']);
  });
  afterAll(() => maru?.stop());

  it('closes the editor that passes MD_MAX_BYTES with 4413 (final), and a fresh client gets every accepted edit', async () => {
    const a = editorClient(base, 'bounded-live', 'ann', editor);
    const closed: { code: number; reason: string }[] = [];
    a.provider.on('closed' as never, ((ev: { code: number; reason: string }) => closed.push(ev)) as never);
    await until(() => a.provider.synced, 8000, 'sync');
    a.text.insert(0, 'kept '.repeat(300)); // 1,500 bytes
    await until(async () => (await fetch(`${base}/api/md/doc/bounded-live`)).status === 200, 5000, 'saved');
    a.text.insert(a.text.length, 'x'.repeat(1000));
    await until(() => closed.length > 0, 5000, 'closed');
    expect(closed[0]).toMatchObject({ code: 4413, reason: expect.stringMatching(/document_too_large/) });
    a.close();
    // after the editor left (the room unloads), a fresh client gets the accepted text, and so does the saved document
    await until(() => !maru.hub.connections().sockets, 3000, 'socket closed');
    const b = editorClient(base, 'bounded-live', 'bob', editor);
    await until(() => b.provider.synced && b.text.toString().length > 0, 8000, 'fresh sync');
    expect(b.text.toString()).toBe('kept '.repeat(300));
    const saved = (await (await fetch(`${base}/api/md/doc/bounded-live`)).json()) as { doc: { content: string } };
    expect(saved.doc.content).toBe('kept '.repeat(300));
    b.close();
  });
});
