import type { DrawOptions, Json, UpdatePlan, Write } from './port.js';

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
  | { op: 'incr'; key: S; by: number };

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
      const score = draws !== undefined && typeof w.score === 'string' ? drawnScore(w.score, draws) : checkScore(w.score);
      return { op: 'index', key: text(checkKey(w.key)), member: text(checkKey(w.member, 'member')), score };
    }
    case 'unindex':
      return { op: 'unindex', key: text(checkKey(w.key)), member: text(checkKey(w.member, 'member')) };
    case 'incr':
      return { op: 'incr', key: text(checkKey(w.key)), by: checkInt(w.by, 'by') };
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

/** The pieces of `s`, or undefined when it holds no placeholder. */
export function splitDrawn(s: string, draws: number): Piece[] | undefined {
  if (!s.includes('\u0000#')) return undefined;
  const out: Piece[] = [];
  let at = 0;
  for (const m of s.matchAll(PLACEHOLDER)) {
    const draw = Number(m[1]);
    const width = m[2] === undefined ? 0 : Number(m[2]);
    if (draw >= draws) throw new RangeError(`placeholder drawn(${m[1]}) names no counter of the update's draw`);
    if (width > 20) throw new RangeError('placeholder width must be at most 20');
    if (m.index > at) out.push(s.slice(at, m.index));
    out.push({ draw, width });
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

const isWhole = (p: Piece[]): boolean => p.length === 1 && typeof p[0] !== 'string' && p[0]!.width === 0;

/**
 * The JSON text of a value: a plain string when it holds no placeholder, else pieces, where a
 * string that is exactly a placeholder without width is the bare number.
 */
export function jsonPieces(value: unknown, draws: number): Text {
  const text = encodeJson(value);
  // JSON writes the NUL of a placeholder as \u0000: a text without it holds none
  if (!text.includes('\\u0000#')) return text;
  const out: Piece[] = [];
  const lit = (s: string) => {
    if (typeof out[out.length - 1] === 'string') out[out.length - 1] += s;
    else out.push(s);
  };
  const str = (s: string, whole: boolean) => {
    const p = splitDrawn(s, draws);
    if (!p) return lit(JSON.stringify(s));
    if (whole && isWhole(p)) return void out.push(p[0]!);
    lit('"');
    for (const x of p) {
      if (typeof x === 'string') lit(JSON.stringify(x).slice(1, -1));
      else out.push(x);
    }
    lit('"');
  };
  const walk = (v: Json) => {
    if (typeof v === 'string') return str(v, true);
    if (Array.isArray(v)) {
      lit('[');
      v.forEach((x, i) => {
        if (i > 0) lit(',');
        walk(x);
      });
      return lit(']');
    }
    if (v !== null && typeof v === 'object') {
      lit('{');
      Object.entries(v).forEach(([k, x], i) => {
        if (i > 0) lit(',');
        str(k, false);
        lit(':');
        walk(x);
      });
      return lit('}');
    }
    lit(JSON.stringify(v));
  };
  // the parsed text is plain JSON data: what encodeJson kept, in its order
  walk(JSON.parse(text) as Json);
  return out.length === 1 && typeof out[0] === 'string' ? out[0] : out;
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
  }
}
