import type { Clock } from '../clock.js';
import { codec, F } from '../store/codec.js';
import { mergedIndexRange, partitionKeyFor, partitionKeys, type Json, type Store } from '../store/port.js';

/**
 * The hub processes sharing the store, as Centrifugo's nodes: every process writes its own node
 * info (`console:node:<id>`) every CONSOLE_NODE_MS, kept for three periods, and indexes it in the
 * list of its partition (`console:nodes:{#p}`, docs/partitions.md) scored by when it expires; the
 * lists are merged on read (with the global `console:nodes` of before the partitions). A process
 * that stops removes its entry; one that dies stops renewing it and leaves the list once its info
 * expires.
 */

export interface NodeInfo {
  /** The hub's instance name: the first part of its connections' ids. */
  id: string;
  /** The process id the composition root made (pid and a random part). */
  process: string;
  version: string;
  node_version: string;
  started_at: string;
  uptime_s: number;
  connections: { sockets: number; streams: number };
  memory: { rss: number; heap_used: number };
  /** The topics this process's WebSockets hold, with their subscribers here. */
  topics: { topic: string; subscribers: number; presence: boolean }[];
  /** This process's trading job queue. */
  jobs: { admitted: number; running: number; waiting: number; queue_max: number; running_max: number };
  /** When this info was written (ms). */
  updated_at: number;
}

const NODES = 'console:nodes';
const nodeKey = (id: string) => `console:node:${id}`;
/** The list a node's entry is in: that of its info's partition. */
const nodesKey = (id: string) => partitionKeyFor(NODES, nodeKey(id));
/** Every list: the global one of before the partitions, then each partition's. */
const ALL_NODES = [NODES, ...partitionKeys(NODES)];

const nodeCodec = codec<NodeInfo>('console node', (r) => typeof r.id === 'string' && typeof r.process === 'string' && F.obj(r.connections) && Array.isArray(r.topics) && F.obj(r.jobs));

export class NodeRegistry {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    /** How often a process writes its info, ms (it is kept three periods). */
    private readonly everyMs: number,
  ) {}

  /** Writes this process's info, kept for three periods. */
  async publish(info: NodeInfo): Promise<void> {
    const ttlMs = this.everyMs * 3;
    const expires = this.clock.now() + ttlMs;
    await this.store.update([], () => ({
      writes: [
        { op: 'set', key: nodeKey(info.id), value: nodeCodec.encode(info) as Json, ttlMs },
        { op: 'index', key: nodesKey(info.id), member: info.id, score: expires },
      ],
      result: undefined,
    }));
  }

  /** Takes this process out of the list at once (a clean stop). */
  async remove(id: string): Promise<void> {
    await this.store.update([], () => ({
      writes: [
        { op: 'del', key: nodeKey(id) },
        { op: 'unindex', key: nodesKey(id), member: id },
      ],
      result: undefined,
    }));
    await this.store.unindex(NODES, id); // an entry written before the partitions
  }

  /** The processes whose info has not expired, by id; expired entries are dropped from the index. */
  async list(): Promise<NodeInfo[]> {
    const now = this.clock.now();
    await Promise.all(
      ALL_NODES.map(async (k) => {
        for (const e of await this.store.indexRange(k, { max: now })) await this.store.unindex(k, e.member);
      }),
    );
    const live = await mergedIndexRange(this.store, ALL_NODES, { min: now });
    const values = await this.store.getMany(live.map((e) => nodeKey(e.member)));
    const out: NodeInfo[] = [];
    for (const v of values) {
      try {
        const info = nodeCodec.decode(v);
        if (info) out.push(info);
      } catch {
        // an unreadable entry is left out of the list; it expires with its TTL
      }
    }
    return out.sort((a, b) => a.id.localeCompare(b.id));
  }
}
