import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { AuthService } from '../auth/index.js';
import type { Clock } from '../clock.js';
import { AppError, notFound } from '../errors.js';
import type { ConnectionInfo, Hub } from '../hub/declare.js';
import { type Outbox, type OutboxDestination } from '../outbox.js';
import type { Store, StoreState } from '../store/port.js';
import { Control, type SurveyResult } from './control.js';
import { NodeRegistry, type NodeInfo } from './nodes.js';

/**
 * The operator console (docs/console.md), in the manner of Centrifugo's admin: the live state of
 * every hub process sharing the store (nodes, topics, queues, the store itself), the connections
 * of an identity on any process, and the operator's actions on them (disconnect, revoke, retry a
 * held delivery).
 */

export interface TopicState {
  topic: string;
  /** WebSocket subscribers on every live process. */
  subscribers: number;
  /** Clients and identities on the topic's presence (topics declared with presence), else null. */
  presence: { clients: number; users: number } | null;
}

export interface WaitingDelivery {
  id: string;
  dest: string;
  attempts: number;
  created_at: string;
  /** When the next attempt is due; null for a delivery kept for a peer that is not configured. */
  due_at: string | null;
  last_error: string | null;
  /** Kept for a peer this hub has not configured (not attempted until one has). */
  held: boolean;
}

export interface ConsoleState {
  /** The process that answered. */
  node: string;
  at: string;
  nodes: NodeInfo[];
  topics: TopicState[];
  queues: {
    trading: { node: string; admitted: number; running: number; waiting: number; queue_max: number; running_max: number }[];
    outbox: { destinations: OutboxDestination[]; waiting: WaitingDelivery[] };
  };
  store: StoreState;
}

export interface ConsoleDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  processId: string;
  nodeEveryMs: number;
  auth: Pick<AuthService, 'revokeTokens'>;
  outbox: Pick<Outbox, 'destinations' | 'held' | 'pending' | 'retryNow'>;
  tradingJobs: { stats(): { admitted: number; running: number; waiting: number; limits: { queue: number; running: number } } };
}

/** Waiting deliveries the console lists at most. */
const WAITING_MAX = 100;

/** The hub's version: the `version` of the nearest package.json above this file (src/ or dist/src/). */
function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.version) return pkg.version;
    } catch {
      // not here: one level up
    }
    dir = dirname(dir);
  }
  return 'unknown';
}

export class ConsoleService {
  private hub: Hub | undefined;
  private control: Control | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly registry: NodeRegistry;
  private readonly version = packageVersion();
  private readonly startedAt = new Date();

  constructor(private readonly deps: ConsoleDeps) {
    this.registry = new NodeRegistry(deps.store, deps.clock, deps.nodeEveryMs);
  }

  /** The hub whose connections and topics this process reports (set when the routes are registered). */
  attach(hub: Hub): void {
    this.hub = hub;
    this.control = new Control(
      this.deps.store,
      {
        node: hub.node,
        list: (filter) => hub.connectionList(filter),
        disconnect: (filter, reason) => {
          const infos = hub.connectionList(filter);
          const ended = new Set(hub.disconnect(filter, reason));
          return infos.filter((c) => ended.has(c.id));
        },
      },
      this.deps.logger,
    );
  }

  private get h(): Hub {
    if (!this.hub) throw new AppError('unavailable', 'not_ready', 'the console is not attached to the hub yet');
    return this.hub;
  }

  /** Answers the other processes' questions and publishes this node's info every period. */
  async start(): Promise<void> {
    await this.control?.start();
    const beat = () => this.publishNode().catch((err: unknown) => this.deps.logger.warn({ err }, 'console node info not written'));
    await beat();
    this.timer = setInterval(() => void beat(), this.deps.nodeEveryMs);
    this.timer.unref();
  }

  /** Leaves the node list at once and stops answering. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.hub) await this.registry.remove(this.hub.node).catch(() => undefined);
    await this.control?.stop();
  }

  /** This process's node info now. */
  nodeInfo(): NodeInfo {
    const hub = this.h;
    const mem = process.memoryUsage();
    const jobs = this.deps.tradingJobs.stats();
    const conns = hub.connections();
    return {
      id: hub.node,
      process: this.deps.processId,
      version: this.version,
      node_version: process.version,
      started_at: this.startedAt.toISOString(),
      uptime_s: Math.round(process.uptime()),
      connections: { sockets: conns.sockets, streams: conns.streams },
      memory: { rss: mem.rss, heap_used: mem.heapUsed },
      topics: hub.topicCounts(),
      jobs: { admitted: jobs.admitted, running: jobs.running, waiting: jobs.waiting, queue_max: jobs.limits.queue, running_max: jobs.limits.running },
      updated_at: this.deps.clock.now(),
    };
  }

  publishNode(): Promise<void> {
    return this.registry.publish(this.nodeInfo());
  }

  /** The live nodes: this process's info read now, the others' as last published. */
  async nodes(): Promise<NodeInfo[]> {
    const self = this.nodeInfo();
    const others = (await this.registry.list()).filter((n) => n.id !== self.id);
    return [self, ...others].sort((a, b) => a.id.localeCompare(b.id));
  }

  async state(): Promise<ConsoleState> {
    const nodes = await this.nodes();
    const [topics, outbox, store] = await Promise.all([this.topics(nodes), this.outboxState(), this.storeState()]);
    return {
      node: this.h.node,
      at: new Date(this.deps.clock.now()).toISOString(),
      nodes,
      topics,
      queues: { trading: nodes.map((n) => ({ node: n.id, ...n.jobs })), outbox },
      store,
    };
  }

  /** The connections of an identity on every live process. */
  async connectionsOf(user: string): Promise<{ user: string; connections: ConnectionInfo[]; missing: string[] }> {
    const result = await this.ask({ op: 'connections', filter: { user } });
    return { user, connections: flatten(result), missing: result.missing };
  }

  /** Ends one connection, on whichever process holds it; 404 `unknown_connection` when none does. */
  async disconnectConnection(id: string): Promise<{ disconnected: ConnectionInfo[] }> {
    const node = id.slice(0, id.indexOf(':'));
    const live = (await this.nodes()).map((n) => n.id);
    if (!live.includes(node)) throw notFound('unknown_connection', `no connection ${id}: no live hub process ${node}`, { connection: id });
    const result = await this.control!.survey({ op: 'disconnect', filter: { id }, reason: 'disconnected' }, [node]);
    const ended = flatten(result);
    if (ended.length === 0) {
      if (result.missing.includes(node)) throw new AppError('unavailable', 'node_unreachable', `hub process ${node} did not answer; try again`, { node });
      throw notFound('unknown_connection', `no connection ${id}`, { connection: id });
    }
    return { disconnected: ended };
  }

  /**
   * Ends every connection of an identity on every live process; with `revoke`, first revokes its
   * tokens (so the connections close with 4401 invalid_token and cannot come back with them).
   * 404 `no_connections` when nothing was ended and nothing revoked.
   */
  async disconnectIdentity(user: string, revoke: boolean): Promise<{ user: string; disconnected: ConnectionInfo[]; revoked_tokens: number | null; missing: string[] }> {
    const revoked = revoke ? await this.deps.auth.revokeTokens(user) : null;
    const result = await this.ask({ op: 'disconnect', filter: { user }, reason: revoke ? 'revoked' : 'disconnected' });
    const disconnected = flatten(result);
    if (disconnected.length === 0 && !revoke) throw notFound('no_connections', `${user} has no open connection on any live hub process`, { user });
    return { user, disconnected, revoked_tokens: revoked, missing: result.missing };
  }

  /** Makes a waiting delivery due now (404 unknown_delivery, 409 delivery_in_flight). */
  async retryDelivery(id: string): Promise<WaitingDelivery> {
    const p = await this.deps.outbox.retryNow(id);
    return waiting(p, false);
  }

  private async ask(cmd: Parameters<Control['survey']>[0]): Promise<SurveyResult> {
    const live = (await this.nodes()).map((n) => n.id);
    return this.control!.survey(cmd, live);
  }

  private async topics(nodes: NodeInfo[]): Promise<TopicState[]> {
    const by = new Map<string, { subscribers: number; presence: boolean }>();
    for (const n of nodes) {
      for (const t of n.topics) {
        const cur = by.get(t.topic) ?? { subscribers: 0, presence: t.presence };
        cur.subscribers += t.subscribers;
        by.set(t.topic, cur);
      }
    }
    const out = await Promise.all(
      [...by].map(async ([topic, t]) => ({
        topic,
        subscribers: t.subscribers,
        presence: t.presence ? await this.h.presence.stats(topic) : null,
      })),
    );
    return out.sort((a, b) => b.subscribers - a.subscribers || a.topic.localeCompare(b.topic));
  }

  private async outboxState(): Promise<ConsoleState['queues']['outbox']> {
    const destinations = await this.deps.outbox.destinations();
    const held = new Set<string>();
    for (const d of destinations) {
      if (d.held === 0) continue;
      for (const id of await this.deps.outbox.held(d.dest, WAITING_MAX)) held.add(id);
    }
    const pending = await this.deps.outbox.pending(undefined, 1000);
    const list = pending.filter((p) => !p.inFlight && (p.attempts > 0 || held.has(p.id))).slice(0, WAITING_MAX);
    return { destinations, waiting: list.map((p) => waiting(p, held.has(p.id))) };
  }

  private async storeState(): Promise<StoreState> {
    const s = this.deps.store;
    if (s.describe) return s.describe();
    return { kind: s.kind, role: 'unknown', replicas: 0, min_replicas: 0, durability: 'unknown', details: {} };
  }
}

function flatten(result: SurveyResult): ConnectionInfo[] {
  return result.answers.flatMap((a) => a.connections).sort((a, b) => a.id.localeCompare(b.id));
}

function waiting(p: { id: string; dest: string; attempts: number; createdAt: number; due: number; lastError?: string }, held: boolean): WaitingDelivery {
  return {
    id: p.id,
    dest: p.dest,
    attempts: p.attempts,
    created_at: new Date(p.createdAt).toISOString(),
    due_at: held ? null : new Date(p.due).toISOString(),
    last_error: p.lastError ?? null,
    held,
  };
}
