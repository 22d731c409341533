import type { Result } from 'ioredis';
import type { Write } from './port.js';
import { prepareWrite } from './checks.js';

/**
 * The Redis adapter's atomic apply: one Lua script that checks the values an update read and
 * applies its writes, and the translation of a Write into the script's keys and arguments.
 */

/**
 * KEYS[1..n]: the value keys fn read. ARGV[1] = n; ARGV[1+i] = '0' when key i was absent, or '1'
 * followed by the exact string read. Then the writes, in order, as an opcode and its arguments;
 * the keys each write touches follow the read keys in KEYS, in the same order:
 *   s value px   (1 key; px '' for no TTL)       SET
 *   d            (3 keys: value, list, index)     DEL
 *   p value -cap (1 key)                          RPUSH + LTRIM
 *   z score member (1 key)                        ZADD
 *   u member     (1 key)                          ZREM
 *   i by         (1 key)                          INCRBY (the key is not read: no conflict over it)
 * Returns 1 when applied, 0 when a read key changed (nothing written). Lua does not roll back, so
 * every INCRBY target is checked (an integer or absent) before anything is written.
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
local last = #ARGV
local k = n + 1
local a = n + 2
while a <= last do
  local op = ARGV[a]
  if op == 'i' then
    local cur = redis.call('GET', KEYS[k])
    if cur ~= false and not string.match(cur, '^%-?%d+$') then
      return redis.error_reply('value at ' .. KEYS[k] .. ' is not an integer')
    end
    k = k + 1
    a = a + 2
  elseif op == 's' or op == 'p' or op == 'z' then
    k = k + 1
    a = a + 3
  elseif op == 'd' then
    k = k + 3
    a = a + 1
  else
    k = k + 1
    a = a + 2
  end
end
k = n + 1
a = n + 2
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
  else
    return redis.error_reply('unknown op ' .. tostring(op))
  end
end
return 1
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** APPLY_LUA, defined on the connection with defineCommand('maruApply'). */
    maruApply(numKeys: number, ...args: string[]): Result<number, Context>;
  }
}

/** Key builders of the adapter's layout (see redis.ts). */
export interface RedisKeys {
  vk(key: string): string;
  lk(key: string): string;
  zk(key: string): string;
}

/** A write as the keys it touches and the script's arguments for it. */
export function prepareApply(write: Write, k: RedisKeys): { keys: string[]; args: string[] } {
  const w = prepareWrite(write);
  switch (w.op) {
    case 'set':
      return { keys: [k.vk(w.key)], args: ['s', w.json, w.ttlMs === undefined ? '' : String(w.ttlMs)] };
    case 'del':
      return { keys: [k.vk(w.key), k.lk(w.key), k.zk(w.key)], args: ['d'] };
    case 'push':
      return { keys: [k.lk(w.key)], args: ['p', w.json, String(-w.cap)] };
    case 'index':
      return { keys: [k.zk(w.key)], args: ['z', String(w.score), w.member] };
    case 'unindex':
      return { keys: [k.zk(w.key)], args: ['u', w.member] };
    case 'incr':
      return { keys: [k.vk(w.key)], args: ['i', String(w.by)] };
  }
}
