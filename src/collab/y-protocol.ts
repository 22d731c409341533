import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';

/**
 * The y-websocket wire protocol as pure functions: frames in, typed messages out, and the frames a
 * room sends. No sockets, no state. Decoding validates everything a peer can send (an update is
 * decoded by Yjs, an awareness entry's state is parsed as JSON) before a document is touched.
 */

export const MSG_SYNC = 0;
export const MSG_AWARENESS = 1;
export const MSG_QUERY_AWARENESS = 3;

export type YMessage =
  | { kind: 'sync-step-1'; stateVector: Uint8Array }
  | { kind: 'update'; update: Uint8Array }
  | { kind: 'awareness'; update: Uint8Array }
  | { kind: 'query-awareness' };

/** Throws on anything that is not a well-formed y-websocket frame. */
export function decodeMessage(data: Uint8Array): YMessage {
  const dec = decoding.createDecoder(data);
  const type = decoding.readVarUint(dec);
  if (type === MSG_SYNC) {
    const sub = decoding.readVarUint(dec);
    if (sub === syncProtocol.messageYjsSyncStep1) return { kind: 'sync-step-1', stateVector: decoding.readVarUint8Array(dec) };
    if (sub === syncProtocol.messageYjsSyncStep2 || sub === syncProtocol.messageYjsUpdate) {
      const update = decoding.readVarUint8Array(dec);
      Y.decodeUpdate(update);
      return { kind: 'update', update };
    }
    throw new Error(`unknown sync message ${sub}`);
  }
  if (type === MSG_AWARENESS) {
    const update = decoding.readVarUint8Array(dec);
    const d2 = decoding.createDecoder(update);
    const n = decoding.readVarUint(d2);
    for (let i = 0; i < n; i++) {
      decoding.readVarUint(d2);
      decoding.readVarUint(d2);
      JSON.parse(decoding.readVarString(d2));
    }
    return { kind: 'awareness', update };
  }
  if (type === MSG_QUERY_AWARENESS) return { kind: 'query-awareness' };
  throw new Error(`unknown message type ${type}`);
}

/** Sync step 1: the room's state vector (the peer answers with what the room lacks). */
export function syncStep1(doc: Y.Doc): Uint8Array {
  const enc = encoding.createEncoder();
  encoding.writeVarUint(enc, MSG_SYNC);
  syncProtocol.writeSyncStep1(enc, doc);
  return encoding.toUint8Array(enc);
}

/** Sync step 2: what a peer with `stateVector` lacks. */
export function syncStep2(doc: Y.Doc, stateVector: Uint8Array): Uint8Array {
  const enc = encoding.createEncoder();
  encoding.writeVarUint(enc, MSG_SYNC);
  encoding.writeVarUint(enc, syncProtocol.messageYjsSyncStep2);
  encoding.writeVarUint8Array(enc, Y.encodeStateAsUpdate(doc, stateVector));
  return encoding.toUint8Array(enc);
}

export function updateMessage(update: Uint8Array): Uint8Array {
  const enc = encoding.createEncoder();
  encoding.writeVarUint(enc, MSG_SYNC);
  syncProtocol.writeUpdate(enc, update);
  return encoding.toUint8Array(enc);
}

export function awarenessMessage(awareness: awarenessProtocol.Awareness, clients: number[]): Uint8Array {
  const enc = encoding.createEncoder();
  encoding.writeVarUint(enc, MSG_AWARENESS);
  encoding.writeVarUint8Array(enc, awarenessProtocol.encodeAwarenessUpdate(awareness, clients));
  return encoding.toUint8Array(enc);
}
