import { z } from 'zod';
import type { Bus } from '../bus.js';
import type { Hub, RequestContext, SseStream } from '../hub/index.js';
import { settingsSchema } from '../trading/engine.js';
import {
  MOVES,
  PROGRAM_EVENTS_TOPIC,
  PROGRAM_STATES,
  PROGRAM_TICK_TOPIC,
  TICK_MS,
  type Caller,
  type ProgramEvent,
  type ProgramService,
  type TickEvent,
} from '../trading/programs.js';
import { STRATEGIES, STRATEGY_DEFS } from '../trading/strategies.js';
import { SYMBOLS } from '../trading/symbols.js';
import { label } from '../text.js';
import { checkParams } from '../trading/rules.js';

/**
 * The live-program routes of the trading program service (docs/trading.md "Live programs"):
 * create, list, start, pause, stop, delete, status/:id, logs/:id and the SSE stream. The same
 * events reach WebSocket topics `program:events` (signal, trade, status; with ids) and
 * `program:tick` (the 3-second tick batches).
 */

const idField = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 _ -');

export const createBody = z
  .strictObject({
    name: label(80).optional(),
    strategy: z.enum(STRATEGIES),
    symbol: z.enum(SYMBOLS),
    params: z.record(z.string(), z.unknown()).optional(),
    settings: settingsSchema,
  })
  .transform((b, ctx) => {
    const params = checkParams(b.strategy, b.params, ['params'], ctx);
    return { name: b.name, strategy: b.strategy, symbol: b.symbol, params: params ?? {}, settings: b.settings };
  });

const idBody = z.strictObject({ id: idField });

/** Programs belong to the trader who created them; an operator manages them all. */
const TRADER = { roles: ['trader'] } as const;
const caller = (ctx: RequestContext): Caller => ({ id: ctx.identity!.id, operator: ctx.identity!.roles.includes('operator') });
const idParams = z.object({ id: idField });

/** Strategy parameter schemas for forms (JSON Schema of each strategy's zod schema). */
function strategyForms() {
  return STRATEGIES.map((id) => {
    const def = STRATEGY_DEFS[id];
    let schema: unknown;
    try {
      schema = z.toJSONSchema(def.schema, { io: 'input', unrepresentable: 'any' });
    } catch {
      schema = {};
    }
    return { id, name: def.name, description: def.description, params: schema, defaults: def.schema.parse({}) };
  });
}

export interface ProgramRoutesOptions {
  service: ProgramService;
  bus: Pick<Bus, 'onMessage'>;
}

interface Subscriber {
  stream: SseStream;
  program: string | undefined;
  /** Highest event id written; replayed and live events at or below it are skipped. */
  lastId: number;
  /** Live events queued while the history is being replayed. */
  queue: ProgramEvent[] | null;
}

export function registerProgramRoutes(hub: Hub, opts: ProgramRoutesOptions): () => void {
  const { service } = opts;
  hub.topic({ name: PROGRAM_EVENTS_TOPIC, policy: 'close' });
  hub.topic({ name: PROGRAM_TICK_TOPIC, policy: 'drop' });
  const forms = strategyForms();

  hub.route({
    method: 'POST',
    path: '/api/program/create',
    auth: TRADER,
    body: { schema: createBody },
    handler: async (ctx) => ({ program: await service.create(ctx.body, caller(ctx)) }),
  });
  hub.route({
    method: 'GET',
    path: '/api/program/list',
    auth: TRADER,
    cacheControl: 'no-store',
    handler: async (ctx) => {
      const programs = await service.list(caller(ctx));
      const count = (s: string) => programs.filter((p) => p.state === s).length;
      const sum = (f: (p: (typeof programs)[number]) => number) => Math.round(programs.reduce((a, p) => a + f(p), 0) * 100) / 100;
      return {
        programs,
        statistics: {
          total: programs.length,
          ...Object.fromEntries(PROGRAM_STATES.map((s) => [s, count(s)])),
          pnl: sum((p) => p.stats.pnl),
          realized_pnl: sum((p) => p.stats.realized_pnl),
          trades: sum((p) => p.stats.trades),
          wins: sum((p) => p.stats.wins),
        },
        strategies: forms,
        symbols: SYMBOLS,
        moves: MOVES,
      };
    },
  });
  for (const move of ['start', 'pause', 'stop'] as const) {
    hub.route({
      method: 'POST',
      path: `/api/program/${move}`,
      auth: TRADER,
      body: { schema: idBody },
      handler: async (ctx) => ({ program: await service.move(ctx.body.id, move, caller(ctx)) }),
    });
  }
  hub.route({ method: 'POST', path: '/api/program/delete', auth: TRADER, body: { schema: idBody }, handler: (ctx) => service.remove(ctx.body.id, caller(ctx)) });
  hub.route({
    method: 'GET',
    path: '/api/program/status/:id',
    auth: TRADER,
    params: idParams,
    cacheControl: 'no-store',
    handler: async (ctx) => ({ program: await service.get(ctx.params.id, caller(ctx)) }),
  });
  hub.route({
    method: 'GET',
    path: '/api/program/logs/:id',
    auth: TRADER,
    params: idParams,
    query: z.object({ limit: z.coerce.number().int().min(1).max(500).default(200) }),
    cacheControl: 'no-store',
    handler: (ctx) => service.logs(ctx.params.id, ctx.query.limit, caller(ctx)),
  });

  // ---- the stream ----------------------------------------------------------------------------
  const subscribers = new Set<Subscriber>();
  const write = (s: Subscriber, ev: ProgramEvent, data: string) => {
    if (ev.id <= s.lastId) return;
    if (s.program !== undefined && ev.program !== s.program) return;
    s.lastId = ev.id;
    s.stream.send({ event: ev.type, id: ev.id, data });
  };
  const off = opts.bus.onMessage(({ topic, message }) => {
    if (subscribers.size === 0) return;
    if (topic === PROGRAM_EVENTS_TOPIC) {
      const ev = message as unknown as ProgramEvent;
      const data = JSON.stringify(ev);
      for (const s of subscribers) {
        if (s.queue) s.queue.push(ev);
        else write(s, ev, data);
      }
    } else if (topic === PROGRAM_TICK_TOPIC) {
      const tick = message as unknown as TickEvent;
      let all: string | undefined;
      let byProgram: Map<string, TickEvent['programs'][number]> | undefined;
      for (const s of subscribers) {
        if (s.queue) continue;
        if (s.program === undefined) {
          all ??= JSON.stringify(tick);
          s.stream.send({ event: 'tick', data: all }, { droppable: true });
        } else {
          byProgram ??= new Map(tick.programs.map((p) => [p.program, p]));
          const mine = byProgram.get(s.program);
          if (mine) s.stream.send({ event: 'tick', data: { type: 'tick', t: tick.t, programs: [mine] } }, { droppable: true });
        }
      }
    }
  });

  hub.sse({
    path: '/api/program/stream',
    query: z.object({ program: idField.optional(), last_event_id: z.coerce.number().int().min(0).optional() }),
    open: async (ctx, stream) => {
      const header = Number(stream.lastEventId);
      const after = Number.isInteger(header) && header >= 0 && stream.lastEventId !== undefined && stream.lastEventId !== '' ? header : ctx.query.last_event_id;
      const sub: Subscriber = { stream, program: ctx.query.program, lastId: after ?? 0, queue: after !== undefined ? [] : null };
      subscribers.add(sub);
      stream.onClose(() => subscribers.delete(sub));
      stream.comment(`program stream; tick every ${TICK_MS} ms${sub.program ? `; program ${sub.program}` : ''}`);
      if (after === undefined) return;
      try {
        const missed = await service.history(after);
        for (const ev of missed) write(sub, ev, JSON.stringify(ev));
      } finally {
        const queued = sub.queue ?? [];
        sub.queue = null;
        for (const ev of queued) write(sub, ev, JSON.stringify(ev));
      }
    },
  });

  return off;
}
