import type { Config } from '../config.js';
import { notConfigured, type Deliver, type OutboxItem } from '../outbox.js';
import type { Json } from '../store/port.js';
import { PeerError, parseJsonText, peerRequest, statusError, tcpHttpRequest, type CallOptions } from '../peers/index.js';
import { canonicalJson, sha256Hex } from '../canonical.js';

export { PeerError, tcpHttpRequest, type CallOptions, type RawHttpResponse, type TcpHttpRequest } from '../peers/index.js';

/**
 * Client adapters for the reward plan's peers (document 3, "Peer services used"):
 * - the value service receives POST /api/inflow (HTTP or HTTPS, through the peers' one client,
 *   src/peers/http-client.ts);
 * - the task ledger is reached over TCP: a plain node:net socket speaking HTTP/1.1
 *   (src/peers/http-client.ts), so the hub needs nothing but the host and port
 *   (TASK_LEDGER_URL = tcp://host:port or http://host:port).
 *
 * Neither is called on a request path: the reward service enqueues outbox items (dest 'value' and
 * 'task-ledger') and the outbox calls the deliverers below in the background.
 */

export const VALUE_DEST = 'value';
export const TASK_LEDGER_DEST = 'task-ledger';

// ------------------------------------------------------------------------------------------------
// Value service (HTTP or HTTPS through peerRequest)

/**
 * What the hub sends to POST /api/inflow. `amount` (RU, finite, >= 0) is what the value service
 * adds to its inflow total; the other fields are for its records.
 */
export interface InflowPayload {
  amount: number;
  unit?: string;
  source?: string;
  [key: string]: Json | undefined;
}

export class ValueServiceClient {
  readonly baseUrl: string;
  readonly timeoutMs: number;

  constructor(opts: { url: string; timeoutMs: number }) {
    this.baseUrl = opts.url.replace(/\/+$/, '');
    this.timeoutMs = opts.timeoutMs;
  }

  /** POST /api/inflow with the Idempotency-Key header. Resolves with the parsed answer; throws PeerError. */
  inflow(payload: Json, opts: CallOptions = {}): Promise<unknown> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (opts.idempotencyKey !== undefined) headers['idempotency-key'] = opts.idempotencyKey;
    return this.call('POST', '/api/inflow', headers, JSON.stringify(payload), opts.signal);
  }

  /** GET /health. */
  health(opts: { signal?: AbortSignal } = {}): Promise<unknown> {
    return this.call('GET', '/health', { accept: 'application/json' }, undefined, opts.signal);
  }

  private async call(
    method: string,
    path: string,
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<unknown> {
    const res = await peerRequest({ peer: 'value service', url: `${this.baseUrl}${path}`, method, headers, body, timeoutMs: this.timeoutMs, signal });
    const parsed = parseJsonText(res.body.toString('utf8'));
    if (res.status < 200 || res.status > 299) throw statusError('value service', res.status, parsed);
    return parsed;
  }
}

// ------------------------------------------------------------------------------------------------
// Task ledger (TCP)

/**
 * One task ledger entry. `id` is unique (the idempotency key), `task` one of the ledger's task
 * types (GET /tasks). `hash`, when present, is ledgerEntryHash of the entry and is checked.
 */
export interface LedgerEntry {
  id: string;
  task: string;
  hash?: string;
  [key: string]: Json | undefined;
}

/** Hex SHA-256 of the canonical JSON (sorted keys) of the entry without its `hash` field. */
export function ledgerEntryHash(entry: Record<string, unknown>): string {
  const { hash: _hash, ...rest } = entry;
  return sha256Hex(canonicalJson(rest));
}

export interface VerifyResult {
  valid: boolean;
  problems: string[];
  hash: string | null;
  known_task: boolean;
  recorded: boolean;
  matches_recorded?: boolean;
}

/** host and port of tcp://host:port or http://host:port (default port 80). */
export function parsePeerAddress(url: string): { host: string; port: number } {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new TypeError(`not a peer address: ${url}`);
  }
  if (u.protocol !== 'tcp:' && u.protocol !== 'http:') throw new TypeError(`peer address must be tcp:// or http://, got ${u.protocol}`);
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!host) throw new TypeError(`peer address has no host: ${url}`);
  const port = u.port === '' ? 80 : Number(u.port);
  return { host, port };
}

export class TaskLedgerClient {
  readonly host: string;
  readonly port: number;
  readonly timeoutMs: number;

  constructor(opts: { url: string; timeoutMs: number }) {
    const { host, port } = parsePeerAddress(opts.url);
    this.host = host;
    this.port = port;
    this.timeoutMs = opts.timeoutMs;
  }

  /** POST /ledger: appends the entry (idempotent by id at the ledger). */
  record(entry: LedgerEntry, opts: CallOptions = {}): Promise<unknown> {
    return this.call('POST', '/ledger', entry, { idempotencyKey: opts.idempotencyKey ?? entry.id, signal: opts.signal });
  }

  /** POST /verify: checks an entry's shape and hash, and whether the ledger holds it. */
  async verify(entry: Record<string, Json | undefined>, opts: CallOptions = {}): Promise<VerifyResult> {
    return (await this.call('POST', '/verify', entry, opts)) as VerifyResult;
  }

  /** GET /health. */
  health(opts: CallOptions = {}): Promise<unknown> {
    return this.call('GET', '/health', undefined, opts);
  }

  /** GET /ledger: the transaction count and recent entries (the call itself counts as one). */
  ledger(opts: CallOptions = {}): Promise<unknown> {
    return this.call('GET', '/ledger', undefined, opts);
  }

  /** GET /tasks: the ecosystem task types. */
  tasks(opts: CallOptions = {}): Promise<unknown> {
    return this.call('GET', '/tasks', undefined, opts);
  }

  private async call(method: string, path: string, body: unknown, opts: CallOptions): Promise<unknown> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (opts.idempotencyKey !== undefined) headers['idempotency-key'] = opts.idempotencyKey;
    const res = await tcpHttpRequest({
      host: this.host,
      port: this.port,
      method,
      path,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      timeoutMs: this.timeoutMs,
      signal: opts.signal,
      peer: 'task ledger',
    });
    const parsed = parseJsonText(res.body.toString('utf8'));
    if (res.status < 200 || res.status > 299) throw statusError('task ledger', res.status, parsed);
    return parsed;
  }
}

// ------------------------------------------------------------------------------------------------
// Outbox deliverers

export interface RewardPeerClients {
  value?: ValueServiceClient;
  taskLedger?: TaskLedgerClient;
}

export type RewardPeerConfig = Pick<Config, 'VALUE_SERVICE_URL' | 'TASK_LEDGER_URL' | 'PEER_TIMEOUT_MS'>;

/** Clients for the configured peers (a peer without a URL gets none). */
export function rewardPeerClients(cfg: RewardPeerConfig): RewardPeerClients {
  return {
    value: cfg.VALUE_SERVICE_URL ? new ValueServiceClient({ url: cfg.VALUE_SERVICE_URL, timeoutMs: cfg.PEER_TIMEOUT_MS }) : undefined,
    taskLedger: cfg.TASK_LEDGER_URL ? new TaskLedgerClient({ url: cfg.TASK_LEDGER_URL, timeoutMs: cfg.PEER_TIMEOUT_MS }) : undefined,
  };
}

function unconfigured(peer: string, variable: string): Deliver {
  const reason = `peer not configured: ${peer} (set ${variable})`;
  return notConfigured(reason, () => new PeerError(peer, 'not_configured', reason));
}

function asLedgerEntry(item: OutboxItem): LedgerEntry {
  const p = item.payload;
  const base = p !== null && typeof p === 'object' && !Array.isArray(p) ? p : { data: p };
  const entry = { ...base, id: typeof base.id === 'string' && base.id ? base.id : item.id } as LedgerEntry;
  if (typeof entry.task !== 'string') entry.task = 'work_unit';
  return entry;
}

/**
 * The outbox deliverers of the reward plan: 'value' posts the item's payload to the value
 * service's /api/inflow, 'task-ledger' records it in the task ledger (POST /ledger); both send the
 * item id as the idempotency key. A peer without a URL gets a `notConfigured` deliverer: the outbox
 * keeps its items without attempting them (said once in the log and at /readyz), and they go out
 * once the peer is configured and the hub restarted.
 */
export function rewardPeerDeliverers(cfg: RewardPeerConfig, clients: RewardPeerClients = rewardPeerClients(cfg)): Record<string, Deliver> {
  const { value, taskLedger } = clients;
  return {
    [VALUE_DEST]: value
      ? async (item, signal) => {
          await value.inflow(item.payload, { idempotencyKey: item.id, signal });
        }
      : unconfigured('value service', 'VALUE_SERVICE_URL'),
    [TASK_LEDGER_DEST]: taskLedger
      ? async (item, signal) => {
          await taskLedger.record(asLedgerEntry(item), { idempotencyKey: item.id, signal });
        }
      : unconfigured('task ledger', 'TASK_LEDGER_URL'),
  };
}
