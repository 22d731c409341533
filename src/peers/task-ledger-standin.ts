import type { IncomingMessage } from 'node:http';
import { ledgerEntryHash, type VerifyResult } from '../reward/index.js';
import { errorJson, readJsonBody, routeMiss, startStandin, type Standin, type StandinOptions } from './value-standin.js';

/**
 * Stand-in for the task ledger (document 3, "Peer services used"): a real HTTP/1.1 server on
 * loopback (the hub reaches it over a plain TCP socket) with exactly the document's routes:
 *   GET /          service information
 *   GET /health    liveness and counts (does not count as a transaction)
 *   GET /tasks     the ecosystem task types
 *   GET /verify    checks an entry given as query parameters (numeric values read as numbers)
 *   POST /verify   checks an entry given as a JSON body
 *   GET /ledger    the transaction count and the recent entries
 *   POST /ledger   appends an entry; idempotent by the Idempotency-Key header (else the body id)
 * "A global transaction count rises by 1 per call" is kept literally: every call to /ledger,
 * GET or POST, new, repeated or refused, adds 1 to `transactions`; `entries` counts the distinct
 * entries appended. Unknown paths are 404, malformed JSON 400, both {"error":{"code","message"}}.
 *
 * An entry is a JSON object with `id` (non-empty string, at most 200 characters), `task`
 * (non-empty string; whether it is one of GET /tasks is reported as known_task, not enforced) and
 * optionally `hash` (64 hex digits, must equal ledgerEntryHash: SHA-256 of the canonical JSON of
 * the entry without `hash`). Other fields are free.
 */

export const TASK_TYPES = [
  { type: 'work_unit', name: 'Work unit', description: 'One unit of work of a reward plan member (53 min 20 s).' },
  { type: 'service', name: 'Service reinvestment', description: 'Ecosystem ledger entry in the service category.' },
  { type: 'module', name: 'Module reinvestment', description: 'Ecosystem ledger entry in the module category.' },
  { type: 'content', name: 'Content reinvestment', description: 'Ecosystem ledger entry in the content category.' },
  { type: 'infrastructure', name: 'Infrastructure reinvestment', description: 'Ecosystem ledger entry in the infrastructure category.' },
  { type: 'exchange', name: 'RU to CU exchange', description: 'A member exchanged reward units for coin units.' },
] as const;

const KNOWN_TASKS = new Set<string>(TASK_TYPES.map((t) => t.type));

export interface LedgerRecord {
  seq: number;
  key: string;
  entry: Record<string, unknown>;
  hash: string;
  received_at: number;
}

export interface TaskLedgerStandinState {
  /** Calls to /ledger (GET and POST, every one). */
  transactions: number;
  /** Distinct entries appended, oldest first. */
  entries: LedgerRecord[];
  byKey: Map<string, LedgerRecord>;
  byId: Map<string, LedgerRecord>;
  /** POST /ledger calls that repeated a known key. */
  duplicates: number;
  /** Calls to /verify. */
  verifications: number;
}

export function newTaskLedgerStandinState(): TaskLedgerStandinState {
  return { transactions: 0, entries: [], byKey: new Map(), byId: new Map(), duplicates: 0, verifications: 0 };
}

const ROUTES = ['GET /', 'GET /health', 'GET /tasks', 'GET /verify', 'POST /verify', 'GET /ledger', 'POST /ledger'];
const RECENT = 20;

function checkEntry(value: unknown, state: TaskLedgerStandinState): VerifyResult {
  const problems: string[] = [];
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { valid: false, problems: ['the entry must be a JSON object'], hash: null, known_task: false, recorded: false };
  }
  const e = value as Record<string, unknown>;
  if (typeof e.id !== 'string' || e.id.length === 0 || e.id.length > 200) problems.push('id must be a string of 1 to 200 characters');
  if (typeof e.task !== 'string' || e.task.length === 0) problems.push('task must be a non-empty string');
  let hash: string | null = null;
  try {
    hash = ledgerEntryHash(e);
  } catch {
    problems.push('the entry holds values that cannot be hashed (non-finite numbers)');
  }
  if (e.hash !== undefined) {
    if (typeof e.hash !== 'string' || !/^[0-9a-f]{64}$/.test(e.hash)) problems.push('hash must be 64 lower-case hex digits');
    else if (hash !== null && e.hash !== hash) problems.push('hash does not match the entry');
  }
  const recorded = typeof e.id === 'string' ? state.byId.get(e.id) : undefined;
  const result: VerifyResult = {
    valid: problems.length === 0,
    problems,
    hash,
    known_task: typeof e.task === 'string' && KNOWN_TASKS.has(e.task),
    recorded: recorded !== undefined,
  };
  if (recorded) result.matches_recorded = hash !== null && recorded.hash === hash;
  return result;
}

function entryFromQuery(params: URLSearchParams): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of params) {
    out[k] = k !== 'id' && k !== 'hash' && /^-?(0|[1-9]\d{0,14})(\.\d+)?$/.test(v) ? Number(v) : v;
  }
  return out;
}

function idempotencyKey(req: IncomingMessage, entry: Record<string, unknown>): string {
  const h = req.headers['idempotency-key'];
  return typeof h === 'string' && h !== '' ? h : (entry.id as string);
}

export function startTaskLedgerStandin(
  opts: StandinOptions & { state?: TaskLedgerStandinState } = {},
): Promise<Standin<TaskLedgerStandinState>> {
  const state = opts.state ?? newTaskLedgerStandinState();
  const started = Date.now();
  const counts = () => ({ transactions: state.transactions, entries: state.entries.length });
  return startStandin(opts, state, async (req, url, reply) => {
    switch (`${req.method} ${url.pathname}`) {
      case 'GET /':
        return reply(200, {
          service: 'task-ledger-standin',
          description: 'Stand-in for the task ledger: records ecosystem task entries and verifies them.',
          routes: ROUTES,
          task_types: TASK_TYPES.length,
          ...counts(),
        });
      case 'GET /health':
        return reply(200, { ok: true, status: 'ok', service: 'task-ledger-standin', uptime_ms: Date.now() - started, ...counts() });
      case 'GET /tasks':
        return reply(200, { tasks: TASK_TYPES, count: TASK_TYPES.length });
      case 'GET /verify':
        state.verifications += 1;
        return reply(200, checkEntry(entryFromQuery(url.searchParams), state));
      case 'POST /verify': {
        state.verifications += 1;
        const body = await readJsonBody(req);
        return reply(200, checkEntry(body, state));
      }
      case 'GET /ledger':
        state.transactions += 1;
        return reply(200, { ...counts(), recent: state.entries.slice(-RECENT) });
      case 'POST /ledger': {
        state.transactions += 1;
        const body = await readJsonBody(req);
        const check = checkEntry(body, state);
        if (!check.valid) return reply(400, errorJson('invalid_entry', 'the entry is not valid', { problems: check.problems }));
        const entry = body as Record<string, unknown>;
        const key = idempotencyKey(req, entry);
        const previous = state.byKey.get(key);
        if (previous) {
          state.duplicates += 1;
          return reply(200, { ok: true, duplicate: true, id: previous.entry.id, seq: previous.seq, hash: previous.hash, ...counts() });
        }
        const rec: LedgerRecord = { seq: state.entries.length + 1, key, entry, hash: check.hash!, received_at: Date.now() };
        state.entries.push(rec);
        state.byKey.set(key, rec);
        state.byId.set(entry.id as string, rec);
        return reply(201, { ok: true, duplicate: false, id: entry.id, seq: rec.seq, hash: rec.hash, ...counts() });
      }
      default:
        return reply(...routeMiss(req.method, url.pathname, ROUTES));
    }
  });
}
