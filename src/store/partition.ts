/**
 * The partitioned keyspace (docs/partitions.md): one rule, the same on every adapter, that maps a
 * Store key to the aggregate it belongs to and the aggregate to one of PARTITIONS partitions.
 *
 * - A key of a service declared one aggregate (SERVICE_AGGREGATES: `pay:` is `ledger`) belongs to it,
 *   whatever its text. Otherwise:
 * - The aggregate of a key is the text inside its first `{...}` when it has one (non-empty), so a
 *   key can join an aggregate by naming it (`pay:{ledger}:entry:7`); otherwise its first three
 *   `:`-separated fields, `<service>:<kind>:<aggregate id>` (`auth:account:admin:tokens` belongs to
 *   `auth:account:admin`); a key of fewer fields is an aggregate of its own (a global key).
 * - A key whose tag is `{#n}` (0 <= n < PARTITIONS) is partition-local: it lives in partition n and
 *   belongs to no aggregate. Per-partition indexes, lists and counters (merged on read) are such
 *   keys; an update may write them beside its aggregate when they are in the aggregate's partition.
 * - The partition of an aggregate is its Redis Cluster slot (CRC16 of the aggregate, mod 16384)
 *   divided by SLOTS_PER_PARTITION: partition n covers slots [n*256, n*256+255]. On a cluster every
 *   Redis key of partition n carries the hash tag `{partitionTag(n)}`, a text whose own slot lies in
 *   that range, so the default slot allocation of `redis-cli --cluster create` (even ranges) gives
 *   each master an even share of the partitions.
 *
 * An atomic update stays inside one partition on a cluster (Redis refuses CROSSSLOT otherwise); with
 * the partition check on (STORE_PARTITION_CHECK=1, both adapters) it must stay inside one aggregate
 * (plus partition-local keys of its partition), so tests on LMDB catch a violation before a cluster
 * does.
 */

/**
 * Fixed for the life of a deployment (changing it moves every key). 64: enough that 3 to 16
 * masters each hold several partitions (3 masters: 21/21/22, even under the default slot ranges),
 * few enough that a listing merged from per-partition indexes reads 64 small ranges (pipelined, one
 * round trip per master) and a hub following every partition holds 64 sharded subscriptions.
 */
export const PARTITIONS = 64;
export const CLUSTER_SLOTS = 16384;
export const SLOTS_PER_PARTITION = CLUSTER_SLOTS / PARTITIONS;

/** An update that spans partitions (or, with the check on, aggregates): a programming error. */
export class PartitionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PartitionError';
  }
}

const CRC16_TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let j = 0; j < 8; j++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

/** CRC16-CCITT (XMODEM), as Redis Cluster hashes keys. */
export function crc16(text: string): number {
  let crc = 0;
  for (const b of Buffer.from(text, 'utf8')) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ b) & 0xff]!;
  return crc;
}

/** The Redis Cluster slot of a full Redis key (its hash tag when it has one, as Redis reads it). */
export function keySlot(redisKey: string): number {
  const open = redisKey.indexOf('{');
  if (open >= 0) {
    const close = redisKey.indexOf('}', open + 1);
    if (close > open + 1) return crc16(redisKey.slice(open + 1, close)) % CLUSTER_SLOTS;
  }
  return crc16(redisKey) % CLUSTER_SLOTS;
}

/** The tag of `key` (the text in its first non-empty `{...}`), or undefined. */
function tagOf(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

const LOCAL = /^#(\d{1,2})$/;

/** The partition a `{#n}` tag names, or undefined. */
function localPartition(tag: string | undefined): number | undefined {
  if (tag === undefined) return undefined;
  const m = LOCAL.exec(tag);
  if (!m) return undefined;
  const n = Number(m[1]);
  return n < PARTITIONS && String(n) === m[1] ? n : undefined;
}

/**
 * Services whose every Store key is one aggregate, by key prefix: the prefix's keys keep their names
 * (data written before reads as it is) and all live in the partition of the aggregate. `pay:` is
 * the ledger: a purchase (challenge, transfer, receipt, outbox), a payout run and a reconciliation
 * each stay one update of one partition, served by the ledger's single batching writer; on a
 * cluster that partition's slot can be given a master of its own (docs/deploy.md).
 */
export const SERVICE_AGGREGATES: ReadonlyArray<{ prefix: string; aggregate: string }> = [{ prefix: 'pay:', aggregate: 'ledger' }];

/** The aggregate a Store key belongs to; undefined for a partition-local key (`{#n}`). */
export function aggregateOf(key: string): string | undefined {
  for (const s of SERVICE_AGGREGATES) if (key.startsWith(s.prefix)) return s.aggregate;
  const tag = tagOf(key);
  if (tag !== undefined) return localPartition(tag) === undefined ? tag : undefined;
  let at = -1;
  for (let i = 0; i < 3; i++) {
    at = key.indexOf(':', at + 1);
    if (at < 0) return key;
  }
  return key.slice(0, at);
}

/** The partition of an aggregate name. */
export function partitionOfAggregate(aggregate: string): number {
  return Math.floor((crc16(aggregate) % CLUSTER_SLOTS) / SLOTS_PER_PARTITION);
}

/** The partition a Store key lives in. */
export function partitionOf(key: string): number {
  const aggregate = aggregateOf(key);
  return aggregate === undefined ? localPartition(tagOf(key))! : partitionOfAggregate(aggregate);
}

/** The Store key `name` in partition `n` (a partition-local key: per-partition index, list, counter). */
export function partitionKey(name: string, n: number): string {
  if (!Number.isInteger(n) || n < 0 || n >= PARTITIONS) throw new RangeError(`partition must be an integer in 0..${PARTITIONS - 1}`);
  return `${name}:{#${n}}`;
}

/** `name` in every partition, partition 0 first. */
export function partitionKeys(name: string): string[] {
  return Array.from({ length: PARTITIONS }, (_, n) => partitionKey(name, n));
}

/** The Store key `name` in the partition of the aggregate of `key`. */
export function partitionKeyFor(name: string, key: string): string {
  return partitionKey(name, partitionOf(key));
}

const TAGS = (() => {
  const out: string[] = [];
  for (let n = 0; n < PARTITIONS; n++) {
    for (let j = 0; ; j++) {
      const tag = `${n}.${j}`;
      if (Math.floor((crc16(tag) % CLUSTER_SLOTS) / SLOTS_PER_PARTITION) === n) {
        out.push(tag);
        break;
      }
    }
  }
  return out;
})();

/** The Redis hash tag of partition n (without braces): its slot lies in the partition's range. */
export function partitionTag(n: number): string {
  const t = TAGS[n];
  if (t === undefined) throw new RangeError(`partition must be an integer in 0..${PARTITIONS - 1}`);
  return t;
}

const PLACEHOLDER = '\u0000#';

/** How strictly an adapter holds updates to the rule. */
export type PartitionCheck = 'aggregate' | 'partition' | 'off';

/**
 * The partition of one update's keys (read keys, draw counters, written keys; a written key may be
 * the text of a key holding placeholders of drawn numbers, which must not fall in its aggregate
 * name). `aggregate`: one aggregate, plus partition-local keys of its partition. `partition`: one
 * partition (what a cluster needs). Throws PartitionError; returns the partition (undefined with no key).
 */
export function checkUpdateKeys(keys: Iterable<string>, mode: PartitionCheck): number | undefined {
  if (mode === 'off') return undefined;
  let partition: number | undefined;
  let aggregate: string | undefined;
  let firstKey = '';
  let aggregateKey = '';
  for (const key of keys) {
    const agg = aggregateOf(key);
    if (agg !== undefined && agg.includes(PLACEHOLDER)) {
      throw new PartitionError(
        `key ${JSON.stringify(key)}: a drawn number falls in its aggregate name; the aggregate must be known before the draw (put the number after <service>:<kind>:<id>, or give the key a {tag})`,
      );
    }
    if (mode === 'aggregate' && agg !== undefined) {
      if (aggregate === undefined) {
        aggregate = agg;
        aggregateKey = key;
      } else if (agg !== aggregate) {
        throw new PartitionError(
          `update spans aggregates: ${JSON.stringify(aggregateKey)} (aggregate ${JSON.stringify(aggregate)}) and ${JSON.stringify(key)} (aggregate ${JSON.stringify(agg)}); ` +
            'an atomic update stays inside one aggregate (docs/partitions.md)',
        );
      }
    }
    const p = partitionOf(key);
    if (partition === undefined) {
      partition = p;
      firstKey = key;
    } else if (p !== partition) {
      throw new PartitionError(
        `update spans partitions: ${JSON.stringify(firstKey)} (partition ${partition}) and ${JSON.stringify(key)} (partition ${p}); ` +
          'an atomic update stays inside one partition (docs/partitions.md)',
      );
    }
  }
  return partition;
}

/** STORE_PARTITION_CHECK from the environment: '1' turns the aggregate check on. */
export function partitionCheckFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.STORE_PARTITION_CHECK === '1';
}
