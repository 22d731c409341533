import { randomBytes } from 'node:crypto';
import { notFound } from '../errors.js';
import type { Json, Store } from '../store/port.js';

/**
 * Saved runs (docs/trading.md "Saved runs"): every analysis a signed-in trader runs is kept with its
 * request (parameters, the candles or the data set and its hash) and its answer, listed newest
 * first, opened, and deleted by that trader only. Bounded: the newest RUNS_PER_OWNER per trader (a
 * new run drops the oldest in the same write), an answer of at most RUN_RESULT_BYTES (a larger one
 * keeps its figures and drops its trade list first, then its per-combination rows).
 *
 * Store keys (one aggregate: the owner):
 * - `trading:run:<owner>`       {ids: [...]} oldest first (an owner's runs are one aggregate,
 *   `trading:run:<owner>`: docs/partitions.md)
 * - `trading:run:<owner>:<id>`  the run
 */

export const RUNS_PER_OWNER = 50;
export const RUN_RESULT_BYTES = 1_048_576;
export const RUN_ID = /^r_[A-Za-z0-9_-]{16}$/;
export const RUN_KINDS = ['backtest', 'compare', 'optimize', 'walkforward', 'montecarlo'] as const;
export type RunKind = (typeof RUN_KINDS)[number];

export interface RunSummary {
  id: string;
  kind: RunKind;
  created_at: string;
  strategy: string | null;
  candles: Record<string, Json>;
  /** The run's headline figures: net profit, Sharpe, trades, max drawdown (of the best combination for optimize). */
  figures: Record<string, number | null>;
  /** Parts of the answer left out to fit RUN_RESULT_BYTES. */
  trimmed: string[];
}

export interface SavedRun extends RunSummary {
  request: Record<string, Json>;
  result: Json;
}

const listKey = (owner: string) => `trading:run:${owner}`;
const runKey = (owner: string, id: string) => `trading:run:${owner}:${id}`;
const idsOf = (v: Json | undefined): string[] => ((v as { ids?: string[] } | undefined)?.ids ?? []);

type Obj = Record<string, any>;

/** The headline figures of an answer, whatever its kind. */
function figuresOf(kind: RunKind, r: Obj): Record<string, number | null> {
  const pick = (m: Obj | undefined) => ({
    net_profit: m?.net_profit ?? null,
    sharpe: m?.sharpe ?? null,
    trades: m?.trades ?? null,
    max_drawdown: m?.max_drawdown ?? null,
  });
  switch (kind) {
    case 'backtest':
      return pick(r.metrics);
    case 'compare':
      return pick(r.results?.[r.ranking?.[0]?.index]?.metrics);
    case 'optimize':
      return { ...pick(r.best?.metrics), objective_value: r.best?.objective_value ?? null };
    case 'walkforward':
      return { net_profit: r.summary?.oos_net_profit ?? null, sharpe: r.summary?.oos_sharpe ?? null, trades: r.summary?.oos_trades ?? null, robustness_score: r.summary?.robustness_score ?? null };
    case 'montecarlo':
      return { ...pick(r.backtest), probability_of_ruin: r.probability_of_ruin ?? null };
  }
}

/** The answer made to fit RUN_RESULT_BYTES: the trade list first, then the rows, then all but the figures. */
function fit(result: Obj): { result: Obj; trimmed: string[] } {
  const trimmed: string[] = [];
  let r = result;
  const size = () => Buffer.byteLength(JSON.stringify(r));
  for (const part of ['trades', 'results', 'windows', 'equity_curve']) {
    if (size() <= RUN_RESULT_BYTES) break;
    if (part in r) {
      const { [part]: _drop, ...rest } = r;
      r = rest;
      trimmed.push(part);
    }
  }
  if (size() > RUN_RESULT_BYTES) return { result: {}, trimmed: [...trimmed, 'result'] };
  return { result: r, trimmed };
}

export class RunService {
  constructor(private readonly store: Store, private readonly now: () => number = Date.now) {}

  /** Keeps a run for `owner`; the oldest beyond RUNS_PER_OWNER leaves in the same write. */
  async save(owner: string, kind: RunKind, request: Obj, result: Obj): Promise<RunSummary> {
    const id = `r_${randomBytes(12).toString('base64url')}`;
    const { job_id: _j, ...req } = request;
    const { result: kept, trimmed } = fit(result);
    const candles = { ...(result.candles ?? {}) } as Record<string, Json>;
    const summary: RunSummary = {
      id,
      kind,
      created_at: new Date(this.now()).toISOString(),
      strategy: result.strategy ?? (kind === 'compare' ? null : (req.strategy ?? null)),
      candles,
      figures: figuresOf(kind, result),
      trimmed,
    };
    const run: SavedRun = { ...summary, request: req as Record<string, Json>, result: kept as Json };
    await this.store.update([listKey(owner)], ([list]) => {
      const ids = [...idsOf(list), id];
      const drop = ids.splice(0, Math.max(0, ids.length - RUNS_PER_OWNER));
      return {
        writes: [...drop.map((d) => ({ op: 'del' as const, key: runKey(owner, d) })), { op: 'set', key: runKey(owner, id), value: run as unknown as Json }, { op: 'set', key: listKey(owner), value: { ids } }],
        result: undefined,
      };
    });
    return summary;
  }

  /** The owner's runs, newest first, without their answers. */
  async list(owner: string): Promise<RunSummary[]> {
    const ids = idsOf(await this.store.get(listKey(owner))).reverse();
    const runs = await this.store.getMany<Json>(ids.map((id) => runKey(owner, id)));
    return runs.filter((r): r is Json => r !== undefined).map((r) => {
      const { request: _q, result: _r, ...summary } = r as unknown as SavedRun;
      return summary;
    });
  }

  /** The owner's run; another trader's, or none: 404 `run_not_found`. */
  async get(owner: string, id: string): Promise<SavedRun> {
    const run = RUN_ID.test(id) ? await this.store.get(runKey(owner, id)) : undefined;
    if (!run) throw notFound('run_not_found', `no saved run ${id}`, { run: id });
    return run as unknown as SavedRun;
  }

  async delete(owner: string, id: string): Promise<{ id: string; deleted: true }> {
    if (!RUN_ID.test(id)) throw notFound('run_not_found', `no saved run ${id}`, { run: id });
    await this.store.update([listKey(owner), runKey(owner, id)], ([list, run]) => {
      if (!run) throw notFound('run_not_found', `no saved run ${id}`, { run: id });
      return { writes: [{ op: 'del', key: runKey(owner, id) }, { op: 'set', key: listKey(owner), value: { ids: idsOf(list).filter((x) => x !== id) } }], result: undefined };
    });
    return { id, deleted: true };
  }
}
