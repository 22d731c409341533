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

const tagged = (tag: number, ...parts: Buffer[]): Buffer =>
  sized(Buffer.concat([Buffer.from([tag]), ...parts]));

export const valueKey = (key: string) => tagged(TAG_VALUE, esc(key));
export const expiryKey = (at: number, key: string) => tagged(TAG_EXPIRY, u64(at), esc(key));
export const listMetaKey = (key: string) => tagged(TAG_LIST_META, esc(key));
export const listPrefix = (key: string) => tagged(TAG_LIST, esc(key), TERMINATOR);
export const indexPrefix = (key: string) => tagged(TAG_INDEX, esc(key), TERMINATOR);
export const scoreKey = (key: string, member: string) =>
  tagged(TAG_SCORE, esc(key), TERMINATOR, esc(member));
export const countKey = (key: string) => tagged(TAG_COUNT, esc(key));

/** The smallest key above every key that starts with `prefix` (whose last byte is 0x00). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  end[end.length - 1] = 1;
  return end;
}

