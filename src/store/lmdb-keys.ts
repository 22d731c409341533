/**
 * The LMDB adapter's binary key layout.
 *
 * Binary keys, byte-ordered. `esc(s)` is the UTF-8 of s with bytes 0x00 and 0x01
 * escaped as 0x01 0x01 and 0x01 0x02, which keeps byte order and frees 0x00 as a terminator.
 *   'v' esc(key)                              -> value envelope: JSON `[value]` or `[value, expiresAt]`
 *   'e' u64(expiresAt) esc(key)               -> '' (expiry queue for the sweep)
 *   'm' esc(key)                              -> list bounds JSON `[head, tail]` (entries head..tail-1)
 *   'l' esc(key) 00 u64(seq)                  -> list entry JSON
 *   'z' esc(key) 00 f64(score) esc(member)    -> '' (ordered index entry)
 *   's' esc(key) 00 esc(member)               -> score of the member
 *   'c' esc(key)                              -> number of members in the index
 * u64 is big-endian; f64 is the IEEE double with its bits arranged to sort bytewise.
 */

const TAG_VALUE = 0x76;
export const TAG_EXPIRY = 0x65;
const TAG_LIST_META = 0x6d;
const TAG_LIST = 0x6c;
const TAG_INDEX = 0x7a;
const TAG_SCORE = 0x73;
const TAG_COUNT = 0x63;

/** lmdb-js refuses keys longer than this many bytes. */
const MAX_KEY_BYTES = 1978;

export const TERMINATOR = Buffer.from([0]);

export function esc(s: string): Buffer {
  const raw = Buffer.from(s, 'utf8');
  if (raw.indexOf(0) < 0 && raw.indexOf(1) < 0) return raw;
  const out = Buffer.allocUnsafe(raw.length * 2);
  let n = 0;
  for (const b of raw) {
    if (b <= 1) {
      out[n++] = 1;
      out[n++] = b + 1;
    } else {
      out[n++] = b;
    }
  }
  return out.subarray(0, n);
}

export function unesc(buf: Uint8Array): string {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  if (b.indexOf(1) < 0) return b.toString('utf8');
  const out = Buffer.allocUnsafe(b.length);
  let n = 0;
  for (let i = 0; i < b.length; i++) {
    const c = b[i]!;
    if (c === 1) {
      out[n++] = b[++i]! - 1;
    } else {
      out[n++] = c;
    }
  }
  return out.toString('utf8', 0, n);
}

export function u64(n: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeUInt32BE(Math.floor(n / 0x1_0000_0000), 0);
  b.writeUInt32BE(n >>> 0, 4);
  return b;
}

export function readU64(b: Uint8Array, at: number): number {
  const v = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return v.readUInt32BE(at) * 0x1_0000_0000 + v.readUInt32BE(at + 4);
}

export function f64(score: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeDoubleBE(score === 0 ? 0 : score);
  if (b[0]! & 0x80) {
    for (let i = 0; i < 8; i++) b[i] = ~b[i]! & 0xff;
  } else {
    b[0] = b[0]! | 0x80;
  }
  return b;
}

export function readF64(src: Uint8Array, at: number): number {
  const b = Buffer.from(src.subarray(at, at + 8));
  if (b[0]! & 0x80) {
    b[0] = b[0]! & 0x7f;
  } else {
    for (let i = 0; i < 8; i++) b[i] = ~b[i]! & 0xff;
  }
  return b.readDoubleBE(0);
}

export function sized(key: Buffer): Buffer {
  if (key.length > MAX_KEY_BYTES) {
    throw new RangeError(`key too long for LMDB (${key.length} > ${MAX_KEY_BYTES} bytes)`);
  }
  return key;
}

// ---- single-pass key building ----
//
// A key is built in one buffer: the tag, then each escaped string written in place (a string without
// a 0x00 or 0x01 character, the usual case, is its UTF-8 as is), the terminators and the 8-byte
// numbers between them. No intermediate buffers: this runs several times per write of every update.

const NEEDS_ESC = /[\u0000\u0001]/;

/** Bytes that `esc(s)` takes at most (3 per UTF-16 unit; an escaped 0x00 or 0x01 takes 2). */
const room = (s: string) => 3 * s.length;

/** Writes esc(s) into `b` at `at`; the position after it. */
function putEsc(b: Buffer, at: number, s: string): number {
  if (!NEEDS_ESC.test(s)) return at + b.write(s, at);
  const e = esc(s);
  e.copy(b, at);
  return at + e.length;
}

/** Writes f64(score) into `b` at `at`. */
function putF64(b: Buffer, at: number, score: number): number {
  b.writeDoubleBE(score === 0 ? 0 : score, at);
  if (b[at]! & 0x80) {
    for (let i = at; i < at + 8; i++) b[i] = ~b[i]! & 0xff;
  } else {
    b[at] = b[at]! | 0x80;
  }
  return at + 8;
}

/** tag esc(key) */
function tagKey(tag: number, key: string): Buffer {
  const b = Buffer.allocUnsafe(1 + room(key));
  b[0] = tag;
  return sized(b.subarray(0, putEsc(b, 1, key)));
}

/** tag esc(key) 00 */
function tagPrefix(tag: number, key: string): Buffer {
  const b = Buffer.allocUnsafe(2 + room(key));
  b[0] = tag;
  const n = putEsc(b, 1, key);
  b[n] = 0;
  return sized(b.subarray(0, n + 1));
}

export const valueKey = (key: string) => tagKey(TAG_VALUE, key);
export const expiryKey = (at: number, key: string) => {
  const b = Buffer.allocUnsafe(9 + room(key));
  b[0] = TAG_EXPIRY;
  b.writeUInt32BE(Math.floor(at / 0x1_0000_0000), 1);
  b.writeUInt32BE(at >>> 0, 5);
  return sized(b.subarray(0, putEsc(b, 9, key)));
};
export const listMetaKey = (key: string) => tagKey(TAG_LIST_META, key);
export const listPrefix = (key: string) => tagPrefix(TAG_LIST, key);
export const indexPrefix = (key: string) => tagPrefix(TAG_INDEX, key);
export const scoreKey = (key: string, member: string) => {
  const b = Buffer.allocUnsafe(2 + room(key) + room(member));
  b[0] = TAG_SCORE;
  const n = putEsc(b, 1, key);
  b[n] = 0;
  return sized(b.subarray(0, putEsc(b, n + 1, member)));
};
export const countKey = (key: string) => tagKey(TAG_COUNT, key);

/** 'z' esc(key) 00 f64(score) esc(member): an index entry (indexPrefix(key), f64(score), esc(member)). */
export const indexEntryKey = (key: string, score: number, member: string) => {
  const b = Buffer.allocUnsafe(10 + room(key) + room(member));
  b[0] = TAG_INDEX;
  const n = putEsc(b, 1, key);
  b[n] = 0;
  return sized(b.subarray(0, putEsc(b, putF64(b, n + 1, score), member)));
};

/** The value of an index entry (empty: the key says it all), one buffer for every entry. */
export const EMPTY = Buffer.alloc(0);

/** The smallest key above every key that starts with `prefix` (whose last byte is 0x00). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  end[end.length - 1] = 1;
  return end;
}

