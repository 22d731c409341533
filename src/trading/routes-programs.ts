import { z } from 'zod';
import { followAlways, type Bus } from '../bus.js';
import { route, type Hub, type RequestContext, type SseStream, type Principal, type TopicVerdict } from '../hub/declare.js';
import { deletedAnswer } from './answers.js';
import { settingsSchema } from './engine.js';
import {
  HISTORY,
  mayManage,
  MOVES,
  PROGRAM_EVENTS_TOPIC,
  PROGRAM_STATES,
  PROGRAM_TICK_TOPIC,
  programEvents,
  programTopic,
  tickEvents,
  TICK_MS,
  type Caller,
  type ProgramEvent,
  type ProgramService,
  type TickEntry,
  type TickEvent,
} from './programs.js';
import { STRATEGIES, STRATEGY_DEFS } from './strategies.js';
import { SYMBOLS } from './symbols.js';
import { forbidden, notFound } from '../errors.js';
import { label } from '../text.js';
import { checkParams } from './rules.js';

/**
 * The live-program routes of the trading program service (docs/trading.md "Live programs"):
 * create, list, start, pause, stop, delete, status/:id, logs/:id and the SSE stream. Everything is
 * the caller's own programs (an operator's: all). The stream is the hub's Bus-backed SSE over topic
 * `program:events` (ids `<epoch>-<offset>`, Last-Event-ID resume, `reset`), filtered per identity,
 * plus the droppable 3-second ticks. WebSocket: `program:<id>` (its owner or an operator: the
 * program's events and ticks), `program:events` and `program:tick` (operators: every program).
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
const callerOf = (identity: Principal): Caller => ({ id: identity.id, operator: identity.roles.includes('operator') });
const caller = (ctx: RequestContext): Caller => callerOf(ctx.identity!);
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


// ---- the answers, as /openapi.json declares them (the tests' contract check validates them) -----
const int = z.number().int();
const ms = int.describe('milliseconds since the Unix epoch');
const stateEnum = z.enum(PROGRAM_STATES);
const statsSchema = z.object({
  bars: int,
  signals: int,
  entries: int,
  trades: int,
  wins: int,
  losses: int,
  blocked: int,
  realized_pnl: z.number(),
  equity: z.number(),
  pnl: z.number(),
  peak: z.number(),
  max_drawdown: z.number(),
  day_session: int,
  day_pnl: z.number(),
  day_trades: int,
  open_positions: int,
  position: z.enum(['long', 'short', 'flat']),
  last_price: z.number().nullable(),
  last_bar: int,
});
const recordSchema = z.object({
  id: z.string(),
  name: z.string(),
  strategy: z.enum(STRATEGIES),
  symbol: z.enum(SYMBOLS),
  params: z.record(z.string(), z.number()),
  settings: settingsSchema,
  state: stateEnum,
  created_at: ms,
  updated_at: ms,
  reason: z.string().nullable(),
  created_by: z.string().nullable().describe('the identity that created it'),
  from_bar: int.nullable().describe('the last bar closed at the last start (null until started)'),
});
const withStats = recordSchema.extend({ stats: statsSchema });
const R = {
  program: z.object({ program: withStats }),
  moved: z.object({ program: recordSchema }),
  deleted: deletedAnswer,
  status: z.object({ program: withStats.extend({ owner: z.string().nullable().describe('the process driving it, or null') }) }),
  list: z.object({
    programs: z.array(withStats),
    statistics: z.object({
      total: int,
      ...Object.fromEntries(PROGRAM_STATES.map((s) => [s, int])),
      pnl: z.number(),
      realized_pnl: z.number(),
      trades: int,
      wins: int,
    }),
    strategies: z.array(
      z.object({
        id: z.enum(STRATEGIES),
        name: z.string(),
        description: z.string(),
        params: z.record(z.string(), z.unknown()).describe('JSON Schema of the strategy parameters'),
        defaults: z.record(z.string(), z.number()),
      }),
    ),
    symbols: z.array(z.enum(SYMBOLS)),
    moves: z.record(z.enum(['start', 'pause', 'stop']), z.object({ from: z.array(stateEnum), to: stateEnum })),
  }),
  logs: z.object({
    id: z.string(),
    logs: z.array(z.object({ t: ms, level: z.enum(['info', 'warn']), code: z.string(), message: z.string() })),
    signals: z.array(z.object({ t: ms, bar: int, action: z.enum(['long', 'short', 'exit']), price: z.number() })),
    equity: z.array(z.object({ t: ms, equity: z.number() })),
  }),
  bars: z.object({
    id: z.string(),
    symbol: z.enum(SYMBOLS),
    bar_ms: int.describe('length of one bar of the live market (ms)'),
    bars: z.array(z.object({ t: ms.describe('the bar\'s open time'), o: z.number(), h: z.number(), l: z.number(), c: z.number() })).describe('closed bars, oldest first'),
  }),
};

export interface ProgramRoutesOptions {
  service: ProgramService;
  bus: Pick<Bus, 'onMessage' | 'follow'>;
  /** Where a refused follow of the program topics is reported. */
  warn?: (obj: object, msg: string) => void;
}

/** A stream's tick listener: whose ticks it may see, and of which program. */
interface TickSubscriber {
  stream: SseStream;
  caller: Caller;
  program: string | undefined;
}

/** The routes of this file as data (hub.mount): their types are what the pages' client reads (web/common/api.ts). */
export type ProgramRoutes = ReturnType<typeof registerProgramRoutes>['routes'];

/** Registers the live-program routes and stream; answers their table and the bus listener's off switch. */
export function registerProgramRoutes(hub: Hub, opts: ProgramRoutesOptions) {
  const { service } = opts;
  // every program: operators only; one program: its creator and operators
  const operatorOnly = (_topic: string, identity: Principal | undefined): TopicVerdict =>
    !identity ? 'unauthorized' : identity.roles.includes('operator') ? 'ok' : 'forbidden';
  hub.topic({ name: PROGRAM_EVENTS_TOPIC, policy: 'close', authorize: operatorOnly });
  hub.topic({ name: PROGRAM_TICK_TOPIC, policy: 'drop', authorize: operatorOnly });
  hub.topic({
    name: programTopic('*'),
    policy: 'close',
    // who watches the program: its subscribers get join and leave events with the count
    presence: true,
    authorize: async (topic, identity) => {
      const id = topic.slice(programTopic('').length);
      if (!idField.safeParse(id).success) return 'unknown';
      if (!identity) return 'unauthorized';
      const creator = await service.creatorOf(id);
      if (creator === undefined) return 'unknown';
      return mayManage({ created_by: creator }, callerOf(identity)) ? 'ok' : 'forbidden';
    },
  });
  const forms = strategyForms();

  const postCreate = route({
    method: 'POST',
    path: '/create',
    auth: TRADER,
    body: { schema: createBody },
    response: R.program,
    handler: async (ctx) => ({ program: await service.create(ctx.body, caller(ctx)) }),
  });
  const getList = route({
    method: 'GET',
    path: '/list',
    auth: TRADER,
    cacheControl: 'no-store',
    response: R.list,
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
  const moveRoute = <const Move extends 'start' | 'pause' | 'stop'>(move: Move) =>
    route({
      method: 'POST',
      path: `/${move}`,
      auth: TRADER,
      body: { schema: idBody },
      response: R.moved,
      handler: async (ctx) => ({ program: await service.move(ctx.body.id, move, caller(ctx)) }),
    });
  const postStart = moveRoute('start');
  const postPause = moveRoute('pause');
  const postStop = moveRoute('stop');
  const postDelete = route({
    method: 'POST',
    path: '/delete',
    auth: TRADER,
    body: { schema: idBody },
    response: R.deleted,
    handler: (ctx) => service.remove(ctx.body.id, caller(ctx)),
  });
  const getStatus = route({
    method: 'GET',
    path: '/status/:id',
    auth: TRADER,
    params: idParams,
    cacheControl: 'no-store',
    response: R.status,
    handler: async (ctx) => ({ program: await service.get(ctx.params.id, caller(ctx)) }),
  });
  const getLogs = route({
    method: 'GET',
    path: '/logs/:id',
    auth: TRADER,
    params: idParams,
    query: z.object({ limit: z.coerce.number().int().min(1).max(500).default(200) }),
    cacheControl: 'no-store',
    response: R.logs,
    handler: (ctx) => service.logs(ctx.params.id, ctx.query.limit, caller(ctx)),
  });
  const getBars = route({
    method: 'GET',
    path: '/bars/:id',
    auth: TRADER,
    params: idParams,
    query: z.object({ count: z.coerce.number().int().min(1).max(500).default(120) }),
    cacheControl: 'no-store',
    response: R.bars,
    handler: (ctx) => service.bars(ctx.params.id, ctx.query.count, caller(ctx)),
  });
  const routes = hub.mount('/api/program', { postCreate, getList, postStart, postPause, postStop, postDelete, getStatus, getLogs, getBars });

  // ---- live delivery -------------------------------------------------------------------------
  const tickSubscribers = new Set<TickSubscriber>();
  // the program events and ticks of every process, followed on the Bus while the routes are mounted:
  // they are fanned out to the program topics and streams here
  const unfollow = [PROGRAM_EVENTS_TOPIC, PROGRAM_TICK_TOPIC].map((t) => followAlways(opts.bus, t, opts.warn));
  const unlisten = opts.bus.onMessage(({ topic, message }) => {
    if (topic === PROGRAM_EVENTS_TOPIC) {
      const ev = programEvents.decode(message)!;
      const t = programTopic(ev.program);
      if (hub.topics.count(t) > 0) hub.publish(t, ev);
    } else if (topic === PROGRAM_TICK_TOPIC) {
      const tick = tickEvents.decode(message)!;
      for (const p of tick.programs) {
        const t = programTopic(p.program);
        if (hub.topics.count(t) > 0) hub.publish(t, { type: 'tick', t: tick.t, programs: [p] });
      }
      // each stream gets the entries it may see: one program's (looked up), an operator's all, a
      // trader's own (computed once per trader and tick)
      let all: string | undefined;
      let byProgram: Map<string, TickEntry> | undefined;
      const byCreator = new Map<string, string | null>();
      for (const s of tickSubscribers) {
        if (s.program !== undefined) {
          byProgram ??= new Map(tick.programs.map((p) => [p.program, p]));
          const p = byProgram.get(s.program);
          if (p && mayManage(p, s.caller)) s.stream.send({ event: 'tick', data: { type: 'tick', t: tick.t, programs: [p] } }, { droppable: true });
        } else if (s.caller.operator) {
          all ??= JSON.stringify(tick);
          s.stream.send({ event: 'tick', data: all }, { droppable: true });
        } else {
          let data = byCreator.get(s.caller.id);
          if (data === undefined) {
            const mine = tick.programs.filter((p) => p.created_by === s.caller.id);
            data = mine.length > 0 ? JSON.stringify({ type: 'tick', t: tick.t, programs: mine }) : null;
            byCreator.set(s.caller.id, data);
          }
          if (data !== null) s.stream.send({ event: 'tick', data }, { droppable: true });
        }
      }
    }
  });

  hub.sse({
    path: '/api/program/stream',
    topics: [PROGRAM_EVENTS_TOPIC],
    history: HISTORY,
    auth: TRADER,
    query: z.object({ program: idField.optional(), last_event_id: z.string().max(256).optional() }),
    // one program's stream: its creator's or an operator's; another trader's is refused, not an empty stream
    guards: [
      async (ctx) => {
        const id = (ctx.query as { program?: string }).program;
        if (id === undefined) return;
        const creator = await service.creatorOf(id);
        if (creator === undefined) throw notFound('program_not_found', `no program ${id}`, { program: id });
        if (!mayManage({ created_by: creator }, caller(ctx))) throw forbidden(`program ${id} belongs to another trader`, { program: id });
      },
    ],
    // the caller's own programs (every program for an operator), one of them with ?program=
    filter: (msg, ctx) => {
      const ev = programEvents.decode(msg.message)!;
      return (ctx.query.program === undefined || ev.program === ctx.query.program) && mayManage(ev, caller(ctx));
    },
    opened: (ctx, stream) => {
      const sub: TickSubscriber = { stream, caller: caller(ctx), program: ctx.query.program };
      tickSubscribers.add(sub);
      stream.onClose(() => tickSubscribers.delete(sub));
      stream.comment(`program stream; tick every ${TICK_MS} ms${sub.program ? `; program ${sub.program}` : ''}`);
    },
  });

  const off = () => {
    unlisten();
    unfollow.forEach((u) => u());
  };
  return { routes, off };
}
