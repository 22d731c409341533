import type { DrawOptions, UpdatePlan, Write } from './port.js';

/**
 * Argument checks shared by both Store adapters, so a bad call fails the same way on LMDB and on
 * Redis (and before anything is written).
 */

export function checkKey(key: unknown, what = 'key'): string {
  if (typeof key !== 'string') throw new TypeError(`${what} must be a string`);
  return key;
}

export function encodeJson(value: unknown): string {
  const text = JSON.stringify(value);
  if (typeof text !== 'string') throw new TypeError('value is not JSON-serialisable');
  return text;
}

export function checkTtl(ttlMs: unknown): number | undefined {
  if (ttlMs === undefined) return undefined;
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
    throw new RangeError('ttlMs must be a positive number of milliseconds');
  }
  return Math.ceil(ttlMs);
}

export function checkCap(cap: unknown): number {
  if (typeof cap !== 'number' || !Number.isSafeInteger(cap) || cap < 1) {
    throw new RangeError('cap must be a positive integer');
  }
  return cap;
}

/** A finite score; -0 becomes 0 so both adapters order and compare it the same way. */
export function checkScore(score: unknown): number {
  if (typeof score !== 'number' || !Number.isFinite(score)) {
    throw new RangeError('score must be a finite number');
  }
  return score === 0 ? 0 : score;
}

export function checkInt(n: unknown, what: string): number {
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) {
    throw new RangeError(`${what} must be an integer`);
  }
  return n;
}

/** Text with the placeholders of drawn numbers split out (see DrawingPlan in port.ts). */
export type Piece = string | { draw: number; width: number };
/** A plain string, or pieces when it holds placeholders. */
export type Text = string | Piece[];

/**
 * A write with its fields checked and its value already serialised. In an update that draws, the
 * keys, members, values and scores may still hold placeholders (`Text`, pieces for a score); with
 * the numbers known, fillWrite() makes them plain.
 */
export type PreparedWrite<S extends Text = string, N extends number | Piece[] = number> =
  | { op: 'set'; key: S; json: S; ttlMs: number | undefined }
  | { op: 'del'; key: S }
  | { op: 'push'; key: S; json: S; cap: number }
  | { op: 'index'; key: S; member: S; score: N }
  | { op: 'unindex'; key: S; member: S }
  | { op: 'incr'; key: S; by: number }
  | { op: 'publish'; key: string; message: string };

export type DrawingWrite = PreparedWrite<Text, number | Piece[]>;

/**
 * The write with its fields checked. With `draws` (the number of counters the update draws from),
 * placeholders are split out of its strings; without, a placeholder is plain text.
 */
export function prepareWrite(w: Write): PreparedWrite;
export function prepareWrite(w: Write, draws: number): DrawingWrite;
export function prepareWrite(w: Write, draws?: number): DrawingWrite {
  if (!w || typeof w !== 'object') throw new TypeError('write must be an object');
  const text = draws === undefined ? (s: string) => s : (s: string) => splitDrawn(s, draws) ?? s;
  const json = draws === undefined ? encodeJson : (v: unknown) => jsonPieces(v, draws);
  switch (w.op) {
    case 'set':
      return { op: 'set', key: text(checkKey(w.key)), json: json(w.value), ttlMs: checkTtl(w.ttlMs) };
    case 'del':
      return { op: 'del', key: text(checkKey(w.key)) };
    case 'push':
      return { op: 'push', key: text(checkKey(w.key)), json: json(w.value), cap: checkCap(w.cap) };
    case 'index': {
      // fields are checked in their order (key, member, score), so the error names the first bad one
      const key = text(checkKey(w.key));
      const member = text(checkKey(w.member, 'member'));
      const score = draws !== undefined && typeof w.score === 'string' ? drawnScore(w.score, draws) : checkScore(w.score);
      return { op: 'index', key, member, score };
    }
    case 'unindex':
      return { op: 'unindex', key: text(checkKey(w.key)), member: text(checkKey(w.member, 'member')) };
    case 'incr':
      return { op: 'incr', key: text(checkKey(w.key)), by: checkInt(w.by, 'by') };
    case 'publish':
      if (typeof w.message !== 'string') throw new TypeError('message must be a string');
      return { op: 'publish', key: checkKey(w.key, 'channel'), message: w.message };
    default:
      throw new TypeError(`unknown write op ${JSON.stringify((w as { op?: unknown }).op)}`);
  }
}

// ---- drawn numbers ----

/** fn's plan, checked the same way by both adapters. */
export function checkPlan<R>(plan: UpdatePlan<R>): UpdatePlan<R> {
  if (!plan || typeof plan !== 'object' || !Array.isArray(plan.writes)) throw new TypeError('update fn must return { writes, result }');
  return plan;
}

/** The counters of DrawOptions; undefined without options. */
export function checkDraw(opts: DrawOptions | undefined): string[] | undefined {
  if (opts === undefined) return undefined;
  if (!opts || !Array.isArray(opts.draw)) throw new TypeError('draw must be an array of keys');
  return opts.draw.map((k) => checkKey(k, 'draw key'));
}

// the same pattern as drawn() in port.ts writes
const PLACEHOLDER = /\u0000#(\d+)(?:\.(\d+))?\u0000/g;

/** The drawn number a placeholder names, checked against the update's draw. */
function drawnPiece(m: RegExpExecArray | RegExpMatchArray, draws: number): { draw: number; width: number } {
  const draw = Number(m[1]);
  const width = m[2] === undefined ? 0 : Number(m[2]);
  if (draw >= draws) throw new RangeError(`placeholder drawn(${m[1]}) names no counter of the update's draw`);
  if (width > 20) throw new RangeError('placeholder width must be at most 20');
  return { draw, width };
}

/** The pieces of `s`, or undefined when it holds no placeholder. */
export function splitDrawn(s: string, draws: number): Piece[] | undefined {
  if (!s.includes('\u0000#')) return undefined;
  const out: Piece[] = [];
  let at = 0;
  for (const m of s.matchAll(PLACEHOLDER)) {
    if (m.index > at) out.push(s.slice(at, m.index));
    out.push(drawnPiece(m, draws));
    at = m.index + m[0].length;
  }
  if (out.length === 0) return undefined;
  if (at < s.length) out.push(s.slice(at));
  return out;
}

function drawnScore(s: string, draws: number): Piece[] {
  const pieces = splitDrawn(s, draws);
  if (!pieces || pieces.length !== 1) throw new RangeError('score must be a finite number or a placeholder');
  return pieces;
}

// a placeholder as JSON writes it: its NULs escaped as \u0000
const ESCAPED = /\\u0000#(\d+)(?:\.(\d+))?\\u0000/g;

/** Whether the character at `i` of a JSON text is escaped (an odd run of backslashes before it). */
function escapedAt(text: string, i: number): boolean {
  let n = 0;
  while (i - 1 - n >= 0 && text.charCodeAt(i - 1 - n) === 92) n++;
  return n % 2 === 1;
}

/**
 * The JSON text of a value: a plain string when it holds no placeholder, else pieces, where a
 * string value that is exactly a placeholder without width is the bare number (an object key stays
 * a string).
 */
export function jsonPieces(value: unknown, draws: number): Text {
  const text = encodeJson(value);
  if (!text.includes('\\u0000#')) return text;
  const out: Piece[] = [];
  let at = 0;
  const re = new RegExp(ESCAPED);
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const i = m.index;
    // text that only reads like a placeholder: its backslash is an escaped one
    if (escapedAt(text, i)) {
      re.lastIndex = i + 1;
      continue;
    }
    const piece = drawnPiece(m, draws);
    let start = i;
    let end = i + m[0].length;
    // an unescaped quote right before string content opens the string; the one after closes it
    if (piece.width === 0 && text[i - 1] === '"' && !escapedAt(text, i - 1) && text[end] === '"' && text[end + 1] !== ':') {
      start -= 1;
      end += 1;
    }
    if (start > at) out.push(text.slice(at, start));
    out.push(piece);
    at = end;
  }
  if (out.length === 0) return text;
  if (at < text.length) out.push(text.slice(at));
  return out;
}

/** A drawn number as the digits written for a placeholder (printf's %0*d: zeros after the sign). */
export function digits(n: number, width: number): string {
  const abs = String(Math.abs(n));
  return n < 0 ? `-${abs.padStart(width - 1, '0')}` : abs.padStart(width, '0');
}

const fill = (t: Text, drawn: number[]): string =>
  typeof t === 'string' ? t : t.map((p) => (typeof p === 'string' ? p : digits(drawn[p.draw]!, p.width))).join('');

/** The write with the drawn numbers in place of its placeholders. */
export function fillWrite(w: DrawingWrite, drawn: number[]): PreparedWrite {
  switch (w.op) {
    case 'set':
      return { ...w, key: fill(w.key, drawn), json: fill(w.json, drawn) };
    case 'push':
      return { ...w, key: fill(w.key, drawn), json: fill(w.json, drawn) };
    case 'index':
      return { ...w, key: fill(w.key, drawn), member: fill(w.member, drawn), score: typeof w.score === 'number' ? w.score : Number(fill(w.score, drawn)) };
    case 'unindex':
      return { ...w, key: fill(w.key, drawn), member: fill(w.member, drawn) };
    case 'del':
    case 'incr':
      return { ...w, key: fill(w.key, drawn) };
    case 'publish':
      return w;
  }
}

/** The keys (and channels) an update touches, for the partition check: written keys as given (placeholders in place). */
export function touchedKeys(read: string[], draw: string[] | undefined, writes: Write[]): string[] {
  const out = [...read, ...(draw ?? [])];
  for (const w of writes) out.push(w.key);
  return out;
}
