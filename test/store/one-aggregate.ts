import type { DrawOptions, Json, Store, UpdateFn, Write } from '../../src/store/port.js';

/**
 * A Store whose keys all lie in one aggregate: every key (read, drawn from, written) gets `prefix`
 * (`<service>:<kind>:<id>:`), channels stay as they are. The contract suite runs through it with the
 * partition check on, and on a Redis Cluster, where its multi-key updates must stay in one
 * partition; the keys' own text (odd bytes, placeholders) follows the prefix unchanged.
 */
export function oneAggregate(store: Store, prefix = 'contract:case:1:'): Store {
  const k = <T>(key: T): T => (typeof key === 'string' ? ((prefix + key) as T) : key);
  const write = (w: Write): Write => (w && typeof w === 'object' && w.op !== 'publish' ? { ...w, key: k(w.key) } : w);
  return {
    get kind() {
      return store.kind;
    },
    get: (key) => store.get(k(key)),
    getMany: (keys) => store.getMany(Array.isArray(keys) ? keys.map(k) : keys),
    set: (key, value, opts) => store.set(k(key), value, opts),
    del: (key) => store.del(k(key)),
    update: (<R>(keys: string[], fn: UpdateFn<R>, opts?: DrawOptions) => {
      const wrapped: UpdateFn<R> = (cur: (Json | undefined)[]) => {
        const plan = fn(cur);
        if (!plan || typeof plan !== 'object' || !Array.isArray(plan.writes)) return plan;
        return { ...plan, writes: plan.writes.map(write) };
      };
      const mapped = Array.isArray(keys) ? keys.map(k) : keys;
      if (opts === undefined) return store.update(mapped, wrapped);
      const draw = opts && Array.isArray(opts.draw) ? { draw: opts.draw.map(k) } : opts;
      return store.update(mapped, wrapped, draw);
    }) as Store['update'],
    incr: (key, by) => store.incr(k(key), by),
    push: (key, value, cap) => store.push(k(key), value, cap),
    range: (key, start, stop) => store.range(k(key), start, stop),
    length: (key) => store.length(k(key)),
    index: (key, member, score) => store.index(k(key), member, score),
    unindex: (key, member) => store.unindex(k(key), member),
    indexRange: (key, opts) => store.indexRange(k(key), opts),
    indexScore: (key, member) => store.indexScore(k(key), member),
    indexCount: (key) => store.indexCount(k(key)),
    publish: (channel, message) => store.publish(channel, message),
    subscribe: (channel, handler) => store.subscribe(channel, handler),
    ping: () => store.ping(),
    close: () => store.close(),
  };
}
