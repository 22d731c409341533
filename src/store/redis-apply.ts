import type { Result } from 'ioredis';
import type { Write } from './port.js';
import { prepareWrite, type Piece, type Text } from './checks.js';

/**
 * The Redis adapter's atomic apply: one Lua script that checks the values an update read and
 * applies its writes, and the translation of a Write into the script's keys and arguments.
 */

/**
 * KEYS[1..n]: the value keys fn read. ARGV[1] = n; ARGV[1+i] = '0' when key i was absent, or '1'
 * followed by the exact string read.
 *
 * Then the draws: ARGV[n+2] = d, and KEYS[n+1..n+d] the counters drawn from, in order. The number
 * drawn from each is its value + 1 (absent = 0; a counter listed twice gives consecutive numbers).
 *
 * Then the placeholders: ARGV[n+3] = the count of arguments that follow for them, as templates,
 * each: its target (an index into KEYS, or minus an index into ARGV: a key or argument of a write,
 * sent as ''), the count of its pieces, then the pieces, alternating literal text and a drawn
 * number as 'index:width' (index from 0, width 0 for none), literal first and last. Each target is
 * replaced by its filled text before any write runs.
 *
 * Then the writes, in order, as an opcode and its arguments; the keys each write touches follow the
 * draw keys in KEYS, in the same order:
 *   s value px   (1 key; px '' for no TTL)       SET
 *   d            (3 keys: value, list, index)     DEL
 *   p value -cap (1 key)                          RPUSH + LTRIM
 *   z score member (1 key)                        ZADD
 *   u member     (1 key)                          ZREM
 *   i by         (1 key)                          INCRBY (the key is not read: no conflict over it)
 *   P mode msg   (1 key: the channel)             PUBLISH (mode 'g') or SPUBLISH (mode 's'), after the writes before it
 * Returns 0 when a read key changed (nothing written), else an array: 1, then the numbers drawn.
 * Lua does not roll back, so every draw counter and INCRBY target is checked (an integer or absent,
 * as stored or as the plan's writes before it leave it) before anything is written, and the numbers
 * are known before the draws' INCRBY.
 */
export const APPLY_LUA = `
local n = tonumber(ARGV[1])
for i = 1, n do
  local cur = redis.call('GET', KEYS[i])
  local want = ARGV[1 + i]
  if cur == false then
    if want ~= '0' then return 0 end
  elseif string.byte(want, 1) ~= 49 or string.sub(want, 2) ~= cur then
    return 0
  end
end
local function integer(key)
  local cur = redis.call('GET', key)
  if cur == false then return 0 end
  if not string.match(cur, '^%-?%d+$') then
    return redis.error_reply('value at ' .. key .. ' is not an integer')
  end
  return tonumber(cur)
end
local d = tonumber(ARGV[n + 2])
local drawn = {1}
local after = {}
for j = 1, d do
  local key = KEYS[n + j]
  local cur = after[key]
  if cur == nil then
    cur = integer(key)
    if type(cur) == 'table' then return cur end
  end
  after[key] = cur + 1
  drawn[j + 1] = cur + 1
end
local a = n + 4
local last = n + 3 + tonumber(ARGV[n + 3])
while a <= last do
  local target = tonumber(ARGV[a])
  local count = tonumber(ARGV[a + 1])
  local parts = {}
  for j = 0, count - 1 do
    local piece = ARGV[a + 2 + j]
    if j % 2 == 0 then
      parts[j + 1] = piece
    else
      local index, width = string.match(piece, '^(%d+):(%d+)$')
      local format = '%d'
      if width ~= '0' then format = '%0' .. width .. 'd' end
      parts[j + 1] = string.format(format, drawn[tonumber(index) + 2])
    end
  end
  if target > 0 then KEYS[target] = table.concat(parts) else ARGV[-target] = table.concat(parts) end
  a = a + 2 + count
end
local first = a
last = #ARGV
local k = n + d + 1
-- an INCRBY target as the writes before it in this plan leave it (a set of a text, a delete)
local planned = {}
while a <= last do
  local op = ARGV[a]
  if op == 'i' then
    local p = planned[KEYS[k]]
    if p == nil then
      local cur = integer(KEYS[k])
      if type(cur) == 'table' then return cur end
    elseif p ~= false and not string.match(p, '^%-?%d+$') then
      return redis.error_reply('value at ' .. KEYS[k] .. ' is not an integer')
    end
    planned[KEYS[k]] = '0'
    k = k + 1
    a = a + 2
  elseif op == 's' then
    planned[KEYS[k]] = ARGV[a + 1]
    k = k + 1
    a = a + 3
  elseif op == 'p' or op == 'z' or op == 'P' then
    k = k + 1
    a = a + 3
  elseif op == 'd' then
    planned[KEYS[k]] = false
    k = k + 3
    a = a + 1
  else
    k = k + 1
    a = a + 2
  end
end
for j = 1, d do
  redis.call('INCRBY', KEYS[n + j], 1)
end
k = n + d + 1
a = first
while a <= last do
  local op = ARGV[a]
  if op == 's' then
    if ARGV[a + 2] == '' then
      redis.call('SET', KEYS[k], ARGV[a + 1])
    else
      redis.call('SET', KEYS[k], ARGV[a + 1], 'PX', ARGV[a + 2])
    end
    k = k + 1
    a = a + 3
  elseif op == 'd' then
    redis.call('DEL', KEYS[k], KEYS[k + 1], KEYS[k + 2])
    k = k + 3
    a = a + 1
  elseif op == 'p' then
    redis.call('RPUSH', KEYS[k], ARGV[a + 1])
    redis.call('LTRIM', KEYS[k], ARGV[a + 2], -1)
    k = k + 1
    a = a + 3
  elseif op == 'z' then
    redis.call('ZADD', KEYS[k], ARGV[a + 1], ARGV[a + 2])
    k = k + 1
    a = a + 3
  elseif op == 'u' then
    redis.call('ZREM', KEYS[k], ARGV[a + 1])
    k = k + 1
    a = a + 2
  elseif op == 'i' then
    redis.call('INCRBY', KEYS[k], ARGV[a + 1])
    k = k + 1
    a = a + 2
  elseif op == 'P' then
    if ARGV[a + 1] == 's' then
      redis.call('SPUBLISH', KEYS[k], ARGV[a + 2])
    else
      redis.call('PUBLISH', KEYS[k], ARGV[a + 2])
    end
    k = k + 1
    a = a + 3
  else
    return redis.error_reply('unknown op ' .. tostring(op))
  end
end
return drawn
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** APPLY_LUA, defined on the connection with defineCommand('maruApply'): numKeys, keys, args. */
    maruApply(...numKeysKeysArgs: string[]): Result<0 | number[], Context>;
  }
}

/** The adapter's layout (see redis.ts). */
export interface RedisKeys {
  /**
   * What comes before a Store key in its Redis key in `space` (v value, l list, z index): the
   * prefix, and on a cluster the hash tag of the partition of `placement` (the key's text, the
   * placeholders of drawn numbers in place).
   */
  head(space: 'v' | 'l' | 'z', placement: string): string;
  /** The Redis channel of a Store channel, and whether it is a sharded one (SPUBLISH). */
  channel(name: string): { name: string; sharded: boolean };
}

/** A write as the keys it touches and the script's arguments for it (templates: see APPLY_LUA). */
export interface ApplyArgs {
  keys: Text[];
  args: Text[];
}

/** The text of a key that holds placeholders, as fn wrote it. */
const template = (pieces: Piece[]): string =>
  pieces.map((p) => (typeof p === 'string' ? p : p.width === 0 ? `\u0000#${p.draw}\u0000` : `\u0000#${p.draw}.${p.width}\u0000`)).join('');

/** A key of the layout for a key that may hold placeholders. */
const under = (k: RedisKeys, space: 'v' | 'l' | 'z', key: Text): Text => {
  if (typeof key === 'string') return k.head(space, key) + key;
  const head = k.head(space, template(key));
  return typeof key[0] === 'string' ? [head + key[0], ...key.slice(1)] : [head, ...key];
};

const score = (s: number | Piece[]): Text => (typeof s === 'number' ? String(s) : s);

/** `draws`: the number of counters the update draws from (placeholders are split out then). */
export function prepareApply(write: Write, k: RedisKeys, draws?: number): ApplyArgs {
  const w = draws === undefined ? prepareWrite(write) : prepareWrite(write, draws);
  switch (w.op) {
    case 'set':
      return { keys: [under(k, 'v', w.key)], args: ['s', w.json, w.ttlMs === undefined ? '' : String(w.ttlMs)] };
    case 'del':
      return { keys: [under(k, 'v', w.key), under(k, 'l', w.key), under(k, 'z', w.key)], args: ['d'] };
    case 'push':
      return { keys: [under(k, 'l', w.key)], args: ['p', w.json, String(-w.cap)] };
    case 'index':
      return { keys: [under(k, 'z', w.key)], args: ['z', score(w.score), w.member] };
    case 'unindex':
      return { keys: [under(k, 'z', w.key)], args: ['u', w.member] };
    case 'incr':
      return { keys: [under(k, 'v', w.key)], args: ['i', String(w.by)] };
    case 'publish': {
      const ch = k.channel(w.key);
      return { keys: [ch.name], args: ['P', ch.sharded ? 's' : 'g', w.message] };
    }
  }
}

/**
 * The script's keys and arguments for one attempt: the read keys and the strings read, the draw
 * counters, the templates of the placeholders, the writes.
 */
export function applyCall(readKeys: string[], raws: (string | null)[], drawKeys: string[], writes: ApplyArgs[]): string[] {
  const keys: string[] = [...readKeys, ...drawKeys];
  const args: string[] = [];
  const templates: { target: number; pieces: Piece[] }[] = [];
  for (const w of writes) {
    for (const key of w.keys) {
      // a key holding placeholders is declared by its literal text (the head, with the partition's
      // hash tag on a cluster, comes first), so the script's keys all name their slot
      keys.push(typeof key === 'string' ? key : key.filter((p): p is string => typeof p === 'string').join(''));
      if (typeof key !== 'string') templates.push({ target: keys.length, pieces: key });
    }
    for (const arg of w.args) {
      args.push(typeof arg === 'string' ? arg : '');
      // minus the index among the writes' arguments, made absolute below
      if (typeof arg !== 'string') templates.push({ target: -args.length, pieces: arg });
    }
  }
  const head = [String(readKeys.length), ...raws.map((r) => (r === null ? '0' : `1${r}`)), String(drawKeys.length)];
  const section: string[] = [];
  for (const t of templates) {
    const pieces = alternate(t.pieces);
    section.push('', String(pieces.length), ...pieces);
  }
  // the writes' arguments start after the head, the section's length and the section
  const offset = head.length + 1 + section.length;
  let at = 0;
  for (const t of templates) {
    section[at] = String(t.target > 0 ? t.target : -(offset - t.target));
    at += 2 + Number(section[at + 1]);
  }
  return [String(keys.length), ...keys, ...head, String(section.length), ...section, ...args];
}

/** Pieces as the script reads them: literal text and 'index:width' alternating, literal first and last. */
function alternate(pieces: Piece[]): string[] {
  const out: string[] = [];
  for (const p of pieces) {
    if (typeof p === 'string') {
      if (out.length % 2 === 1) out[out.length - 1] += p;
      else out.push(p);
    } else {
      if (out.length % 2 === 0) out.push('');
      out.push(`${p.draw}:${p.width}`);
    }
  }
  if (out.length % 2 === 0) out.push('');
  return out;
}
