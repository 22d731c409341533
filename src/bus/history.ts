import { randomBytes } from 'node:crypto';
import { partitionKey, partitionOf } from '../store/partition.js';
import type { Json, Store, Write } from '../store/port.js';

/**
 * Topic history for the Bus, in the manner of Centrifuge's broker: every retained topic is a stream
 * of publications numbered 1, 2, 3... (the offset) inside an epoch. The epoch is a random name given
 * when the stream is first written; when the Store loses the stream (a Redis restart without
 * persistence, a new data directory) the next publication starts a new epoch, so a client holding a
 * position from the old one learns that its history is gone instead of silently missing messages.
 *
 * Store layout, one key per topic (`bus:h:{<topic>}`): the value is the stream's head `{e, o}` and
 * the capped list holds `{o, m}` entries, written together in one atomic update. The topic is the
 * key's aggregate (its hash tag: docs/partitions.md), so topics spread over the partitions, and the
 * update also publishes the message on the channel of the topic's partition (`topicChannel`): on a
 * Redis Cluster the append and the publish are one script on one shard.
 */

export interface StreamPosition {
  offset: number;
  epoch: string;
}

export interface Publication {
  offset: number;
  message: Json;
}

/** Why a recovery failed: another epoch, a position ahead of the stream, or a gap past the cap. */
export type LostReason = 'epoch' | 'ahead' | 'gap';

export interface HistoryResult {
  /** The stream's head when the history was read. */
  position: StreamPosition;
  /** Publications after `since` (all retained ones when `since` is absent is NOT implied: empty). */
  publications: Publication[];
  /** True when `publications` is exactly everything after `since`. */
  recovered: boolean;
  reason?: LostReason;
}

export interface Retention {
  /** Publications kept per topic. */
  size: number;
}

export const MAX_HISTORY = 10_000;

/** The history of a topic: the topic is its aggregate. */
export const historyKey = (topic: string) => `bus:h:{${topic}}`;
const key = historyKey;
/** The Store channel carrying the messages of a topic to the other processes: one per partition (`bus:{#p}`). */
export const topicChannel = (topic: string) => partitionKey('bus', topicPartition(topic));
/** The partition of a topic: that of its history key. */
export const topicPartition = (topic: string) => partitionOf(historyKey(topic));

/** What the update publishes with a message it appends (the envelope of the bus), if anything. */
export type Announce = (message: Json, pos: StreamPosition) => string;
const newEpoch = () => randomBytes(4).toString('hex');

interface Head {
  e: string;
  o: number;
}
const isHead = (v: Json | undefined): v is Head & { [k: string]: Json } =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && typeof v.e === 'string' && typeof v.o === 'number';
const isEntry = (v: Json): v is { o: number; m: Json } =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && typeof v.o === 'number' && 'm' in v;

/** Which topics keep a history: exact names, or prefixes ending in '*'. */
export class RetentionTable {
  private exact = new Map<string, Retention>();
  private prefixes: [string, Retention][] = [];

  set(pattern: string, r: Retention): void {
    if (!Number.isInteger(r.size) || r.size < 1 || r.size > MAX_HISTORY) {
      throw new RangeError(`history size must be an integer in 1..${MAX_HISTORY}`);
    }
    if (pattern.endsWith('*')) this.prefixes.push([pattern.slice(0, -1), r]);
    else this.exact.set(pattern, r);
  }

  get(topic: string): Retention | undefined {
    return this.exact.get(topic) ?? this.prefixes.find(([p]) => topic.startsWith(p))?.[1];
  }
}

export class TopicHistory {
  constructor(private readonly store: Store) {}

  /**
   * Appends one publication; returns its position. Atomic with the head, so offsets never repeat;
   * with `announce`, the same update publishes what it returns on the topic's channel.
   */
  append(topic: string, message: Json, size: number, announce?: Announce): Promise<StreamPosition> {
    const k = key(topic);
    return this.store.update([k], ([cur]) => {
      const head = isHead(cur) ? cur : { e: newEpoch(), o: 0 };
      const o = head.o + 1;
      const writes: Write[] = [
        { op: 'set', key: k, value: { e: head.e, o } },
        { op: 'push', key: k, value: { o, m: message }, cap: size },
      ];
      if (announce) writes.push({ op: 'publish', key: topicChannel(topic), message: announce(message, { offset: o, epoch: head.e }) });
      return {
        writes,
        result: { offset: o, epoch: head.e },
      };
    });
  }

  /** Appends publications in order in one atomic update (each announced with `announce`); returns the position of each. */
  appendMany(topic: string, messages: Json[], size: number, announce?: Announce): Promise<StreamPosition[]> {
    const k = key(topic);
    return this.store.update([k], ([cur]) => {
      const head = isHead(cur) ? cur : { e: newEpoch(), o: 0 };
      const writes: Write[] = [{ op: 'set', key: k, value: { e: head.e, o: head.o + messages.length } }];
      const out: StreamPosition[] = messages.map((m, i) => {
        writes.push({ op: 'push', key: k, value: { o: head.o + i + 1, m }, cap: size });
        return { offset: head.o + i + 1, epoch: head.e };
      });
      if (announce) messages.forEach((m, i) => writes.push({ op: 'publish', key: topicChannel(topic), message: announce(m, out[i]!) }));
      return { writes, result: out };
    });
  }

  /** The stream's head; a topic never written gets its epoch now (offset 0). */
  async position(topic: string): Promise<StreamPosition> {
    const k = key(topic);
    const cur = await this.store.get(k);
    if (isHead(cur)) return { offset: cur.o, epoch: cur.e };
    return this.store.update([k], ([again]) => {
      if (isHead(again)) return { writes: [], result: { offset: again.o, epoch: again.e } };
      const e = newEpoch();
      return { writes: [{ op: 'set', key: k, value: { e, o: 0 } }], result: { offset: 0, epoch: e } };
    });
  }

  /**
   * Publications after `since`. Without `since`: the head only. With it: recovered when the epoch is
   * the stream's, the offset is not ahead of the head, and the history still holds the next one.
   */
  async since(topic: string, since?: StreamPosition): Promise<HistoryResult> {
    const position = await this.position(topic);
    if (!since) return { position, publications: [], recovered: true };
    if (since.epoch !== position.epoch) return { position, publications: [], recovered: false, reason: 'epoch' };
    if (since.offset > position.offset) return { position, publications: [], recovered: false, reason: 'ahead' };
    if (since.offset === position.offset) return { position, publications: [], recovered: true };
    const entries = (await this.store.range(key(topic))).filter(isEntry);
    const publications = entries.filter((e) => e.o > since.offset).map((e) => ({ offset: e.o, message: e.m }));
    const first = publications[0];
    if (!first || first.offset !== since.offset + 1) {
      return { position, publications: [], recovered: false, reason: 'gap' };
    }
    const last = publications[publications.length - 1]!;
    return { position: last.offset > position.offset ? { ...position, offset: last.offset } : position, publications, recovered: true };
  }
}
