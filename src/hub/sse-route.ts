import type { z } from 'zod';
import type { BusMessage, StreamPosition } from '../bus.js';
import type { AuthSpec, Guard, RequestContext } from './http.js';
import type { Live } from './live.js';
import type { SseStream } from './sse.js';

/**
 * One Server-Sent Events stream over Bus topics, with ids and `Last-Event-ID` resume from the Bus
 * history. Every event's id is the stream's position on each of its topics (`<epoch>-<offset>`,
 * joined by '.', in the order of `topics`); a client that reconnects with it gets what it missed
 * first. A Last-Event-ID that cannot be honoured (another epoch: the history was lost; ahead of the
 * stream; older than the retained history; not an id of this stream) is answered with a `reset`
 * event `{type: "reset", reason, position}`: the client reloads what it shows, then continues live.
 */
export interface BusSseDef<Q = unknown> {
  path: string;
  /** Exact topic names; each keeps `history` publications in the Bus. */
  topics: string[];
  /** Publications kept per topic for resume; default 1000. */
  history?: number;
  query?: z.ZodType<Q>;
  guards?: Guard[];
  auth?: AuthSpec;
  /** Whether this client sees the message (e.g. one program's events); default all. */
  filter?(msg: BusMessage, ctx: RequestContext<Q, undefined, Record<string, string>>): boolean;
  /** The SSE event name; default the message's `type` when it is a string, else none ("message"). */
  event?(msg: BusMessage): string | undefined;
  /** Events a slow client may skip (it gets the next); default none. */
  droppable?(msg: BusMessage): boolean;
  /** Runs once the stream is open, before any event (e.g. a comment, an extra listener). */
  opened?(ctx: RequestContext<Q, undefined, Record<string, string>>, stream: SseStream): void;
}

export type ResetReason = 'epoch' | 'ahead' | 'gap' | 'malformed';

const defaultEvent = (msg: BusMessage): string | undefined => {
  const t = (msg.message as { type?: unknown } | null)?.type;
  return typeof msg.message === 'object' && typeof t === 'string' ? t : undefined;
};

/** `<epoch>-<offset>` per topic, joined by '.'; undefined when it does not fit `count` topics. */
export function parseStreamId(id: string, count: number): StreamPosition[] | undefined {
  const parts = id.split('.');
  if (parts.length !== count) return undefined;
  const out: StreamPosition[] = [];
  for (const p of parts) {
    const m = /^([\w]{1,64})-(\d{1,15})$/.exec(p);
    if (!m) return undefined;
    out.push({ epoch: m[1]!, offset: Number(m[2]) });
  }
  return out;
}

export const formatStreamId = (positions: StreamPosition[]) => positions.map((p) => `${p.epoch}-${p.offset}`).join('.');

/** The `open` of the hub's SSE route for a BusSseDef. */
export function busStream<Q>(live: Live, def: BusSseDef<Q>) {
  const nameOf = def.event ?? defaultEvent;
  return async (ctx: RequestContext<Q, undefined, Record<string, string>>, stream: SseStream): Promise<void> => {
    const topics = def.topics;
    const positions: StreamPosition[] = topics.map(() => ({ epoch: '', offset: 0 }));
    let held: BusMessage[] | null = [];
    const write = (m: BusMessage) => {
      const i = topics.indexOf(m.topic);
      const cur = positions[i]!;
      if (m.offset !== undefined && m.epoch !== undefined) {
        if (m.epoch === cur.epoch && m.offset <= cur.offset) return; // already sent (history, then live)
        positions[i] = { epoch: m.epoch, offset: m.offset };
      }
      if (def.filter && !def.filter(m, ctx)) return;
      stream.send({ event: nameOf(m), id: formatStreamId(positions), data: m.message }, { droppable: def.droppable?.(m) ?? false });
    };
    const stops = topics.map((t) => live.listen(t, (m) => (held ? held.push(m) : write(m))));
    let release: (() => void) | undefined;
    stream.onClose(() => {
      stops.forEach((s) => s());
      release?.();
    });
    def.opened?.(ctx, stream);
    // the topics are followed on the Bus before their history is read (see Live.subscribeSocket)
    const followed = await live.followAll(topics);
    if (stream.closed) return followed();
    release = followed;

    const q = ctx.query as { last_event_id?: unknown } | undefined;
    const lastId = stream.lastEventId || (typeof q?.last_event_id === 'string' ? q.last_event_id : undefined);
    const since = lastId ? parseStreamId(lastId, topics.length) : undefined;
    const results = await Promise.all(topics.map((t, i) => live.history(t, since?.[i])));
    if (stream.closed) return;
    results.forEach((r, i) => (positions[i] = { ...r.position, offset: since?.[i] && r.recovered ? since[i]!.offset : r.position.offset }));

    let reason: ResetReason | undefined;
    if (lastId && !since) reason = 'malformed';
    else reason = results.find((r) => !r.recovered)?.reason;
    if (reason) {
      results.forEach((r, i) => (positions[i] = r.position));
      const position = Object.fromEntries(topics.map((t, i) => [t, positions[i]]));
      stream.send({ event: 'reset', id: formatStreamId(positions), data: { type: 'reset', reason, position } });
    } else {
      for (const [i, r] of results.entries()) {
        for (const p of r.publications) write({ topic: topics[i]!, message: p.message, offset: p.offset, epoch: r.position.epoch });
        positions[i] = r.position.offset > positions[i]!.offset ? r.position : positions[i]!;
      }
      // no event yet: an id-only block gives the client its position without dispatching an event
      if (!lastId) stream.position(formatStreamId(positions));
    }
    const pending = held;
    held = null;
    for (const m of pending) write(m);
  };
}
